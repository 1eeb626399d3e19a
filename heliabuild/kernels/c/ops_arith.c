/*
 * ops_arith.c - int8 SQUARED_DIFFERENCE with NumPy broadcasting.
 *
 * TFLite's int8 statement: both inputs are lifted by 2^left_shift (7) and rescaled to a common scale of
 * twice the larger input scale, a = MBQM((x1 - zp1) << 7, m1, s1), b = MBQM((x2 - zp2) << 7, m2, s2);
 * the difference is squared in int32 (|a - b| < 2^15, so no overflow) and rescaled to the output,
 * y = clamp(MBQM((a - b)^2, m_out, s_out) + zp_out). Every multiplier is below one (shift <= 0), and
 * MBQM is the double-rounding MultiplyByQuantizedMultiplier (helia_fixed.h). docs/kernels.md.
 *
 * C99, no heap, no recursion, no floating point.
 */
#include "helia_broadcast.h"
#include "helia_fixed.h"
#include "helia_ops.h"

/* The largest left shift that keeps (x - zp) << left_shift, and the square of the scaled difference,
 * inside int32. */
#define SQUARED_DIFFERENCE_MAX_LEFT_SHIFT 7

/* ADD's checks (its argument struct, broadcasting, multipliers below one, in place), with the smaller
 * left shift squaring needs. */
helia_status helia_squared_difference_s8_check(const helia_binary_s8_args *args)
{
    const helia_status status = helia_add_s8_check(args);
    if (status != HELIA_STATUS_OK) {
        return status;
    }
    return args->left_shift > SQUARED_DIFFERENCE_MAX_LEFT_SHIFT ? HELIA_STATUS_BAD_PARAMETER : HELIA_STATUS_OK;
}

static int8_t squared_difference_one(const helia_binary_s8_args *args, int32_t x1, int32_t x2)
{
    const int32_t lift = INT32_C(1) << args->left_shift;
    const int32_t a = helia_mbqm_double((x1 - args->input1_zero_point) * lift, args->input1_multiplier,
                                        args->input1_shift);
    const int32_t b = helia_mbqm_double((x2 - args->input2_zero_point) * lift, args->input2_multiplier,
                                        args->input2_shift);
    const int32_t difference = a - b;
    const int32_t scaled = helia_mbqm_double(difference * difference, args->output_multiplier, args->output_shift);
    return helia_clamp_s8(helia_wrapping_add_s32(scaled, args->output_zero_point), args->act_min, args->act_max);
}

helia_status helia_squared_difference_s8_run(const helia_binary_s8_args *args)
{
    helia_broadcast_walk walk = helia_broadcast_begin(args->rank, args->input1_dims, args->input2_dims,
                                                      args->output_dims);
    int32_t n;
    for (n = 0; n < walk.total; ++n) {
        args->output[n] = squared_difference_one(args, args->input1[walk.at1], args->input2[walk.at2]);
        helia_broadcast_next(&walk);
    }
    return HELIA_STATUS_OK;
}

helia_status helia_squared_difference_s8(const helia_binary_s8_args *args)
{
    const helia_status status = helia_squared_difference_s8_check(args);
    return status != HELIA_STATUS_OK ? status : helia_squared_difference_s8_run(args);
}
