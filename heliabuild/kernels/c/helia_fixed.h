/*
 * helia_fixed.h - the fixed-point arithmetic of TFLite's int8 quantization
 * scheme, as inline functions shared by heliabuild's int8 operator kernels.
 *
 * A real multiplier M > 0 is carried as (multiplier, shift) with
 * M = multiplier * 2^(shift - 31), multiplier in [2^30, 2^31 - 1] (or 0 for
 * M = 0) and shift in [-31, 30]; heliabuild.kernels.fixed_point.quantize_multiplier
 * derives them in Python. TFLite applies it to an int32 x
 * ("MultiplyByQuantizedMultiplier") in one of two ways, and LiteRT's
 * reference kernels use both (docs/kernels.md says which operator uses which):
 *
 *   double rounding (gemmlowp): x << max(shift, 0) (wrapping), then the
 *     saturating rounding doubling high multiply by `multiplier`
 *     ((x * m + nudge) / 2^31 truncated, nudge 2^30 or 1 - 2^30 by the sign of
 *     the product; INT32_MIN * INT32_MIN saturates), then the rounding divide
 *     by 2^max(-shift, 0) (to nearest, ties away from zero);
 *   single rounding (TFLITE_SINGLE_ROUNDING):
 *     floor((x * m + 2^(30 - shift)) / 2^(31 - shift)), exact in 64 bits, the
 *     result wrapped to int32 (as TFLite's static_cast does).
 *
 * Everything is written without implementation-defined behaviour: no right
 * shift of a negative value, no signed overflow, no 64-bit division (the
 * Cortex-M55 has no 64-bit divide instruction).
 *
 * C99, no heap, no floating point.
 */
#ifndef HELIA_FIXED_H
#define HELIA_FIXED_H

#include <stdint.h>

/* floor(x / 2^exponent) for 0 <= exponent <= 31, without shifting a negative value. */
static inline int32_t helia_floor_shift_s32(int32_t x, int32_t exponent)
{
    return x >= 0 ? (int32_t)(x >> exponent) : (int32_t)~((~x) >> exponent);
}

/* round(a * b / 2^31), ties away from zero as TFLite's nudge does; saturates the one overflow. */
static inline int32_t helia_sat_rounding_doubling_high_mul(int32_t a, int32_t b)
{
    int64_t product;
    if (a == INT32_MIN && b == INT32_MIN) {
        return INT32_MAX;
    }
    product = (int64_t)a * (int64_t)b;
    if (product >= 0) {
        return (int32_t)((product + ((int64_t)1 << 30)) >> 31);
    }
    /* Truncation toward zero of (product + 1 - 2^30) / 2^31, a negative value. */
    return (int32_t)-((-(product + 1 - ((int64_t)1 << 30))) >> 31);
}

/* x / 2^exponent rounded to nearest, ties away from zero, for 0 <= exponent <= 31. */
static inline int32_t helia_rounding_divide_by_pot(int32_t x, int32_t exponent)
{
    const uint32_t mask = (uint32_t)(((uint64_t)1 << exponent) - 1u);
    const uint32_t remainder = (uint32_t)x & mask;
    const uint32_t threshold = (mask >> 1) + (x < 0 ? 1u : 0u);
    return helia_floor_shift_s32(x, exponent) + (remainder > threshold ? 1 : 0);
}

/* floor(x / 2^exponent) for 0 <= exponent <= 63, without shifting a negative value. */
static inline int64_t helia_floor_shift_s64(int64_t x, int32_t exponent)
{
    return x >= 0 ? (int64_t)(x >> exponent) : (int64_t)~((~x) >> exponent);
}

/* The low 32 bits of x as a two's complement int32 (what a cast does on every target, made explicit). */
static inline int32_t helia_wrap_s32(int64_t x)
{
    const uint32_t low = (uint32_t)((uint64_t)x & 0xFFFFFFFFu);
    return low <= (uint32_t)INT32_MAX ? (int32_t)low : (int32_t)(low - 2147483648u) - INT32_MAX - 1;
}

/* x * multiplier * 2^(shift - 31) rounded twice, gemmlowp's way (TFLite's default
 * MultiplyByQuantizedMultiplier); multiplier in [0, 2^31 - 1], shift in [-31, 30]. */
static inline int32_t helia_mbqm_double(int32_t x, int32_t multiplier, int32_t shift)
{
    const int32_t left = shift > 0 ? shift : 0;
    const int32_t right = shift > 0 ? 0 : -shift;
    const int32_t shifted = helia_wrap_s32((int64_t)((uint64_t)(uint32_t)x << left));
    return helia_rounding_divide_by_pot(helia_sat_rounding_doubling_high_mul(shifted, multiplier), right);
}

/* x * multiplier * 2^(shift - 31) rounded once (ties toward +infinity), TFLite's single-rounding
 * MultiplyByQuantizedMultiplier; multiplier in [0, 2^31 - 1], shift in [-31, 30]. */
static inline int32_t helia_mbqm_single(int32_t x, int32_t multiplier, int32_t shift)
{
    const int32_t total_shift = 31 - shift;
    const int64_t round = (int64_t)1 << (total_shift - 1);
    return helia_wrap_s32(helia_floor_shift_s64((int64_t)x * (int64_t)multiplier + round, total_shift));
}

/* a + b modulo 2^32 (two's complement wrap), the behaviour of an int32 add on every target. */
static inline int32_t helia_wrapping_add_s32(int32_t a, int32_t b)
{
    return helia_wrap_s32((int64_t)a + (int64_t)b);
}

static inline int8_t helia_clamp_s8(int32_t value, int32_t low, int32_t high)
{
    return (int8_t)(value < low ? low : (value > high ? high : value));
}

#endif /* HELIA_FIXED_H */
