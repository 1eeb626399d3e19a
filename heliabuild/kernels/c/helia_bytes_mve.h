/*
 * helia_bytes_mve.h - byte runs copied and filled sixteen at a time under a tail predicate, for the Helium
 * bodies (include it under __ARM_FEATURE_MVE). C99 with ACLE intrinsics, no heap.
 */
#ifndef HELIA_BYTES_MVE_H
#define HELIA_BYTES_MVE_H

#include <arm_mve.h>
#include <stdint.h>

/* destination[0 .. count) = source[0 .. count). */
static inline void copy_bytes(int8_t *destination, const int8_t *source, int32_t count)
{
    int32_t k;
    for (k = 0; k < count; k += 16) {
        const mve_pred16_t p = vctp8q((uint32_t)(count - k));
        vstrbq_p_s8(destination + k, vldrbq_z_s8(source + k, p), p);
    }
}

/* destination[0 .. count) = value. */
static inline void fill_bytes(int8_t *destination, int8_t value, int32_t count)
{
    const int8x16_t values = vdupq_n_s8(value);
    int32_t k;
    for (k = 0; k < count; k += 16) {
        vstrbq_p_s8(destination + k, values, vctp8q((uint32_t)(count - k)));
    }
}

#endif /* HELIA_BYTES_MVE_H */
