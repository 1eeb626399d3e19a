/*
 * measure_ticks.c - measure.h with the SysTick counter (counter.h): the
 * counter is read right before and right after each measured model_run and
 * at every fence, so the segments' ticks add up to the invoke's.
 *
 *   sample  index invoke_ticks segment_0_ticks ... segment_{n-1}_ticks
 */
#include "measure.h"

#include "counter.h"
#include "records.h"

enum { MAX_SEGMENTS = 1024 };

static uint64_t marks[MAX_SEGMENTS + 1];
static uint32_t segment_count;

void helia_measure_start(void)
{
    helia_counter_start();
}

void helia_measure_begin(uint32_t segments)
{
    segment_count = segments <= MAX_SEGMENTS ? segments : MAX_SEGMENTS;
    marks[0] = helia_counter_read();
}

void helia_measure_fence(uint32_t fence)
{
    if (fence + 1u < MAX_SEGMENTS) {
        marks[fence + 1u] = helia_counter_read();
    }
}

void helia_measure_end(void)
{
    marks[segment_count] = helia_counter_read();
}

void helia_measure_record(uint32_t index)
{
    uint32_t segment;
    helia_record_begin("sample");
    helia_record_u32(index);
    helia_record_u64(marks[segment_count] - marks[0]);
    for (segment = 0; segment < segment_count; ++segment) {
        helia_record_u64(marks[segment + 1u] - marks[segment]);
    }
    helia_record_end();
}
