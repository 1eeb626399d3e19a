/*
 * startup.c - the vector table and reset of the Corstone-300 FVPs
 * (Cortex-M55 and an Ethos-U55 or U65, secure state): helia_reset_init
 * (reset.c), main(), then helia_console_exit with its status (uart.c).
 * Every fault and every interrupt but the NPU's reports one `fault` record
 * and exits with HELIA_EXIT_FAULT; the NPU's interrupt (IRQ 56) goes to the
 * Ethos-U driver's handler (npu/helia_ethosu.c).
 */
#include <stdint.h>

#include "console.h"
#include "reset.h"

extern uint32_t __stack_top__;

int main(void);
void helia_npu_irq_handler(void);

void Reset_Handler(void) __attribute__((noreturn));

typedef void (*vector)(void);

enum { NPU_IRQ = 56, SYSTEM_VECTORS = 16, VECTORS = SYSTEM_VECTORS + NPU_IRQ + 1 };

#define F helia_fault_entry
#define F8 F, F, F, F, F, F, F, F

__attribute__((section(".vectors"), used)) static const vector vector_table[VECTORS] = {
    (vector)(uintptr_t)&__stack_top__,
    Reset_Handler,
    F, /* NMI */
    F, /* HardFault */
    F, /* MemManage */
    F, /* BusFault */
    F, /* UsageFault */
    F, /* SecureFault */
    0,
    0,
    0,
    F, /* SVCall */
    F, /* DebugMonitor */
    0,
    F,         /* PendSV */
    F,         /* SysTick */
    F8, F8, F8, F8, F8, F8, F8, /* IRQ 0..55 */
    helia_npu_irq_handler,      /* IRQ 56: the Ethos-U */
};

void Reset_Handler(void)
{
    helia_reset_init(vector_table);
    helia_console_exit((uint32_t)main());
}
