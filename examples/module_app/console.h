/*
 * console.h - text output and exit through Arm semihosting (QEMU prints it on
 * its standard output and exits with the status). Adapted from heliabuild's
 * firmware/c/semihosting.c, as a user would copy it.
 */
#ifndef CONSOLE_H
#define CONSOLE_H

#include <stdint.h>

void console_write(const char *text);
void console_write_u64(uint64_t value);
void console_write_hex(const uint8_t *bytes, uint32_t count);
void console_exit(uint32_t code) __attribute__((noreturn));

#endif /* CONSOLE_H */
