/*
 * startup.c - the vector table and reset of QEMU's mps3-an547 (Cortex-M55),
 * adapted from heliabuild's firmware/c/mps3_an547/startup.c and reset.c:
 * enable the FPU and MVE, copy .data, zero .bss, run main and exit through
 * semihosting with its status. SysTick counts its wraps for the instruction
 * count (main.c).
 */
#include <stdint.h>

#include "console.h"

extern uint32_t __stack_top__;
extern uint32_t __data_load__;
extern uint32_t __data_start__;
extern uint32_t __data_end__;
extern uint32_t __bss_start__;
extern uint32_t __bss_end__;

int main(void);
void systick_handler(void);

#define SCB_VTOR (*(volatile uint32_t *)0xE000ED08u)
#define SCB_CPACR (*(volatile uint32_t *)0xE000ED88u)

void Reset_Handler(void) __attribute__((noreturn));
static void fault_handler(void);

typedef void (*vector)(void);

__attribute__((section(".vectors"), used)) static const vector vector_table[16] = {
    (vector)(uintptr_t)&__stack_top__,
    Reset_Handler,
    fault_handler, /* NMI */
    fault_handler, /* HardFault */
    fault_handler, /* MemManage */
    fault_handler, /* BusFault */
    fault_handler, /* UsageFault */
    fault_handler, /* SecureFault */
    0,
    0,
    0,
    fault_handler, /* SVCall */
    fault_handler, /* DebugMonitor */
    0,
    fault_handler, /* PendSV */
    systick_handler,
};

static void fault_handler(void)
{
    console_write("fault\n");
    console_exit(5u);
}

void Reset_Handler(void)
{
    uint32_t *source = &__data_load__;
    uint32_t *destination;

    SCB_CPACR |= 0xFu << 20;
    __asm__ volatile("dsb\n\tisb" ::: "memory");
    SCB_VTOR = (uint32_t)(uintptr_t)vector_table;
    for (destination = &__data_start__; destination < &__data_end__;) {
        *destination++ = *source++;
    }
    for (destination = &__bss_start__; destination < &__bss_end__;) {
        *destination++ = 0u;
    }
    console_exit((uint32_t)main());
}
