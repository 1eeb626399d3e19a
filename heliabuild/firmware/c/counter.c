/*
 * counter.c - see counter.h.
 */
#include "counter.h"

#define SYST_CSR (*(volatile uint32_t *)0xE000E010u)
#define SYST_RVR (*(volatile uint32_t *)0xE000E014u)
#define SYST_CVR (*(volatile uint32_t *)0xE000E018u)

enum {
    SYST_ENABLE = 1u << 0,
    SYST_TICKINT = 1u << 1,
    SYST_CLKSOURCE_PROCESSOR = 1u << 2,
    SYST_RELOAD = 0x00FFFFFFu
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
    uint32_t value;
    do {
        before = wraps;
        value = SYST_CVR;
    } while (before != wraps);
    /* The count runs down from the reload value; CVR reads 0 right after the
     * start, before the first reload. */
    if (before == 0u && value == 0u) {
        return 0u;
    }
    return (uint64_t)before * (SYST_RELOAD + 1u) + (uint64_t)(SYST_RELOAD - value);
}
