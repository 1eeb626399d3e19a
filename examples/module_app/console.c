/*
 * console.c - see console.h. A semihosting call is `bkpt 0xab` with the
 * operation in r0 and its argument block in r1.
 */
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

void console_write(const char *text)
{
    (void)semihost_call(SYS_WRITE0, text);
}

void console_write_u64(uint64_t value)
{
    char digits[21];
    uint32_t at = sizeof digits - 1u;
    digits[at] = '\0';
    do {
        digits[--at] = (char)('0' + (int)(value % 10u));
        value /= 10u;
    } while (value != 0u);
    console_write(&digits[at]);
}

void console_write_hex(const uint8_t *bytes, uint32_t count)
{
    static const char hex[] = "0123456789abcdef";
    char chunk[65];
    uint32_t used = 0u;
    uint32_t i;
    for (i = 0u; i < count; ++i) {
        chunk[used++] = hex[bytes[i] >> 4];
        chunk[used++] = hex[bytes[i] & 0xFu];
        if (used == sizeof chunk - 1u) {
            chunk[used] = '\0';
            console_write(chunk);
            used = 0u;
        }
    }
    chunk[used] = '\0';
    console_write(chunk);
}

void console_exit(uint32_t code)
{
    const uint32_t block[2] = {ADP_STOPPED_APPLICATION_EXIT, code};
    for (;;) {
        (void)semihost_call(SYS_EXIT_EXTENDED, block);
    }
}
