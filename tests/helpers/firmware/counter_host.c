/*
 * counter_host.c - heliabuild/firmware/c/counter.c compiled for the host against a SIMULATED SysTick (a test
 * double of the Armv8-M SysTick and SCB ICSR, written from the architecture's description: CVR counts down
 * from RVR = 2^24 - 1 and reloads when it passes 0, which sets ICSR.PENDSTSET until the exception is taken).
 *
 * Simulated time is a tick count `now`; every register access advances it by `step` ticks first. At t = 0
 * (the start wrote CVR, which clears it) CVR reads 0; at t >= 1 it reads RELOAD - ((t - 1) mod 2^24), so it
 * reaches 0 at every multiple of 2^24, which pends the exception, and reloads at the next tick. PENDSTSET is
 * set while fewer of those were handled than happened: the test calls the handler itself, so no exception is
 * taken during a read (interrupts masked). A reading at t is t - 1 ticks (0 at t = 0): the counter's
 * formula, `wraps` * 2^24 + RELOAD - CVR, counts from the first reload.
 */
#include <stdint.h>

#define HELIA_COUNTER_SIMULATED_REGISTERS 1

static uint64_t now;
static uint32_t step;
static uint64_t handled;
static uint64_t at_cvr_read;
static volatile uint32_t simulated;

static volatile uint32_t *simulated_register(uint32_t which)
{
    now += step;
    if (which == 0u) {
        at_cvr_read = now;
        simulated = now == 0u ? 0u : 0x00FFFFFFu - (uint32_t)((now - 1u) & 0x00FFFFFFu);
    } else if (which == 1u) {
        simulated = (now >> 24) > handled ? 1u << 26 : 0u;
    } else {
        simulated = 0u;
    }
    return &simulated;
}

#define SYST_CSR (*simulated_register(2u))
#define SYST_RVR (*simulated_register(2u))
#define SYST_CVR (*simulated_register(0u))
#define SCB_ICSR (*simulated_register(1u))

#include "counter.c"

/* Start the counter, take the handler for every wrap before `start` (one at `start` is still pending), then read at `start` advancing
 * `ticks_per_access` ticks per register access; the reading, and in `*expected` what it must be: the count at
 * the CVR access it used. */
uint64_t simulated_read(uint64_t start, uint32_t ticks_per_access, uint64_t *expected)
{
    step = 0u;
    helia_counter_start();
    for (handled = 0u; start > 0u && handled < ((start - 1u) >> 24); handled++) {
        helia_counter_wrap_handler();
    }
    now = start;
    step = ticks_per_access;
    uint64_t reading = helia_counter_read();
    *expected = at_cvr_read == 0u ? 0u : at_cvr_read - 1u;
    return reading;
}
