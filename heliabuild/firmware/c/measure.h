/*
 * measure.h - what a measured invoke counts, implemented per target: the
 * lifecycle (lifecycle.c) calls these around each measured model_run and at
 * every fence, and the implementation writes the sample's record
 * (docs/firmware.md, "Record stream").
 *
 *   measure_ticks.c (QEMU): SysTick readings; `sample index invoke seg...`
 *   npu/helia_ethosu.c (Corstone FVPs): the Ethos-U PMU, read in the
 *     driver's ethosu_inference_begin/end hooks, one reading per command
 *     stream, summed per segment; `npu_sample index ...`
 *
 * Nothing is counted outside helia_measure_begin .. helia_measure_end, so
 * warmups are never measured.
 */
#ifndef HELIA_MEASURE_H
#define HELIA_MEASURE_H

#include <stdint.h>

/* Once, after model_init and before any invoke. */
void helia_measure_start(void);

/* Right before a measured model_run of a model of `segments` segments. */
void helia_measure_begin(uint32_t segments);

/* After fence `fence` (0-based) has copied: segment fence + 1 begins. */
void helia_measure_fence(uint32_t fence);

/* Right after a measured model_run. */
void helia_measure_end(void);

/* Write the record of measured sample `index` (outside the measured window). */
void helia_measure_record(uint32_t index);

#endif /* HELIA_MEASURE_H */
