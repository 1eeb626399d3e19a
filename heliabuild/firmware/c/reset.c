/*
 * reset.c - see reset.h.
 */
#include "reset.h"

#include <stdint.h>

#include "console.h"
#include "firmware.h"
#include "records.h"

extern uint32_t __data_load__;
extern uint32_t __data_start__;
extern uint32_t __data_end__;
extern uint32_t __bss_start__;
extern uint32_t __bss_end__;

#define SCB_VTOR (*(volatile uint32_t *)0xE000ED08u)
#define SCB_CCR (*(volatile uint32_t *)0xE000ED14u)
#define SCB_SHCSR (*(volatile uint32_t *)0xE000ED24u)
#define SCB_CFSR (*(volatile uint32_t *)0xE000ED28u)
#define SCB_HFSR (*(volatile uint32_t *)0xE000ED2Cu)
#define SCB_CPACR (*(volatile uint32_t *)0xE000ED88u)

void helia_fault_report(const uint32_t *frame, uint32_t exception) __attribute__((noreturn, used));

void helia_reset_init(const void *vectors)
{
    uint32_t *source;
    uint32_t *destination;

    SCB_CPACR |= 0xFu << 20;
    __asm__ volatile("dsb\n\tisb" ::: "memory");
    SCB_VTOR = (uint32_t)(uintptr_t)vectors;

    source = &__data_load__;
    for (destination = &__data_start__; destination < &__data_end__;) {
        *destination++ = *source++;
    }
    for (destination = &__bss_start__; destination < &__bss_end__;) {
        *destination++ = 0u;
    }
    SCB_SHCSR |= (1u << 16) | (1u << 17) | (1u << 18);
    SCB_CCR |= 1u << 4;
    __asm__ volatile("dsb\n\tisb" ::: "memory");
}

void helia_fault_entry(void)
{
    __asm__ volatile(
        "tst lr, #4\n\t"
        "ite eq\n\t"
        "mrseq r0, msp\n\t"
        "mrsne r0, psp\n\t"
        "mrs r1, ipsr\n\t"
        "b helia_fault_report\n\t");
}

void helia_fault_report(const uint32_t *frame, uint32_t exception)
{
    helia_record_begin("fault");
    helia_record_u32(exception & 0x1FFu);
    helia_record_u32(frame[6]);
    helia_record_u32(SCB_CFSR);
    helia_record_u32(SCB_HFSR);
    helia_record_end();
    helia_console_exit(HELIA_EXIT_FAULT);
}
