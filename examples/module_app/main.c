/*
 * main.c - a firmware that uses the heliabuild module `kws` through its
 * public header only: it owns the arena, fills the inputs, calls init once
 * and run RUNS times, and prints each run's outputs (hex) and the
 * instructions it took.
 *
 * The instruction count is SysTick on the processor clock: under QEMU's
 * `-icount shift=0` one tick is 31.25 instructions (heliabuild's
 * docs/firmware.md, "Counting"), so the count is ticks x 125 / 4, to one
 * tick (31.25 instructions).
 */
#include <stdint.h>

#include "console.h"
#include "kws_model.h"

#define RUNS 3u

/* The module's activations: ours to place (app.ld puts .bss.app_arena in ISRAM). */
uint8_t kws_model_arena[KWS_MODEL_ARENA_BYTES]
    __attribute__((section(".bss.app_arena"), aligned(KWS_MODEL_ARENA_ALIGNMENT)));

#define SYST_CSR (*(volatile uint32_t *)0xE000E010u)
#define SYST_RVR (*(volatile uint32_t *)0xE000E014u)
#define SYST_CVR (*(volatile uint32_t *)0xE000E018u)
#define SYST_RELOAD 0x00FFFFFFu

static volatile uint32_t systick_wraps;

void systick_handler(void)
{
    ++systick_wraps;
}

static uint64_t ticks(void)
{
    uint32_t wraps;
    uint32_t value;
    do {
        wraps = systick_wraps;
        value = SYST_CVR;
    } while (wraps != systick_wraps);
    return (uint64_t)wraps * (SYST_RELOAD + 1u) + (SYST_RELOAD - value);
}

/* The same bytes the test gives LiteRT: byte i of input k is i * 7 + 3 + k * 13, modulo 256. */
static void fill_inputs(void)
{
    uint32_t k;
    uint32_t i;
    for (k = 0u; k < KWS_MODEL_INPUT_COUNT; ++k) {
        for (i = 0u; i < kws_model_inputs[k].bytes; ++i) {
            kws_model_inputs[k].data[i] = (uint8_t)(i * 7u + 3u + k * 13u);
        }
    }
}

int main(void)
{
    helia_model_context context = {NULL, NULL, 0u, 0, HELIA_STATUS_OK};
    uint32_t run;
    uint32_t k;

    console_write(KWS_MODEL_VERSION "\n");
    if (kws_model_init(&context) != HELIA_MODEL_OK) {
        console_write("init refused\n");
        return 3;
    }
    SYST_RVR = SYST_RELOAD;
    SYST_CVR = 0u;
    SYST_CSR = 7u; /* enable, interrupt on wrap, processor clock */
    for (run = 0u; run < RUNS; ++run) {
        uint64_t start;
        uint64_t elapsed;
        fill_inputs(); /* the arena is scratch too: inputs are written before every run */
        start = ticks();
        if (kws_model_run(&context) != HELIA_MODEL_OK) {
            console_write("run failed\n");
            return 4;
        }
        elapsed = ticks() - start;
        for (k = 0u; k < KWS_MODEL_OUTPUT_COUNT; ++k) {
            console_write("run ");
            console_write_u64(run);
            console_write(" output ");
            console_write_u64(k);
            console_write(": ");
            console_write_hex(kws_model_outputs[k].data, kws_model_outputs[k].bytes);
            console_write("\n");
        }
        console_write("run ");
        console_write_u64(run);
        console_write(" instructions: ");
        console_write_u64(elapsed * 125u / 4u);
        console_write("\n");
    }
    return 0;
}
