/*
 * semihosting.h - the Arm semihosting calls the firmware uses: text to the
 * host console and an exit status the host sees (SYS_EXIT_EXTENDED).
 *
 * C99, no heap. QEMU answers these when started with
 * `-semihosting-config enable=on,target=native`.
 */
#ifndef HELIA_SEMIHOSTING_H
#define HELIA_SEMIHOSTING_H

#include <stdint.h>

/* Write the NUL-terminated `text` to the host console (SYS_WRITE0). */
void helia_semihost_write(const char *text);

/* Stop the program with exit status `code` (SYS_EXIT_EXTENDED,
 * ADP_Stopped_ApplicationExit); QEMU exits with the same status. */
void helia_semihost_exit(uint32_t code) __attribute__((noreturn));

#endif /* HELIA_SEMIHOSTING_H */
