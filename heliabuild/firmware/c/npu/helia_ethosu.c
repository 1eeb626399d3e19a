/*
 * helia_ethosu.c - helia_ethosu.h and measure.h on an Ethos-U, with Arm's
 * Ethos-U core driver (its documented API: ethosu_init, ethosu_invoke_v3,
 * ethosu_irq_handler, the weak ethosu_inference_begin/end hooks and the PMU
 * functions of pmu_ethosu.h). Compiled per firmware with the driver's
 * headers and `-DETHOSU55`, `-DETHOSU65` or `-DETHOSU85`.
 *
 * Counting: while a measured invoke runs (helia_measure_begin .. end), the
 * driver's begin hook programs the PMU's event counters, resets them and
 * their overflow flags and enables them; its end hook reads them and the
 * overflow status. That is one reading per command stream, added to the
 * segment the stream runs in (the fences advance the segment). Warmups are
 * not counted. The record of a sample:
 *
 *   npu_sample index events (streams overflow count_0 .. count_{events-1})
 *              for each segment
 *
 * with the events, in order: U55/U65 NPU_ACTIVE, AXI0 read beats, AXI0
 * write beats, AXI1 read beats; U85 NPU_ACTIVE, SRAM read and write beats,
 * external read and write beats. `overflow` is 1 when a counter of some
 * stream of the segment overflowed (its count is then not a count).
 *
 *   npu_error stage status        stage 1: ethosu_init, 2: ethosu_invoke_v3
 */
#include <stddef.h>
#include <stdint.h>

#include "ethosu_driver.h"
#include "helia_ethosu.h"
#include "measure.h"
#include "pmu_ethosu.h"
#include "records.h"

#ifndef HELIA_NPU_BASE
#define HELIA_NPU_BASE 0x58102000u /* Corstone-300's Ethos-U, secure alias */
#endif
#ifndef HELIA_NPU_IRQ
#define HELIA_NPU_IRQ 56u
#endif

#define NVIC_ISER ((volatile uint32_t *)0xE000E100u)

enum { MAX_SEGMENTS = 1024, MAX_REGIONS = 16, STAGE_INIT = 1, STAGE_INVOKE = 2 };

#if defined(ETHOSU85)
static const enum ethosu_pmu_event_type events[] = {
    ETHOSU_PMU_NPU_ACTIVE,
    ETHOSU_PMU_SRAM_RD_DATA_BEAT_RECEIVED,
    ETHOSU_PMU_SRAM_WR_DATA_BEAT_WRITTEN,
    ETHOSU_PMU_EXT_RD_DATA_BEAT_RECEIVED,
    ETHOSU_PMU_EXT_WR_DATA_BEAT_WRITTEN,
};
#elif defined(ETHOSU55) || defined(ETHOSU65)
static const enum ethosu_pmu_event_type events[] = {
    ETHOSU_PMU_NPU_ACTIVE,
    ETHOSU_PMU_AXI0_RD_DATA_BEAT_RECEIVED,
    ETHOSU_PMU_AXI0_WR_DATA_BEAT_WRITTEN,
    ETHOSU_PMU_AXI1_RD_DATA_BEAT_RECEIVED,
};
#else
#error "define ETHOSU55, ETHOSU65 or ETHOSU85"
#endif

#define EVENTS ((uint32_t)(sizeof events / sizeof events[0]))
#define EVENT_MASK ((1u << EVENTS) - 1u)

typedef struct segment_counts {
    uint32_t streams;
    uint32_t overflow;
    uint64_t counts[sizeof events / sizeof events[0]];
} segment_counts;

static struct ethosu_driver npu;
static uint32_t started;
static uint32_t measuring;
static uint32_t segment_count;
static uint32_t current;
static segment_counts segments[MAX_SEGMENTS];

void helia_npu_irq_handler(void)
{
    ethosu_irq_handler(&npu);
}

static helia_status npu_error(uint32_t stage, int status)
{
    helia_record_begin("npu_error");
    helia_record_u32(stage);
    helia_record_i32((int32_t)status);
    helia_record_end();
    return HELIA_STATUS_BAD_PARAMETER;
}

helia_status helia_ethosu_prepare(const helia_ethosu_args *args)
{
    int status;
    if (args == NULL || args->command_stream == NULL || args->regions == NULL || args->region_bytes == NULL) {
        return HELIA_STATUS_NULL_POINTER;
    }
    if (args->region_count > MAX_REGIONS || args->command_stream_bytes == 0u) {
        return HELIA_STATUS_BAD_PARAMETER;
    }
    if (!started) {
        status = ethosu_init(&npu, (void *)(uintptr_t)HELIA_NPU_BASE, NULL, 0u, 1u, 1u);
        if (status != 0) {
            return npu_error(STAGE_INIT, status);
        }
        NVIC_ISER[HELIA_NPU_IRQ / 32u] = 1u << (HELIA_NPU_IRQ % 32u);
        started = 1u;
    }
    return HELIA_STATUS_OK;
}

helia_status helia_ethosu_run(const helia_ethosu_args *args)
{
    uint64_t bases[MAX_REGIONS];
    size_t sizes[MAX_REGIONS];
    uint32_t region;
    int status;
    for (region = 0; region < args->region_count; ++region) {
        bases[region] = (uint64_t)(uintptr_t)args->regions[region];
        sizes[region] = (size_t)args->region_bytes[region];
    }
    status = ethosu_invoke_v3(&npu, args->command_stream, (int)args->command_stream_bytes, bases, sizes,
                              (int)args->region_count, NULL);
    return status == 0 ? HELIA_STATUS_OK : npu_error(STAGE_INVOKE, status);
}

void ethosu_inference_begin(struct ethosu_driver *drv, void *user_arg)
{
    uint32_t event;
    (void)user_arg;
    if (!measuring) {
        return;
    }
    ETHOSU_PMU_Enable(drv);
    for (event = 0; event < EVENTS; ++event) {
        ETHOSU_PMU_Set_EVTYPER(drv, event, events[event]);
    }
    ETHOSU_PMU_EVCNTR_ALL_Reset(drv);
    ETHOSU_PMU_Set_CNTR_OVS(drv, EVENT_MASK);
    ETHOSU_PMU_CNTR_Enable(drv, EVENT_MASK);
}

void ethosu_inference_end(struct ethosu_driver *drv, void *user_arg)
{
    segment_counts *segment = &segments[current];
    uint32_t event;
    (void)user_arg;
    if (!measuring) {
        return;
    }
    ETHOSU_PMU_CNTR_Disable(drv, EVENT_MASK);
    segment->streams += 1u;
    if ((ETHOSU_PMU_Get_CNTR_OVS(drv) & EVENT_MASK) != 0u) {
        segment->overflow = 1u;
    }
    for (event = 0; event < EVENTS; ++event) {
        segment->counts[event] += ETHOSU_PMU_Get_EVCNTR(drv, event);
    }
    ETHOSU_PMU_Disable(drv);
}

void helia_measure_start(void)
{
}

void helia_measure_begin(uint32_t count)
{
    uint32_t segment;
    uint32_t event;
    segment_count = count <= MAX_SEGMENTS ? count : MAX_SEGMENTS;
    for (segment = 0; segment < segment_count; ++segment) {
        segments[segment].streams = 0u;
        segments[segment].overflow = 0u;
        for (event = 0; event < EVENTS; ++event) {
            segments[segment].counts[event] = 0u;
        }
    }
    current = 0u;
    measuring = 1u;
}

void helia_measure_fence(uint32_t fence)
{
    if (fence + 1u < segment_count) {
        current = fence + 1u;
    }
}

void helia_measure_end(void)
{
    measuring = 0u;
}

void helia_measure_record(uint32_t index)
{
    uint32_t segment;
    uint32_t event;
    helia_record_begin("npu_sample");
    helia_record_u32(index);
    helia_record_u32(EVENTS);
    for (segment = 0; segment < segment_count; ++segment) {
        helia_record_u32(segments[segment].streams);
        helia_record_u32(segments[segment].overflow);
        for (event = 0; event < EVENTS; ++event) {
            helia_record_u64(segments[segment].counts[event]);
        }
    }
    helia_record_end();
}
