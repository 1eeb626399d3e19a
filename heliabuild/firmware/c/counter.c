/*
 * counter.c - see counter.h.
 */
#include "counter.h"

/* A host test supplies simulated registers (tests/helpers/firmware/counter_host.c); the firmware reads the
 * SysTick and SCB registers of the Armv8-M system control space. */
#ifndef HELIA_COUNTER_SIMULATED_REGISTERS
#define SYST_CSR (*(volatile uint32_t *)0xE000E010u)
#define SYST_RVR (*(volatile uint32_t *)0xE000E014u)
#define SYST_CVR (*(volatile uint32_t *)0xE000E018u)
#define SCB_ICSR (*(volatile uint32_t *)0xE000ED04u)
#endif

enum {
    SYST_ENABLE = 1u << 0,
    SYST_TICKINT = 1u << 1,
    SYST_CLKSOURCE_PROCESSOR = 1u << 2,
    SYST_RELOAD = 0x00FFFFFFu,
    ICSR_PENDSTSET = 1u << 26
};

static volatile uint32_t wraps;

void helia_counter_start(void)
{
    SYST_CSR = 0u;
    wraps = 0u;
    SYST_RVR = SYST_RELOAD;
    SYST_CVR = 0u;
    SYST_CSR = SYST_ENABLE | SYST_TICKINT | SYST_CLKSOURCE_PROCESSOR;
}

void helia_counter_wrap_handler(void)
{
    wraps = wraps + 1u;
}

uint64_t helia_counter_read(void)
{
    uint32_t before;
    uint32_t pending_before;
    uint32_t value;
    uint32_t pending_after;
    /* SysTick pends its exception as the count reaches 0 and reloads at the next tick. A reload between
     * reading `wraps` and CVR whose exception is still pending (interrupts masked, or a handler of higher
     * priority running) is not in `wraps` yet: the pending flag, unchanged around the CVR read, together
     * with a value other than 0 (the reload came before the read) says that the value comes after such a
     * reload. A change of `wraps` or of the flag means the read overlapped the wrap, and is taken again. */
    do {
        before = wraps;
        pending_before = SCB_ICSR & ICSR_PENDSTSET;
        value = SYST_CVR;
        pending_after = SCB_ICSR & ICSR_PENDSTSET;
    } while (before != wraps || pending_before != pending_after);
    if (pending_after != 0u && value != 0u) {
        before = before + 1u;
    } else if (pending_after == 0u && before == 0u && value == 0u) {
        /* CVR reads 0 right after the start, before the first reload. */
        return 0u;
    }
    return (uint64_t)before * (SYST_RELOAD + 1u) + (uint64_t)(SYST_RELOAD - value);
}
