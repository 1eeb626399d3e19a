/*
 * records.h - the firmware's result records: framed, numbered, checksummed
 * lines on the semihosting console (docs/firmware.md, "Record stream").
 *
 *   @hb1 <seq> <kind> <field> <field> ... *<crc32>
 *
 * `seq` counts records from 0; each field is a decimal integer or a run of
 * lowercase hex bytes prefixed with `x`; crc32 (IEEE 802.3, as zlib's) covers
 * every byte from '@' up to and including the space before '*', written as
 * 8 lowercase hex digits. The host refuses a stream with a record missing,
 * repeated, reordered, malformed or failing its checksum.
 *
 * Usage: helia_record_begin("sample"); helia_record_u32(...); ...;
 * helia_record_end(). C99, no heap: a record is assembled in a static line
 * buffer and written in pieces when it fills.
 */
#ifndef HELIA_RECORDS_H
#define HELIA_RECORDS_H

#include <stddef.h>
#include <stdint.h>

void helia_record_begin(const char *kind);
void helia_record_u32(uint32_t value);
void helia_record_u64(uint64_t value);
void helia_record_i32(int32_t value);
void helia_record_text(const char *word); /* a word without spaces */
void helia_record_bytes(const void *data, size_t length);
void helia_record_end(void);

/* Records written so far (the next record's seq). */
uint32_t helia_record_count(void);

/* The CRC-32 (IEEE 802.3, as zlib's crc32) of `length` bytes at `data`. */
uint32_t helia_crc32(const void *data, size_t length);

#endif /* HELIA_RECORDS_H */
