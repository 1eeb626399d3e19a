/*
 * ops_int16.c - int16 ADD and MUL with NumPy broadcasting: the TFLite converter's 16x8 forms (int16
 * activations with zero point 0, the general-scale path, pot_scale_int16 false).
 *
 * ADD: a = MBQM(x1 << 15, m1, s1), b = MBQM(x2 << 15, m2, s2), y = clamp(MBQM(a + b, m_out, s_out)); the
 * inputs rescaled to twice the larger input scale, as the int8 ADD does with 2^20 (|x| << 15 stays below
 * 2^30, so a + b fits int32). MUL: y = clamp(MBQM(x1 * x2, m, s)). Double-rounding MBQM, as LiteRT rounds
 * both. docs/kernels.md.
 *
 * C99, no heap, no recursion, no floating point.
 */
#include "helia_broadcast.h"
#include "helia_fixed.h"
#include "helia_ops.h"
#include "helia_ops_internal.h"

#define KIND_ADD 0
#define KIND_MUL 1
#define ADD_S16_LEFT_SHIFT 15

static helia_status binary_s16_check(const helia_binary_s16_args *args, int kind)
{
    int32_t counts[3];
    helia_status status;
    if (args == NULL || args->input1 == NULL || args->input2 == NULL || args->output == NULL) {
        return HELIA_STATUS_NULL_POINTER;
    }
    status = helia_broadcast_check(args->rank, args->input1_dims, args->input2_dims, args->output_dims, counts);
    if (status != HELIA_STATUS_OK) {
        return status;
    }
    if (counts[2] > INT32_MAX / 2) {
        return HELIA_STATUS_SIZE_OVERFLOW;
    }
    if (args->act_min < INT16_MIN || args->act_min > args->act_max || args->act_max > INT16_MAX ||
        !helia_ops_multiplier_ok(args->output_multiplier, args->output_shift)) {
        return HELIA_STATUS_BAD_PARAMETER;
    }
    if (kind == KIND_ADD &&
        (args->left_shift != ADD_S16_LEFT_SHIFT || args->output_shift > 0 ||
         !helia_ops_multiplier_ok(args->input1_multiplier, args->input1_shift) || args->input1_shift > 0 ||
         !helia_ops_multiplier_ok(args->input2_multiplier, args->input2_shift) || args->input2_shift > 0)) {
        return HELIA_STATUS_BAD_PARAMETER;
    }
    if ((helia_ops_overlap(args->output, (size_t)counts[2] * 2u, args->input1, (size_t)counts[0] * 2u) &&
         !((const void *)args->output == (const void *)args->input1 && counts[0] == counts[2])) ||
        (helia_ops_overlap(args->output, (size_t)counts[2] * 2u, args->input2, (size_t)counts[1] * 2u) &&
         !((const void *)args->output == (const void *)args->input2 && counts[1] == counts[2]))) {
        return HELIA_STATUS_PARTIAL_OVERLAP;
    }
    return HELIA_STATUS_OK;
}

static int16_t clamp_s16(int32_t value, int32_t low, int32_t high)
{
    return (int16_t)(value < low ? low : (value > high ? high : value));
}

static int16_t add_one(const helia_binary_s16_args *args, int32_t x1, int32_t x2)
{
    const int32_t a = helia_mbqm_double(x1 * (INT32_C(1) << ADD_S16_LEFT_SHIFT), args->input1_multiplier,
                                        args->input1_shift);
    const int32_t b = helia_mbqm_double(x2 * (INT32_C(1) << ADD_S16_LEFT_SHIFT), args->input2_multiplier,
                                        args->input2_shift);
    return clamp_s16(helia_mbqm_double(a + b, args->output_multiplier, args->output_shift), args->act_min,
                     args->act_max);
}

static int16_t mul_one(const helia_binary_s16_args *args, int32_t x1, int32_t x2)
{
    return clamp_s16(helia_mbqm_double(x1 * x2, args->output_multiplier, args->output_shift), args->act_min,
                     args->act_max);
}

static helia_status binary_s16_run(const helia_binary_s16_args *args, int kind)
{
    helia_broadcast_walk walk = helia_broadcast_begin(args->rank, args->input1_dims, args->input2_dims,
                                                      args->output_dims);
    int32_t n;
    for (n = 0; n < walk.total; ++n) {
        const int32_t x1 = args->input1[walk.at1];
        const int32_t x2 = args->input2[walk.at2];
        args->output[n] = kind == KIND_ADD ? add_one(args, x1, x2) : mul_one(args, x1, x2);
        helia_broadcast_next(&walk);
    }
    return HELIA_STATUS_OK;
}

helia_status helia_add_s16_check(const helia_binary_s16_args *args)
{
    return binary_s16_check(args, KIND_ADD);
}

helia_status helia_add_s16_run(const helia_binary_s16_args *args)
{
    return binary_s16_run(args, KIND_ADD);
}

helia_status helia_add_s16(const helia_binary_s16_args *args)
{
    const helia_status status = helia_add_s16_check(args);
    return status != HELIA_STATUS_OK ? status : helia_add_s16_run(args);
}

helia_status helia_mul_s16_check(const helia_binary_s16_args *args)
{
    return binary_s16_check(args, KIND_MUL);
}

helia_status helia_mul_s16_run(const helia_binary_s16_args *args)
{
    return binary_s16_run(args, KIND_MUL);
}

helia_status helia_mul_s16(const helia_binary_s16_args *args)
{
    const helia_status status = helia_mul_s16_check(args);
    return status != HELIA_STATUS_OK ? status : helia_mul_s16_run(args);
}
