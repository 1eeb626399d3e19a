/*
 * counter.h - the firmware's clock: SysTick on the processor clock, widened
 * to 64 bits by counting its wraps.
 *
 * Under QEMU with `-icount shift=0` every instruction advances virtual time
 * by 1 ns and SysTick by 1/31.25 of a tick, so a difference of readings is
 * an instruction count at a resolution of 31.25 instructions
 * (docs/firmware.md, "Counting"). It is not a cycle count.
 */
#ifndef HELIA_COUNTER_H
#define HELIA_COUNTER_H

#include <stdint.h>

/* Start SysTick from zero: reload 2^24 - 1, processor clock, wrap interrupt. */
void helia_counter_start(void);

/* Ticks since helia_counter_start. */
uint64_t helia_counter_read(void);

/* The SysTick exception handler (in the vector table). */
void helia_counter_wrap_handler(void);

#endif /* HELIA_COUNTER_H */
