/*
 * semihosting.c - see semihosting.h. The call is `bkpt 0xab` with the
 * operation in r0 and its argument block in r1 (Arm's semihosting
 * specification for M-profile).
 */
#include "semihosting.h"

#include "console.h"

enum {
    SYS_WRITE0 = 0x04,
    SYS_EXIT_EXTENDED = 0x20,
    ADP_STOPPED_APPLICATION_EXIT = 0x20026
};

static uint32_t semihost_call(uint32_t operation, const void *argument)
{
    register uint32_t r0 __asm__("r0") = operation;
    register const void *r1 __asm__("r1") = argument;
    __asm__ volatile("bkpt 0xab" : "+r"(r0) : "r"(r1) : "memory");
    return r0;
}

void helia_semihost_write(const char *text)
{
    (void)semihost_call(SYS_WRITE0, text);
}

void helia_semihost_exit(uint32_t code)
{
    const uint32_t block[2] = {ADP_STOPPED_APPLICATION_EXIT, code};
    for (;;) {
        (void)semihost_call(SYS_EXIT_EXTENDED, block);
    }
}

void helia_console_write(const char *text)
{
    helia_semihost_write(text);
}

void helia_console_exit(uint32_t code)
{
    helia_semihost_exit(code);
}
