/*
 * ops_lut.c - int8 element-wise functions: a 256-entry table lookup (LOGISTIC, TANH, EXP), HARD_SWISH
 * and RSQRT; and L2_NORMALIZATION, which shares RSQRT's inverse square root.
 *
 * The table of LOGISTIC, TANH and EXP is computed by the caller from the tensors' quantization
 * (heliabuild.kernels.int8_math.lookup_table): LiteRT's int8 reference kernels evaluate these operators
 * through the same kind of table, so the kernel only has to index it.
 *
 * HARD_SWISH is TFLite's 16-bit fixed-point statement: the input is lifted to a 2^7 finer scale, scaled
 * once to the output scale (before its final right shift) and once to a "relu-ish" value on the scale
 * where 3.0 is 2^15 (saturating), mapped from [-1, 1] to [0, 1], and the two are multiplied with a
 * non-rounding doubling high multiply before the output shift.
 *
 * RSQRT is TFLite's: v = x - zero_point; v = 0 gives 127; otherwise 1 / sqrt(v) comes from five
 * Newton-Raphson steps in Q3.28 on v normalised to [2^27, 2^29) (gemmlowp's fixed point), as a
 * quantized multiplier; the result is MBQM(1, m, s + 20) rescaled by MBQM(., multiplier, shift - 20).
 * docs/kernels.md, "LUT and arithmetic-heavy int8 kernels", has the arithmetic.
 *
 * C99, no heap, no recursion, no floating point.
 */
#include "helia_fixed.h"
#include "helia_ops.h"
#include "helia_ops_internal.h"

/* An element-wise kernel's buffers: output exactly the input, or not overlapping it. */
static helia_status unary_buffers_check(const int8_t *input, const int8_t *output, int32_t count)
{
    if (input == NULL || output == NULL) {
        return HELIA_STATUS_NULL_POINTER;
    }
    if (count < 1) {
        return HELIA_STATUS_BAD_SHAPE;
    }
    if ((const void *)input != (const void *)output &&
        helia_ops_overlap(output, (size_t)count, input, (size_t)count)) {
        return HELIA_STATUS_PARTIAL_OVERLAP;
    }
    return HELIA_STATUS_OK;
}

/* ---- table lookup ------------------------------------------------------------------------------- */

helia_status helia_lookup_s8_check(const helia_lookup_s8_args *args)
{
    helia_status status;
    if (args == NULL || args->table == NULL) {
        return HELIA_STATUS_NULL_POINTER;
    }
    status = unary_buffers_check(args->input, args->output, args->count);
    if (status != HELIA_STATUS_OK) {
        return status;
    }
    if (helia_ops_overlap(args->output, (size_t)args->count, args->table, 256u)) {
        return HELIA_STATUS_PARTIAL_OVERLAP;
    }
    return HELIA_STATUS_OK;
}

helia_status helia_lookup_s8_run(const helia_lookup_s8_args *args)
{
    int32_t i;
    for (i = 0; i < args->count; ++i) {
        args->output[i] = args->table[(int32_t)args->input[i] + 128];
    }
    return HELIA_STATUS_OK;
}

helia_status helia_lookup_s8(const helia_lookup_s8_args *args)
{
    const helia_status status = helia_lookup_s8_check(args);
    return status != HELIA_STATUS_OK ? status : helia_lookup_s8_run(args);
}

/* ---- 16-bit fixed point (HARD_SWISH) ------------------------------------------------------------ */

static int16_t saturate_s16(int64_t value)
{
    return (int16_t)(value < INT16_MIN ? INT16_MIN : (value > INT16_MAX ? INT16_MAX : value));
}

/* round(a * b / 2^15), ties away from zero; INT16_MIN * INT16_MIN saturates. */
static int16_t rounding_doubling_high_mul_s16(int16_t a, int16_t b)
{
    const int32_t product = (int32_t)a * (int32_t)b;
    const int32_t nudge = product >= 0 ? (INT32_C(1) << 14) : 1 - (INT32_C(1) << 14);
    if (a == INT16_MIN && b == INT16_MIN) {
        return INT16_MAX;
    }
    return (int16_t)((product + nudge) / (INT32_C(1) << 15)); /* C division truncates toward zero */
}

/* a * b / 2^15 truncated toward zero; INT16_MIN * INT16_MIN saturates. */
static int16_t doubling_high_mul_s16(int16_t a, int16_t b)
{
    if (a == INT16_MIN && b == INT16_MIN) {
        return INT16_MAX;
    }
    return (int16_t)(((int32_t)a * (int32_t)b) / (INT32_C(1) << 15));
}

/* x / 2^exponent, to nearest, ties away from zero, for 0 <= exponent <= 15. From 16 to 31, TFLite's
 * 16-bit statement (gemmlowp's, its remainder mask 2^exponent - 1 cut to 16 bits, so all ones) gives 1 for
 * x >= 0 and -1 below; LiteRT admits such exponents, so the kernel gives the same. */
static int16_t rounding_divide_by_pot_s16(int16_t x, int32_t exponent)
{
    if (exponent >= 16) {
        return (int16_t)(x >= 0 ? 1 : -1);
    }
    return (int16_t)helia_rounding_divide_by_pot(x, exponent);
}

static int16_t saturating_left_shift_s16(int16_t x, int32_t amount)
{
    return saturate_s16((int64_t)x * ((int64_t)1 << amount));
}

static int16_t multiplier_s16(int32_t value)
{
    return (int16_t)value;
}

helia_status helia_hard_swish_s8_check(const helia_hard_swish_s8_args *args)
{
    if (args == NULL) {
        return HELIA_STATUS_NULL_POINTER;
    }
    {
        const helia_status status = unary_buffers_check(args->input, args->output, args->count);
        if (status != HELIA_STATUS_OK) {
            return status;
        }
    }
    if (!helia_ops_zero_point_ok(args->input_zero_point) || !helia_ops_zero_point_ok(args->output_zero_point) ||
        args->reluish_multiplier < 0 || args->reluish_multiplier > INT16_MAX || args->output_multiplier < 0 ||
        args->output_multiplier > INT16_MAX || args->reluish_shift < -31 || args->reluish_shift > 30 ||
        args->output_shift < -31 || args->output_shift > 0) {
        return HELIA_STATUS_BAD_PARAMETER;
    }
    return HELIA_STATUS_OK;
}

static int8_t hard_swish_one(const helia_hard_swish_s8_args *args, int32_t x)
{
    const int16_t reluish_multiplier = multiplier_s16(args->reluish_multiplier);
    const int16_t hires = (int16_t)((x - args->input_zero_point) * 128); /* |.| <= 255 * 128 fits */
    const int16_t preshift_output = rounding_doubling_high_mul_s16(hires, multiplier_s16(args->output_multiplier));
    int16_t reluish = hires;
    int32_t output;
    /* All but the last bit of a left shift first, so that only the last shift can saturate the result. */
    if (args->reluish_shift > 0) {
        reluish = saturating_left_shift_s16(reluish, args->reluish_shift - 1);
    }
    reluish = rounding_doubling_high_mul_s16(reluish, reluish_multiplier);
    if (args->reluish_shift > 0) {
        reluish = saturating_left_shift_s16(reluish, 1);
    } else if (args->reluish_shift < 0) {
        reluish = rounding_divide_by_pot_s16(reluish, -args->reluish_shift);
    }
    /* [-1, 1] on 2^15 to [0, 1]: (reluish + 2^15) / 2, a value in [0, 32767]. */
    reluish = (int16_t)(((int32_t)reluish + 32768) / 2);
    output = rounding_divide_by_pot_s16(doubling_high_mul_s16(reluish, preshift_output), -args->output_shift);
    return helia_clamp_s8(output + args->output_zero_point, -128, 127);
}

helia_status helia_hard_swish_s8_run(const helia_hard_swish_s8_args *args)
{
    int32_t i;
    for (i = 0; i < args->count; ++i) {
        args->output[i] = hard_swish_one(args, args->input[i]);
    }
    return HELIA_STATUS_OK;
}

helia_status helia_hard_swish_s8(const helia_hard_swish_s8_args *args)
{
    const helia_status status = helia_hard_swish_s8_check(args);
    return status != HELIA_STATUS_OK ? status : helia_hard_swish_s8_run(args);
}

/* ---- RSQRT -------------------------------------------------------------------------------------- */

#define RSQRT_SHIFT 20

/* x * 2^exponent for 0 < exponent < 31, saturating (gemmlowp's SaturatingRoundingMultiplyByPOT). */
static int32_t saturating_left_shift_s32(int32_t x, int32_t exponent)
{
    const int32_t threshold = (INT32_C(1) << (31 - exponent)) - 1;
    if (x > threshold) {
        return INT32_MAX;
    }
    if (x < -threshold) {
        return INT32_MIN;
    }
    return (int32_t)((int64_t)x * ((int64_t)1 << exponent));
}

static int32_t leading_zeros_u32(uint32_t x)
{
    int32_t count = 0;
    while (count < 32 && (x & 0x80000000u) == 0u) {
        x <<= 1;
        ++count;
    }
    return count;
}

/* 1 / sqrt(value) for value >= 2 as (*multiplier, *shift), a quantized multiplier with the shift
 * to the left; value 1 gives (INT32_MAX, 0). A value of 2^29 or more is divided by 4 (truncating) until below;
 * then five Newton-Raphson steps x' = 3/2 x - v/2 x^3 in Q3.28. */
static void inverse_sqrt(int32_t value, int32_t *multiplier, int32_t *shift)
{
    const int32_t one_q3 = INT32_C(1) << 28;
    const int32_t three_halves_q3 = (INT32_C(1) << 28) + (INT32_C(1) << 27);
    const int32_t half_sqrt_2_q0 = 1518500250; /* round(2^31 sqrt(2) / 2) */
    int32_t right_shift = 11;
    int32_t pairs;
    int32_t half_input;
    int32_t x = one_q3;
    int32_t step;
    if (value <= 1) {
        *multiplier = INT32_MAX;
        *shift = 0;
        return;
    }
    while (value >= (INT32_C(1) << 29)) {
        value /= 4;
        ++right_shift;
    }
    pairs = (leading_zeros_u32((uint32_t)value) - 1) / 2 - 1;
    right_shift -= pairs;
    value = (int32_t)((uint32_t)value << (2 * pairs)); /* now in [2^27, 2^29) */
    half_input = helia_rounding_divide_by_pot(value >> 1, 1);
    for (step = 0; step < 5; ++step) {
        /* x^3 is Q9 (3 x 3 integer bits), v/2 x^3 and 3/2 x are Q6: back to Q3 by saturating shifts. */
        const int32_t cube = saturating_left_shift_s32(
            helia_sat_rounding_doubling_high_mul(helia_sat_rounding_doubling_high_mul(x, x), x), 6);
        const int32_t difference = helia_wrap_s32((int64_t)helia_sat_rounding_doubling_high_mul(three_halves_q3, x) -
                                                  (int64_t)helia_sat_rounding_doubling_high_mul(half_input, cube));
        x = saturating_left_shift_s32(difference, 3);
    }
    x = helia_sat_rounding_doubling_high_mul(x, half_sqrt_2_q0);
    if (right_shift < 0) {
        x = helia_wrap_s32((int64_t)((uint64_t)(uint32_t)x << (-right_shift)));
        right_shift = 0;
    }
    *multiplier = x;
    *shift = -right_shift;
}

helia_status helia_rsqrt_s8_check(const helia_rsqrt_s8_args *args)
{
    if (args == NULL) {
        return HELIA_STATUS_NULL_POINTER;
    }
    {
        const helia_status status = unary_buffers_check(args->input, args->output, args->count);
        if (status != HELIA_STATUS_OK) {
            return status;
        }
    }
    if (!helia_ops_zero_point_ok(args->input_zero_point) || !helia_ops_zero_point_ok(args->output_zero_point) ||
        !helia_ops_multiplier_ok(args->multiplier, args->shift) || args->shift - RSQRT_SHIFT < -31) {
        return HELIA_STATUS_BAD_PARAMETER;
    }
    return HELIA_STATUS_OK;
}

static int8_t rsqrt_one(const helia_rsqrt_s8_args *args, int32_t x)
{
    const int32_t value = x - args->input_zero_point;
    int32_t multiplier;
    int32_t shift;
    int32_t data;
    /* Zero, and the codes below the zero point (negative reals, which LiteRT refuses to invoke on), give
     * the largest output. */
    if (value <= 0) {
        return 127;
    }
    inverse_sqrt(value, &multiplier, &shift);
    data = helia_mbqm_double(1, multiplier, shift + RSQRT_SHIFT);
    data = helia_mbqm_double(data, args->multiplier, args->shift - RSQRT_SHIFT);
    return helia_clamp_s8(helia_wrapping_add_s32(data, args->output_zero_point), -128, 127);
}

helia_status helia_rsqrt_s8_run(const helia_rsqrt_s8_args *args)
{
    int32_t i;
    for (i = 0; i < args->count; ++i) {
        args->output[i] = rsqrt_one(args, args->input[i]);
    }
    return HELIA_STATUS_OK;
}

helia_status helia_rsqrt_s8(const helia_rsqrt_s8_args *args)
{
    const helia_status status = helia_rsqrt_s8_check(args);
    return status != HELIA_STATUS_OK ? status : helia_rsqrt_s8_run(args);
}

/* ---- L2_NORMALIZATION --------------------------------------------------------------------------- */

#define L2_OUTPUT_SHIFT 7

helia_status helia_l2_normalization_s8_check(const helia_l2_normalization_s8_args *args)
{
    int32_t count;
    int64_t total;
    if (args == NULL || args->input == NULL || args->output == NULL) {
        return HELIA_STATUS_NULL_POINTER;
    }
    if (args->rows < 1 || args->depth < 1) {
        return HELIA_STATUS_BAD_SHAPE;
    }
    total = (int64_t)args->rows * args->depth;
    if (total > INT32_MAX || args->depth > INT32_MAX / (255 * 255)) {
        return HELIA_STATUS_SIZE_OVERFLOW;
    }
    count = (int32_t)total;
    if (!helia_ops_zero_point_ok(args->input_zero_point)) {
        return HELIA_STATUS_BAD_PARAMETER;
    }
    if (helia_ops_overlap(args->output, (size_t)count, args->input, (size_t)count)) {
        return HELIA_STATUS_PARTIAL_OVERLAP;
    }
    return HELIA_STATUS_OK;
}

helia_status helia_l2_normalization_s8_run(const helia_l2_normalization_s8_args *args)
{
    int32_t row;
    for (row = 0; row < args->rows; ++row) {
        const int8_t *in = args->input + row * args->depth;
        int8_t *out = args->output + row * args->depth;
        int32_t sum = 0;
        int32_t multiplier;
        int32_t shift;
        int32_t k;
        for (k = 0; k < args->depth; ++k) {
            const int32_t centred = (int32_t)in[k] - args->input_zero_point;
            sum += centred * centred;
        }
        inverse_sqrt(sum, &multiplier, &shift);
        for (k = 0; k < args->depth; ++k) {
            const int32_t centred = (int32_t)in[k] - args->input_zero_point;
            out[k] = helia_clamp_s8(helia_mbqm_double(centred, multiplier, shift + L2_OUTPUT_SHIFT), -128, 127);
        }
    }
    return HELIA_STATUS_OK;
}

helia_status helia_l2_normalization_s8(const helia_l2_normalization_s8_args *args)
{
    const helia_status status = helia_l2_normalization_s8_check(args);
    return status != HELIA_STATUS_OK ? status : helia_l2_normalization_s8_run(args);
}
