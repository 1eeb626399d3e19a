/*
 * startup.c - the vector table and reset of QEMU's mps3-an547 (Cortex-M55):
 * helia_reset_init (reset.c), main(), then an exit through semihosting with
 * its status. Every fault reports one `fault` record and exits with
 * HELIA_EXIT_FAULT; SysTick counts the counter's wraps (counter.c).
 */
#include <stdint.h>

#include "console.h"
#include "counter.h"
#include "reset.h"

extern uint32_t __stack_top__;

int main(void);

void Reset_Handler(void) __attribute__((noreturn));

typedef void (*vector)(void);

__attribute__((section(".vectors"), used)) static const vector vector_table[16] = {
    (vector)(uintptr_t)&__stack_top__,
    Reset_Handler,
    helia_fault_entry, /* NMI */
    helia_fault_entry, /* HardFault */
    helia_fault_entry, /* MemManage */
    helia_fault_entry, /* BusFault */
    helia_fault_entry, /* UsageFault */
    helia_fault_entry, /* SecureFault */
    0,
    0,
    0,
    helia_fault_entry, /* SVCall */
    helia_fault_entry, /* DebugMonitor */
    0,
    helia_fault_entry, /* PendSV */
    helia_counter_wrap_handler,
};

void Reset_Handler(void)
{
    helia_reset_init(vector_table);
    helia_console_exit((uint32_t)main());
}
