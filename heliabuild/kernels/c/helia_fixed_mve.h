/*
 * helia_fixed_mve.h - helia_fixed.h's MultiplyByQuantizedMultiplier in four MVE lanes, for targets with integer
 * MVE (include it under __ARM_FEATURE_MVE). Each lane gives exactly the scalar function's int32, for every
 * x, multiplier in [0, 2^31 - 1] and shift in [-31, 30]:
 *
 *   double rounding: VQRDMULH computes floor((2ab + 2^31) / 2^32) = floor((ab + 2^30) / 2^31), saturating
 *     the one overflow (INT32_MIN * INT32_MIN), which is gemmlowp's nudged truncation for ab >= 0 and, since
 *     floor((n - 1 + 2^30) / 2^31) = ceil((n - 2^30) / 2^31), for ab = -n < 0 too. VRSHL by -e rounds ties
 *     up: adding -1 first to a negative value (only when e > 0; saturating, which leaves INT32_MIN's result
 *     unchanged) turns that into ties away from zero, the scalar rounding divide.
 *   single rounding: floor((ab + 2^(t-1)) / 2^t), t = 31 - shift in [1, 62], from the exact product's high
 *     word h (VMULH) and low word l (VMUL): t > 32 gives floor((h + 2^(t-33)) / 2^(t-32)) (VRSHL of h; the low
 *     word is below one unit of the rounding), t = 32 is VRMULH, t < 32 is h * 2^(32-t) + floor((l + 2^(t-1))
 *     / 2^t) modulo 2^32 (VRSHL of the unsigned low word keeps the carry).
 *
 * tests/test_kernels_mve_requantize.py runs both against helia_fixed.h on QEMU's Cortex-M55 over the int32
 * extremes, ties and random values. C99 with ACLE intrinsics, no heap.
 */
#ifndef HELIA_FIXED_MVE_H
#define HELIA_FIXED_MVE_H

#include <arm_mve.h>
#include <stdint.h>

/* helia_mbqm_double in each lane, the shift given as left = max(shift, 0) and right = min(shift, 0) (what a
 * kernel computes once per channel block). */
static inline int32x4_t helia_mbqm_double_split_x4(int32x4_t x, int32x4_t multiplier, int32x4_t left, int32x4_t right)
{
    const int32x4_t high = vqrdmulhq_s32(vshlq_s32(x, left), multiplier);
    /* -1 for a negative value with a right shift, turning VRSHL's ties-up rounding into ties away from zero. */
    const int32x4_t fixup = vshrq_n_s32(vandq_s32(high, right), 31);
    return vrshlq_s32(vqaddq_s32(high, fixup), right); /* VRSHL shifts right by -right */
}

/* helia_mbqm_double in each lane. */
static inline int32x4_t helia_mbqm_double_x4(int32x4_t x, int32x4_t multiplier, int32x4_t shift)
{
    const int32x4_t zero = vdupq_n_s32(0);
    return helia_mbqm_double_split_x4(x, multiplier, vmaxq_s32(shift, zero), vminq_s32(shift, zero));
}

/* helia_mbqm_single in each lane, the shift given as beyond = 32 - t = shift + 1 and low = -t = shift - 31. */
static inline int32x4_t helia_mbqm_single_split_x4(int32x4_t x, int32x4_t multiplier, int32x4_t beyond, int32x4_t low_shift)
{
    const int32x4_t zero = vdupq_n_s32(0);
    const int32x4_t high = vmulhq_s32(x, multiplier);
    const uint32x4_t low = vreinterpretq_u32_s32(vmulq_s32(x, multiplier));
    /* t > 32: the low word is below one unit of the rounding, so round the high word by t - 32. */
    const int32x4_t wide = vrshlq_s32(high, beyond);
    /* t < 32: the high word shifted up plus the low word rounded by t (the carry kept). */
    const int32x4_t narrow = vaddq_s32(vshlq_s32(high, beyond), vreinterpretq_s32_u32(vrshlq_u32(low, low_shift)));
    const int32x4_t result = vpselq_s32(wide, narrow, vcmpltq_s32(beyond, zero));
    /* t == 32: one rounding multiply. (vcmpeqq_n_s32 here crashes GCC 12.2: "in trunc_int_for_mode".) */
    return vpselq_s32(vrmulhq_s32(x, multiplier), result, vcmpeqq_s32(beyond, zero));
}

/* helia_mbqm_single in each lane whose shift is below -1 (t > 32, beyond = shift + 1 < 0), the usual case of a
 * multiplier below 1/4: only the high word counts. */
static inline int32x4_t helia_mbqm_single_wide_x4(int32x4_t x, int32x4_t multiplier, int32x4_t beyond)
{
    return vrshlq_s32(vmulhq_s32(x, multiplier), beyond);
}

/* helia_mbqm_single in each lane: floor((x * m + 2^(t - 1)) / 2^t) wrapped to int32, t = 31 - shift. */
static inline int32x4_t helia_mbqm_single_x4(int32x4_t x, int32x4_t multiplier, int32x4_t shift)
{
    return helia_mbqm_single_split_x4(x, multiplier, vaddq_n_s32(shift, 1), vsubq_n_s32(shift, 31));
}

#endif /* HELIA_FIXED_MVE_H */
