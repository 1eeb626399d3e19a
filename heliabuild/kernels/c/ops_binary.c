/*
 * ops_binary.c - int8 SUB, MAXIMUM and MINIMUM with NumPy broadcasting (rank <= HELIA_OPS_MAX_RANK), on the
 * argument struct of ADD and MUL (helia_binary_s8_args).
 *
 * SUB is ADD's arithmetic with the second term subtracted, as LiteRT's reference Sub computes it:
 *   a = MBQM((x1 - zp1) << left_shift, m1, s1), b = MBQM((x2 - zp2) << left_shift, m2, s2)
 *   y = clamp(MBQM(a - b, m_out, s_out) + zp_out)
 * with the double-rounding MBQM (helia_fixed.h) and the multipliers of heliabuild.kernels.int8.add_params.
 * MAXIMUM and MINIMUM compare the raw codes (input and output quantized alike): no rescaling, no clamp.
 * PRELU (input2 is alpha): c = x - zp1; y = clamp(MBQM(c, input1_multiplier, input1_shift) + zp_out) for
 * c >= 0, else clamp(MBQM(c x (alpha - zp2), output_multiplier, output_shift) + zp_out), the multipliers of
 * float32(s1 / s_out) and float32(s1 x s_alpha / s_out) (heliabuild.kernels.int8.prelu_params), as LiteRT's
 * PreluPrepare and reference Prelu compute them.
 * C99, no heap, no recursion, no floating point.
 */
#include "helia_fixed.h"
#include "helia_ops.h"
#include "helia_ops_internal.h"

#define KIND_SUB 0
#define KIND_MAXIMUM 1
#define KIND_MINIMUM 2
#define KIND_PRELU 3

/* The flat counts of input 1, input 2 and the output once the three extents lists broadcast. */
static helia_status broadcast_counts(const helia_binary_s8_args *args, int32_t *counts)
{
    helia_status status;
    int32_t i;
    if (args->rank < 1 || args->rank > HELIA_OPS_MAX_RANK) {
        return HELIA_STATUS_BAD_SHAPE;
    }
    status = helia_ops_count(args->input1_dims, args->rank, &counts[0]);
    if (status == HELIA_STATUS_OK) {
        status = helia_ops_count(args->input2_dims, args->rank, &counts[1]);
    }
    if (status == HELIA_STATUS_OK) {
        status = helia_ops_count(args->output_dims, args->rank, &counts[2]);
    }
    for (i = 0; status == HELIA_STATUS_OK && i < args->rank; ++i) {
        const int32_t a = args->input1_dims[i];
        const int32_t b = args->input2_dims[i];
        const int32_t o = args->output_dims[i];
        if ((a != o && a != 1) || (b != o && b != 1) || o != (a > b ? a : b)) {
            status = HELIA_STATUS_SHAPE_MISMATCH;
        }
    }
    return status;
}

static helia_status check(const helia_binary_s8_args *args, int kind)
{
    int32_t counts[3];
    helia_status status;
    if (args == NULL || args->input1 == NULL || args->input2 == NULL || args->output == NULL) {
        return HELIA_STATUS_NULL_POINTER;
    }
    status = broadcast_counts(args, counts);
    if (status != HELIA_STATUS_OK) {
        return status;
    }
    if (kind == KIND_PRELU &&
        (!helia_ops_zero_point_ok(args->input1_zero_point) || !helia_ops_zero_point_ok(args->input2_zero_point) ||
         !helia_ops_zero_point_ok(args->output_zero_point) || !helia_ops_activation_ok(args->act_min, args->act_max) ||
         !helia_ops_multiplier_ok(args->input1_multiplier, args->input1_shift) ||
         !helia_ops_multiplier_ok(args->output_multiplier, args->output_shift))) {
        return HELIA_STATUS_BAD_PARAMETER;
    }
    if (kind == KIND_SUB &&
        (!helia_ops_zero_point_ok(args->input1_zero_point) || !helia_ops_zero_point_ok(args->input2_zero_point) ||
         !helia_ops_zero_point_ok(args->output_zero_point) || !helia_ops_activation_ok(args->act_min, args->act_max) ||
         args->left_shift < 0 || args->left_shift > 22 ||
         !helia_ops_multiplier_ok(args->input1_multiplier, args->input1_shift) || args->input1_shift > 0 ||
         !helia_ops_multiplier_ok(args->input2_multiplier, args->input2_shift) || args->input2_shift > 0 ||
         !helia_ops_multiplier_ok(args->output_multiplier, args->output_shift) || args->output_shift > 0)) {
        return HELIA_STATUS_BAD_PARAMETER;
    }
    /* The output may be exactly an input of the output's size (in place); any other overlap is refused. */
    if ((helia_ops_overlap(args->output, (size_t)counts[2], args->input1, (size_t)counts[0]) &&
         !((const void *)args->output == (const void *)args->input1 && counts[0] == counts[2])) ||
        (helia_ops_overlap(args->output, (size_t)counts[2], args->input2, (size_t)counts[1]) &&
         !((const void *)args->output == (const void *)args->input2 && counts[1] == counts[2]))) {
        return HELIA_STATUS_PARTIAL_OVERLAP;
    }
    return HELIA_STATUS_OK;
}

static int8_t sub_one(const helia_binary_s8_args *args, int32_t x1, int32_t x2)
{
    const int32_t a = helia_mbqm_double((x1 - args->input1_zero_point) * (INT32_C(1) << args->left_shift),
                                        args->input1_multiplier, args->input1_shift);
    const int32_t b = helia_mbqm_double((x2 - args->input2_zero_point) * (INT32_C(1) << args->left_shift),
                                        args->input2_multiplier, args->input2_shift);
    const int32_t difference = helia_mbqm_double(a - b, args->output_multiplier, args->output_shift);
    return helia_clamp_s8(helia_wrapping_add_s32(difference, args->output_zero_point), args->act_min,
                          args->act_max);
}

static int8_t prelu_one(const helia_binary_s8_args *args, int32_t x, int32_t alpha)
{
    const int32_t centred = x - args->input1_zero_point;
    const int32_t scaled =
        centred >= 0 ? helia_mbqm_double(centred, args->input1_multiplier, args->input1_shift)
                     : helia_mbqm_double(centred * (alpha - args->input2_zero_point), args->output_multiplier,
                                         args->output_shift);
    return helia_clamp_s8(helia_wrapping_add_s32(scaled, args->output_zero_point), args->act_min, args->act_max);
}

static void run(const helia_binary_s8_args *args, int kind)
{
    int32_t stride1[HELIA_OPS_MAX_RANK];
    int32_t stride2[HELIA_OPS_MAX_RANK];
    int32_t index[HELIA_OPS_MAX_RANK];
    int32_t step1 = 1;
    int32_t step2 = 1;
    int32_t offset1 = 0;
    int32_t offset2 = 0;
    int32_t count = 1;
    int32_t i;
    int32_t n;
    for (i = args->rank - 1; i >= 0; --i) {
        stride1[i] = args->input1_dims[i] == 1 ? 0 : step1;
        stride2[i] = args->input2_dims[i] == 1 ? 0 : step2;
        step1 *= args->input1_dims[i];
        step2 *= args->input2_dims[i];
        count *= args->output_dims[i];
        index[i] = 0;
    }
    for (n = 0; n < count; ++n) {
        const int8_t x1 = args->input1[offset1];
        const int8_t x2 = args->input2[offset2];
        if (kind == KIND_SUB) {
            args->output[n] = sub_one(args, x1, x2);
        } else if (kind == KIND_PRELU) {
            args->output[n] = prelu_one(args, x1, x2);
        } else if (kind == KIND_MAXIMUM) {
            args->output[n] = x1 > x2 ? x1 : x2;
        } else {
            args->output[n] = x1 < x2 ? x1 : x2;
        }
        /* Advance the output index like an odometer, moving both input offsets along. */
        for (i = args->rank - 1; i >= 0; --i) {
            ++index[i];
            offset1 += stride1[i];
            offset2 += stride2[i];
            if (index[i] < args->output_dims[i]) {
                break;
            }
            offset1 -= stride1[i] * index[i];
            offset2 -= stride2[i] * index[i];
            index[i] = 0;
        }
    }
}

helia_status helia_sub_s8_check(const helia_binary_s8_args *args)
{
    return check(args, KIND_SUB);
}

helia_status helia_sub_s8_run(const helia_binary_s8_args *args)
{
    run(args, KIND_SUB);
    return HELIA_STATUS_OK;
}

helia_status helia_sub_s8(const helia_binary_s8_args *args)
{
    const helia_status status = check(args, KIND_SUB);
    return status != HELIA_STATUS_OK ? status : helia_sub_s8_run(args);
}

helia_status helia_maximum_s8_check(const helia_binary_s8_args *args)
{
    return check(args, KIND_MAXIMUM);
}

helia_status helia_maximum_s8_run(const helia_binary_s8_args *args)
{
    run(args, KIND_MAXIMUM);
    return HELIA_STATUS_OK;
}

helia_status helia_maximum_s8(const helia_binary_s8_args *args)
{
    const helia_status status = check(args, KIND_MAXIMUM);
    return status != HELIA_STATUS_OK ? status : helia_maximum_s8_run(args);
}

helia_status helia_minimum_s8_check(const helia_binary_s8_args *args)
{
    return check(args, KIND_MINIMUM);
}

helia_status helia_minimum_s8_run(const helia_binary_s8_args *args)
{
    run(args, KIND_MINIMUM);
    return HELIA_STATUS_OK;
}

helia_status helia_minimum_s8(const helia_binary_s8_args *args)
{
    const helia_status status = check(args, KIND_MINIMUM);
    return status != HELIA_STATUS_OK ? status : helia_minimum_s8_run(args);
}

helia_status helia_prelu_s8_check(const helia_binary_s8_args *args)
{
    return check(args, KIND_PRELU);
}

helia_status helia_prelu_s8_run(const helia_binary_s8_args *args)
{
    run(args, KIND_PRELU);
    return HELIA_STATUS_OK;
}

helia_status helia_prelu_s8(const helia_binary_s8_args *args)
{
    const helia_status status = check(args, KIND_PRELU);
    return status != HELIA_STATUS_OK ? status : helia_prelu_s8_run(args);
}
