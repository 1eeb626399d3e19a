/*
 * ethosu_pmu.c - TEST DOUBLE (see ../README.md): each enabled event counter
 * reads back a count fixed by the event it was programmed with
 * (ETHOSU_PMU_Set_EVTYPER), one decimal digit place per event, so a test
 * sees which event became which figure: NPU_ACTIVE 1000 (the cycles); the
 * beat events AXI0_RD / SRAM_RD 200, AXI0_WR / SRAM_WR 30, AXI1_RD / EXT_RD
 * 4, EXT_WR 5; any other event 0. No counter overflows.
 */
#include "pmu_ethosu.h"

static uint32_t event_count(uint32_t type)
{
    switch (type) {
    case ETHOSU_PMU_NPU_ACTIVE:
        return 1000u;
    case ETHOSU_PMU_AXI0_RD_DATA_BEAT_RECEIVED:
    case ETHOSU_PMU_SRAM_RD_DATA_BEAT_RECEIVED:
        return 200u;
    case ETHOSU_PMU_AXI0_WR_DATA_BEAT_WRITTEN:
    case ETHOSU_PMU_SRAM_WR_DATA_BEAT_WRITTEN:
        return 30u;
    case ETHOSU_PMU_AXI1_RD_DATA_BEAT_RECEIVED:
    case ETHOSU_PMU_EXT_RD_DATA_BEAT_RECEIVED:
        return 4u;
    case ETHOSU_PMU_EXT_WR_DATA_BEAT_WRITTEN:
        return 5u;
    default:
        return 0u;
    }
}

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
    if (!drv->pmu_enabled || num >= 8u) {
        return 0u;
    }
    return event_count(drv->event_types[num]);
}

uint32_t ETHOSU_PMU_Get_CNTR_OVS(struct ethosu_driver *drv)
{
    return drv->overflow;
}

void ETHOSU_PMU_Set_CNTR_OVS(struct ethosu_driver *drv, uint32_t mask)
{
    drv->overflow &= ~mask;
}
