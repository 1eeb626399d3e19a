/*
 * console.h - where a firmware's text goes and how it stops: the one output
 * interface records.c and the startup code use, implemented per target
 * (semihosting.c on QEMU; corstone300/uart.c, UART0, on the Corstone FVPs).
 */
#ifndef HELIA_CONSOLE_H
#define HELIA_CONSOLE_H

#include <stdint.h>

/* Write the NUL-terminated `text` to the host's console. */
void helia_console_write(const char *text);

/* Stop the program with exit status `code`, as the target reports it. */
void helia_console_exit(uint32_t code) __attribute__((noreturn));

#endif /* HELIA_CONSOLE_H */
