/* A test firmware: times spin loops of known instruction counts, writes one record per loop and a bytes
 * record, and exits with status 7. The loop body is `nop` plus the low-overhead loop's `le`: 2 instructions
 * per iteration. */
#include <stdint.h>

#include "counter.h"
#include "records.h"

__attribute__((noinline)) static void spin(uint32_t iterations)
{
    uint32_t index;
    for (index = 0; index < iterations; ++index) {
        __asm__ volatile("nop");
    }
}

int main(void)
{
    static const uint32_t counts[] = {0u, 100u, 1000u, 10000u, 100000u, 1000000u};
    static const uint8_t bytes[] = {0x00u, 0x01u, 0xabu, 0xffu, 0x10u};
    uint32_t index;
    helia_counter_start();
    for (index = 0; index < sizeof counts / sizeof counts[0]; ++index) {
        uint64_t before = helia_counter_read();
        uint64_t after;
        spin(counts[index]);
        after = helia_counter_read();
        helia_record_begin("spin");
        helia_record_u32(counts[index]);
        helia_record_u64(after - before);
        helia_record_end();
    }
    helia_record_begin("bytes");
    helia_record_bytes(bytes, sizeof bytes);
    helia_record_i32(-7);
    helia_record_end();
    return 7;
}
