/*
 * records.c - see records.h.
 */
#include "records.h"

#include "console.h"

enum { LINE_CAPACITY = 256 };

static char line[LINE_CAPACITY + 1];
static size_t line_length;
static uint32_t crc;
static uint32_t records_written;

static const char hex_digits[] = "0123456789abcdef";

static uint32_t crc32_update(uint32_t state, uint8_t byte)
{
    int bit;
    state ^= byte;
    for (bit = 0; bit < 8; ++bit) {
        state = (state >> 1) ^ (0xEDB88320u & (0u - (state & 1u)));
    }
    return state;
}

static void flush(void)
{
    line[line_length] = '\0';
    helia_console_write(line);
    line_length = 0;
}

static void put_char(char character)
{
    if (line_length == LINE_CAPACITY) {
        flush();
    }
    line[line_length++] = character;
    crc = crc32_update(crc, (uint8_t)character);
}

static void put_text(const char *text)
{
    while (*text != '\0') {
        put_char(*text++);
    }
}

static void put_unsigned(uint64_t value)
{
    char digits[20];
    int count = 0;
    do {
        digits[count++] = (char)('0' + (int)(value % 10u));
        value /= 10u;
    } while (value != 0u);
    while (count > 0) {
        put_char(digits[--count]);
    }
}

void helia_record_begin(const char *kind)
{
    crc = 0xFFFFFFFFu;
    put_text("@hb1 ");
    put_unsigned(records_written);
    put_char(' ');
    put_text(kind);
}

void helia_record_u32(uint32_t value)
{
    put_char(' ');
    put_unsigned(value);
}

void helia_record_u64(uint64_t value)
{
    put_char(' ');
    put_unsigned(value);
}

void helia_record_i32(int32_t value)
{
    put_char(' ');
    if (value < 0) {
        put_char('-');
        put_unsigned((uint64_t)(-(int64_t)value));
    } else {
        put_unsigned((uint64_t)value);
    }
}

void helia_record_text(const char *word)
{
    put_char(' ');
    put_text(word);
}

void helia_record_bytes(const void *data, size_t length)
{
    const uint8_t *bytes = (const uint8_t *)data;
    size_t index;
    put_char(' ');
    put_char('x');
    for (index = 0; index < length; ++index) {
        put_char(hex_digits[bytes[index] >> 4]);
        put_char(hex_digits[bytes[index] & 0x0Fu]);
    }
}

void helia_record_end(void)
{
    uint32_t checksum;
    int shift;
    put_char(' ');
    checksum = crc ^ 0xFFFFFFFFu;
    put_char('*');
    for (shift = 28; shift >= 0; shift -= 4) {
        put_char(hex_digits[(checksum >> (unsigned)shift) & 0x0Fu]);
    }
    put_char('\n');
    flush();
    ++records_written;
}

uint32_t helia_record_count(void)
{
    return records_written;
}

uint32_t helia_crc32(const void *data, size_t length)
{
    const uint8_t *bytes = (const uint8_t *)data;
    uint32_t state = 0xFFFFFFFFu;
    size_t index;
    for (index = 0; index < length; ++index) {
        state = crc32_update(state, bytes[index]);
    }
    return state ^ 0xFFFFFFFFu;
}
