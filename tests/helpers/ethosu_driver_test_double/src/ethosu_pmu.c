/*
 * ethosu_pmu.c - TEST DOUBLE (see ../README.md): each enabled event counter
 * reads back 1000 times its counter number plus one; no counter overflows.
 */
#include "pmu_ethosu.h"

void ETHOSU_PMU_Enable(struct ethosu_driver *drv)
{
    drv->pmu_enabled = 1u;
}

void ETHOSU_PMU_Disable(struct ethosu_driver *drv)
{
    drv->pmu_enabled = 0u;
}

void ETHOSU_PMU_Set_EVTYPER(struct ethosu_driver *drv, uint32_t num, enum ethosu_pmu_event_type type)
{
    if (num < 8u) {
        drv->event_types[num] = (uint32_t)type;
    }
}

void ETHOSU_PMU_EVCNTR_ALL_Reset(struct ethosu_driver *drv)
{
    (void)drv;
}

void ETHOSU_PMU_CNTR_Enable(struct ethosu_driver *drv, uint32_t mask)
{
    drv->counters_enabled |= mask;
}

void ETHOSU_PMU_CNTR_Disable(struct ethosu_driver *drv, uint32_t mask)
{
    drv->counters_enabled &= ~mask;
}

uint32_t ETHOSU_PMU_Get_EVCNTR(struct ethosu_driver *drv, uint32_t num)
{
    return drv->pmu_enabled ? 1000u * (num + 1u) : 0u;
}

uint32_t ETHOSU_PMU_Get_CNTR_OVS(struct ethosu_driver *drv)
{
    return drv->overflow;
}

void ETHOSU_PMU_Set_CNTR_OVS(struct ethosu_driver *drv, uint32_t mask)
{
    drv->overflow &= ~mask;
}
