/*
 * reset.h - what every target's reset does before main, and its fault
 * report (reset.c); a target's startup.c holds its vector table.
 */
#ifndef HELIA_RESET_H
#define HELIA_RESET_H

/* Enable the FPU and MVE (CPACR CP10/CP11) before any other code can use
 * them, point VTOR at `vectors`, copy .data, zero .bss, enable the
 * MemManage, BusFault and UsageFault exceptions and divide-by-zero
 * trapping. */
void helia_reset_init(const void *vectors);

/* The handler of every fault vector: one `fault` record (exception number,
 * stacked PC, CFSR, HFSR), then helia_console_exit(HELIA_EXIT_FAULT). */
void helia_fault_entry(void) __attribute__((naked));

#endif /* HELIA_RESET_H */
