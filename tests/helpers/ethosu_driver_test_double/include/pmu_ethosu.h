/*
 * pmu_ethosu.h - TEST DOUBLE of the Ethos-U core driver's PMU header: the
 * event names and PMU functions heliabuild's firmware uses (see
 * ../README.md). The event values are symbolic, as the driver documents its
 * own to be.
 */
#ifndef PMU_ETHOSU_H
#define PMU_ETHOSU_H

#include <stdint.h>

#include "ethosu_driver.h"

enum ethosu_pmu_event_type {
    ETHOSU_PMU_NO_EVENT = 0,
    ETHOSU_PMU_NPU_ACTIVE,
    ETHOSU_PMU_AXI0_RD_DATA_BEAT_RECEIVED,
    ETHOSU_PMU_AXI0_WR_DATA_BEAT_WRITTEN,
    ETHOSU_PMU_AXI1_RD_DATA_BEAT_RECEIVED,
    ETHOSU_PMU_SRAM_RD_DATA_BEAT_RECEIVED,
    ETHOSU_PMU_SRAM_WR_DATA_BEAT_WRITTEN,
    ETHOSU_PMU_EXT_RD_DATA_BEAT_RECEIVED,
    ETHOSU_PMU_EXT_WR_DATA_BEAT_WRITTEN
};

void ETHOSU_PMU_Enable(struct ethosu_driver *drv);
void ETHOSU_PMU_Disable(struct ethosu_driver *drv);
void ETHOSU_PMU_Set_EVTYPER(struct ethosu_driver *drv, uint32_t num, enum ethosu_pmu_event_type type);
void ETHOSU_PMU_EVCNTR_ALL_Reset(struct ethosu_driver *drv);
void ETHOSU_PMU_CNTR_Enable(struct ethosu_driver *drv, uint32_t mask);
void ETHOSU_PMU_CNTR_Disable(struct ethosu_driver *drv, uint32_t mask);
uint32_t ETHOSU_PMU_Get_EVCNTR(struct ethosu_driver *drv, uint32_t num);
uint32_t ETHOSU_PMU_Get_CNTR_OVS(struct ethosu_driver *drv);
void ETHOSU_PMU_Set_CNTR_OVS(struct ethosu_driver *drv, uint32_t mask);

#endif /* PMU_ETHOSU_H */
