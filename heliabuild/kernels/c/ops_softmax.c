/*
 * ops_softmax.c - int8 SOFTMAX over the last axis, in 32-bit fixed point.
 *
 * Per row: d = x - max(row) (an integer in [-255, 0]). Where d >= diff_min,
 * the difference is scaled to Q5.26 by the quantized multiplier of
 * beta * input_scale * 2^26 (shift >= 0), e = exp(d) is evaluated in Q0.31,
 * and the exps are summed in Q12.19. The output is e / sum in Q0.31 scaled to
 * 256ths, minus 128, clamped to int8; a difference below diff_min gives -128.
 *
 * exp on [-1/4, 0): exp(-1/8) * (1 + x + x^2/2 + x^3/6 + x^4/24), x = a + 1/8
 * (Taylor around -1/8); below -1/4 the value is split a = r + k/4 ... and
 * multiplied by exp(-2^j) for every set bit j of the integer part (a barrel
 * shifter over the constants round(2^31 exp(-2^j)), j = -2 .. 4).
 * 1 / sum: the sum normalised to [1, 2), then three Newton-Raphson steps
 * from 48/17 - 32/17 * d on half the denominator.
 * Multiplications of Q-format values are rounding doubling high multiplies;
 * docs/kernels.md, "int8 operator kernels", has the derivation.
 *
 * C99, no heap, no recursion, no floating point.
 */
#include "helia_fixed.h"
#include "helia_ops.h"
#include "helia_ops_internal.h"

#define SCALED_DIFF_INTEGER_BITS 5
#define ACCUMULATION_INTEGER_BITS 12

/* x * 2^exponent in 32-bit fixed point: a saturating left shift, or a rounding right shift. */
static int32_t multiply_by_pot(int32_t x, int32_t exponent)
{
    if (exponent > 0) {
        const int32_t threshold = (INT32_C(1) << (31 - exponent)) - 1;
        if (x > threshold) {
            return INT32_MAX;
        }
        if (x < -threshold) {
            return INT32_MIN;
        }
        return helia_wrap_s32((int64_t)x * ((int64_t)1 << exponent));
    }
    if (exponent < 0) {
        return helia_rounding_divide_by_pot(x, -exponent);
    }
    return x;
}

static int32_t mul(int32_t a, int32_t b)
{
    return helia_sat_rounding_doubling_high_mul(a, b);
}

/* exp(a) for a in [-1/4, 0), both in Q0.31. */
static int32_t exp_on_interval_between_negative_one_quarter_and_0(int32_t a)
{
    const int32_t exp_minus_one_eighth = 1895147668; /* round(2^31 exp(-1/8)) */
    const int32_t one_third = 715827883;             /* round(2^31 / 3) */
    const int32_t x = a + (INT32_C(1) << 28);        /* a + 1/8 */
    const int32_t x2 = mul(x, x);
    const int32_t x3 = mul(x2, x);
    const int32_t x4 = mul(x2, x2);
    const int32_t x4_over_4 = multiply_by_pot(x4, -2);
    const int32_t poly = multiply_by_pot(mul(x4_over_4 + x3, one_third) + x2, -1); /* x^4/24 + x^3/6 + x^2/2 */
    return exp_minus_one_eighth + mul(exp_minus_one_eighth, x + poly);
}

/* exp(a) in Q0.31 for a <= 0 in Q5.26. */
static int32_t exp_on_negative_values(int32_t a)
{
    /* round(2^31 exp(-2^j)) for j = -2 .. 4, selected by bit 26 + j of the remainder. */
    static const int32_t factors[7] = {1672461947, 1302514674, 790015084, 290630308, 39332535, 720401, 242};
    const int32_t quarter = INT32_C(1) << (26 - 2);
    const int32_t mask = quarter - 1;
    const int32_t a_mod_quarter_minus_quarter = (int32_t)((uint32_t)a & (uint32_t)mask) - quarter;
    const int32_t remainder = a_mod_quarter_minus_quarter - a; /* a non-negative multiple of 1/4 */
    int32_t result = exp_on_interval_between_negative_one_quarter_and_0(
        multiply_by_pot(a_mod_quarter_minus_quarter, SCALED_DIFF_INTEGER_BITS));
    int32_t j;
    for (j = 0; j < 7; ++j) {
        if (((uint32_t)remainder >> (24 + j)) & 1u) {
            result = mul(result, factors[j]);
        }
    }
    return a == 0 ? INT32_MAX : result;
}

/* 1 / (1 + a) for a in [0, 1) in Q0.31, by Newton-Raphson on half the denominator (Q2.29 iterates). */
static int32_t one_over_one_plus_x_for_x_in_0_1(int32_t a)
{
    const int64_t sum = (int64_t)a + INT32_MAX;
    const int32_t half_denominator = (int32_t)((sum + 1) >> 1); /* sum >= 0: rounding half sum */
    const int32_t constant_48_over_17 = 1515870810;            /* round(2^29 * 48/17) */
    const int32_t constant_neg_32_over_17 = -1010580540;       /* round(-2^29 * 32/17) */
    const int32_t one_q2 = INT32_C(1) << 29;
    int32_t x = constant_48_over_17 + mul(half_denominator, constant_neg_32_over_17);
    int i;
    for (i = 0; i < 3; ++i) {
        const int32_t half_denominator_times_x = mul(half_denominator, x);
        const int32_t one_minus = one_q2 - half_denominator_times_x;
        x = x + multiply_by_pot(mul(x, one_minus), 2);
    }
    return multiply_by_pot(x, 1);
}

static int32_t count_leading_zeros(uint32_t x)
{
    int32_t n = 0;
    if (x == 0u) {
        return 32;
    }
    while ((x & 0x80000000u) == 0u) {
        x <<= 1;
        ++n;
    }
    return n;
}

static int32_t scaled_difference(const helia_softmax_s8_args *args, int32_t difference)
{
    /* The multiplier is above one (shift >= 0): shift left, then the rounding doubling high multiply. */
    return mul(helia_wrap_s32((int64_t)difference * ((int64_t)1 << args->input_left_shift)), args->input_multiplier);
}

helia_status helia_softmax_s8_check(const helia_softmax_s8_args *args)
{
    int64_t count;
    if (args == NULL || args->input == NULL || args->output == NULL) {
        return HELIA_STATUS_NULL_POINTER;
    }
    if (args->rows < 1 || args->depth < 1) {
        return HELIA_STATUS_BAD_SHAPE;
    }
    count = (int64_t)args->rows * args->depth;
    /* The Q12.19 sum of up to `depth` exps below 1 must not overflow: depth < 2^12. */
    if (count > INT32_MAX || args->depth >= (INT32_C(1) << ACCUMULATION_INTEGER_BITS)) {
        return HELIA_STATUS_SIZE_OVERFLOW;
    }
    if (!helia_ops_multiplier_ok(args->input_multiplier, args->input_left_shift) || args->input_left_shift < 0 ||
        args->diff_min > 0) {
        return HELIA_STATUS_BAD_PARAMETER;
    }
    /* Each row is read twice, so even an exact alias is refused. */
    if (helia_ops_overlap(args->output, (size_t)count, args->input, (size_t)count)) {
        return HELIA_STATUS_PARTIAL_OVERLAP;
    }
    return HELIA_STATUS_OK;
}

helia_status helia_softmax_s8_run(const helia_softmax_s8_args *args)
{
    int32_t r;
    int32_t c;
    for (r = 0; r < args->rows; ++r) {
        const int8_t *in = args->input + (size_t)r * (size_t)args->depth;
        int8_t *out = args->output + (size_t)r * (size_t)args->depth;
        int32_t max_in_row = -128;
        int32_t sum_of_exps = 0; /* Q12.19 */
        int32_t headroom_plus_one;
        int32_t num_bits_over_unit;
        int32_t shifted_scale;
        for (c = 0; c < args->depth; ++c) {
            if (in[c] > max_in_row) {
                max_in_row = in[c];
            }
        }
        for (c = 0; c < args->depth; ++c) {
            const int32_t difference = (int32_t)in[c] - max_in_row;
            if (difference >= args->diff_min) {
                const int32_t e = exp_on_negative_values(scaled_difference(args, difference));
                sum_of_exps += multiply_by_pot(e, -ACCUMULATION_INTEGER_BITS);
            }
        }
        /* 1 / sum: sum = 2^num_bits_over_unit * (1 + f), f in [0, 1). */
        headroom_plus_one = count_leading_zeros((uint32_t)sum_of_exps);
        num_bits_over_unit = ACCUMULATION_INTEGER_BITS - headroom_plus_one;
        shifted_scale = one_over_one_plus_x_for_x_in_0_1(
            helia_wrap_s32((int64_t)(((uint32_t)sum_of_exps << headroom_plus_one) - 0x80000000u)));
        for (c = 0; c < args->depth; ++c) {
            const int32_t difference = (int32_t)in[c] - max_in_row;
            if (difference >= args->diff_min) {
                const int32_t e = exp_on_negative_values(scaled_difference(args, difference));
                const int32_t exponent = num_bits_over_unit + 31 - 8;
                /* A sum of 512 or more (long rows of near-equal values) asks for a shift past 31:
                 * the quotient is below 1/2 and rounds to 0 (TFLite leaves that shift undefined). */
                const int32_t unsaturated = exponent > 31 ? 0 : helia_rounding_divide_by_pot(mul(shifted_scale, e), exponent);
                out[c] = helia_clamp_s8(unsaturated - 128, -128, 127);
            } else {
                out[c] = -128;
            }
        }
    }
    return HELIA_STATUS_OK;
}

helia_status helia_softmax_s8(const helia_softmax_s8_args *args)
{
    const helia_status status = helia_softmax_s8_check(args);
    return status != HELIA_STATUS_OK ? status : helia_softmax_s8_run(args);
}

/* ---- LOG_SOFTMAX -------------------------------------------------------------------------------- */

#define LOG_SOFTMAX_OUTPUT_INTEGER_BITS 4
#define LOG_SOFTMAX_OUTPUT_ZERO_POINT 127

static int32_t saturating_add_s32(int32_t a, int32_t b)
{
    const int64_t sum = (int64_t)a + (int64_t)b;
    return sum > INT32_MAX ? INT32_MAX : (sum < INT32_MIN ? INT32_MIN : (int32_t)sum);
}

/* (a + b) / 2 rounded half away from zero. */
static int32_t rounding_half_sum(int32_t a, int32_t b)
{
    const int64_t sum = (int64_t)a + (int64_t)b;
    const int64_t biased = sum + (sum >= 0 ? 1 : -1);
    return (int32_t)(biased >= 0 ? biased / 2 : -((-biased) / 2));
}

/* log(x) in Q5.26 for a Q12.19 x >= 1 (TFLite's log_x_for_x_greater_than_or_equal_to_1): x = 2^z r with r in
 * [sqrt(1/2), sqrt(2)) (of the two normalisations, the one leaving r nearer one), log(x) = z log 2 + log(r), and
 * log(r) a rational approximation in q = 2 (r - 2^-1/4), accumulated in Q6.25. */
static int32_t log_x_for_x_at_least_1(int32_t x)
{
    const int32_t input_integer_bits = ACCUMULATION_INTEGER_BITS;
    const int32_t accumulator_integer_bits = SCALED_DIFF_INTEGER_BITS + 1;
    const int32_t log_2 = 1488522236;          /* round(2^31 log 2) */
    const int32_t sqrt_sqrt_half = 1805811301; /* round(2^31 (1/2)^(1/4)) */
    const int32_t sqrt_half = 1518500250;      /* round(2^31 sqrt(1/2)) */
    const int32_t alpha_n = 117049297;         /* round(2^31 11/240 2^(1/4)) */
    const int32_t alpha_d = 127690142;         /* round(2^31 1/20 2^(1/4)) */
    const int32_t alpha_i = 1057819769;        /* round(2^31 (2 / 2^(1/4) - 2^(1/4))) */
    const int32_t alpha_f = 638450708;         /* round(2^31 1/4 2^(1/4)) */
    const int32_t quarter = multiply_by_pot(INT32_C(1) << 29, -accumulator_integer_bits);
    const int32_t a_headroom_plus_1 = count_leading_zeros((uint32_t)x);
    const int32_t r_a = multiply_by_pot(mul(multiply_by_pot(x, a_headroom_plus_1 - 1), sqrt_half), 1);
    const int32_t z_a = saturating_add_s32(
        multiply_by_pot(input_integer_bits - a_headroom_plus_1, 31 - accumulator_integer_bits), quarter);
    const int32_t b = mul(x, sqrt_half);
    const int32_t b_headroom = count_leading_zeros((uint32_t)b) - 1;
    const int32_t r_b = multiply_by_pot(x, b_headroom);
    const int32_t z_b = saturating_add_s32(
        multiply_by_pot(input_integer_bits - b_headroom, 31 - accumulator_integer_bits), -quarter);
    const int32_t r = r_a < r_b ? r_a : r_b;
    const int32_t z = z_a > z_b ? z_a : z_b;
    const int32_t p = rounding_half_sum(r, sqrt_sqrt_half);
    const int32_t q = helia_wrap_s32(2 * ((int64_t)r - sqrt_sqrt_half));
    const int32_t q_squared = mul(q, q);
    const int32_t numerator = helia_wrapping_add_s32(mul(q, r), mul(mul(q, q_squared), alpha_n));
    const int32_t denominator_minus_one = helia_wrapping_add_s32(
        mul(p, helia_wrapping_add_s32(helia_wrapping_add_s32(alpha_i, q), mul(alpha_d, q_squared))), mul(alpha_f, q));
    const int32_t reciprocal = one_over_one_plus_x_for_x_in_0_1(denominator_minus_one);
    const int32_t numerator_scaled = multiply_by_pot(numerator, -accumulator_integer_bits);
    const int32_t sum = helia_wrapping_add_s32(mul(z, log_2), mul(numerator_scaled, reciprocal));
    return multiply_by_pot(sum, accumulator_integer_bits - SCALED_DIFF_INTEGER_BITS);
}

/* The SOFTMAX arguments of the same rows and input scaling (LOG_SOFTMAX shares its checks and exps). */
static helia_softmax_s8_args softmax_view(const helia_log_softmax_s8_args *args)
{
    helia_softmax_s8_args view;
    view.input = args->input;
    view.output = args->output;
    view.rows = args->rows;
    view.depth = args->depth;
    view.input_multiplier = args->input_multiplier;
    view.input_left_shift = args->input_left_shift;
    view.diff_min = args->diff_min;
    return view;
}

helia_status helia_log_softmax_s8_check(const helia_log_softmax_s8_args *args)
{
    helia_softmax_s8_args view;
    helia_status status;
    if (args == NULL) {
        return HELIA_STATUS_NULL_POINTER;
    }
    view = softmax_view(args);
    status = helia_softmax_s8_check(&view);
    if (status != HELIA_STATUS_OK) {
        return status;
    }
    if (!helia_ops_multiplier_ok(args->reverse_multiplier, args->reverse_shift) || args->reverse_shift > 0) {
        return HELIA_STATUS_BAD_PARAMETER;
    }
    return HELIA_STATUS_OK;
}

helia_status helia_log_softmax_s8_run(const helia_log_softmax_s8_args *args)
{
    const helia_softmax_s8_args view = softmax_view(args);
    int32_t r;
    for (r = 0; r < args->rows; ++r) {
        const int8_t *in = args->input + (size_t)r * (size_t)args->depth;
        int8_t *out = args->output + (size_t)r * (size_t)args->depth;
        int32_t max_in_row = -128;
        int32_t sum_of_exps = 0; /* Q12.19 */
        int32_t log_sum;         /* Q5.26 */
        int32_t adjusted_diff_min;
        int32_t c;
        for (c = 0; c < args->depth; ++c) {
            if (in[c] > max_in_row) {
                max_in_row = in[c];
            }
        }
        for (c = 0; c < args->depth; ++c) {
            const int32_t difference = (int32_t)in[c] - max_in_row;
            if (difference >= args->diff_min) {
                const int32_t e = exp_on_negative_values(scaled_difference(&view, difference));
                sum_of_exps = helia_wrapping_add_s32(sum_of_exps, multiply_by_pot(e, -ACCUMULATION_INTEGER_BITS));
            }
        }
        log_sum = log_x_for_x_at_least_1(sum_of_exps);
        /* The smallest difference whose log-probability is representable: (log_sum - 32) back on the input
         * scale, at least diff_min - 1. */
        adjusted_diff_min = helia_mbqm_double(helia_wrapping_add_s32(log_sum, INT32_MIN), args->reverse_multiplier,
                                              args->reverse_shift);
        if (adjusted_diff_min < args->diff_min - 1) {
            adjusted_diff_min = args->diff_min - 1;
        }
        for (c = 0; c < args->depth; ++c) {
            const int32_t difference = (int32_t)in[c] - max_in_row;
            if (difference > adjusted_diff_min) {
                const int32_t shifted = helia_wrap_s32((int64_t)scaled_difference(&view, difference) - log_sum);
                const int32_t value = helia_rounding_divide_by_pot(
                    shifted, 31 - SCALED_DIFF_INTEGER_BITS - LOG_SOFTMAX_OUTPUT_INTEGER_BITS);
                out[c] = helia_clamp_s8(value + LOG_SOFTMAX_OUTPUT_ZERO_POINT, -128, 127);
            } else {
                out[c] = -128;
            }
        }
    }
    return HELIA_STATUS_OK;
}

helia_status helia_log_softmax_s8(const helia_log_softmax_s8_args *args)
{
    const helia_status status = helia_log_softmax_s8_check(args);
    return status != HELIA_STATUS_OK ? status : helia_log_softmax_s8_run(args);
}
