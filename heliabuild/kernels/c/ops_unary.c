/*
 * ops_unary.c - int8 requantization: standalone RELU, RELU6 and RELU_N1_TO_1, and int8 -> int8 QUANTIZE.
 *
 * Every element: y = clamp(MBQM(x - zp_in, m, s) + zp_out, act_min, act_max), with m and s the quantized
 * multiplier of input_scale / output_scale and MBQM the double-rounding MultiplyByQuantizedMultiplier
 * (helia_fixed.h), as LiteRT's reference kernels compute ReluX and Requantize. The bounds are the
 * activation's (heliabuild.kernels.int8.activation_range; QUANTIZE: [-128, 127]).
 * LEAKY_RELU: c = x - zp_in; y = clamp(MBQM(c, identity) + zp_out) for c >= 0, else clamp(MBQM(c, alpha) +
 * zp_out), the multipliers of float32(in_scale / out_scale) and float32(in_scale x alpha / out_scale), as
 * LiteRT's LeakyReluPrepare computes them. See docs/kernels.md.
 *
 * C99, no heap, no recursion, no libm.
 */
#include "helia_fixed.h"
#include "helia_ops.h"
#include "helia_ops_internal.h"

helia_status helia_requantize_s8_check(const helia_requantize_s8_args *args)
{
    if (args == NULL || args->input == NULL || args->output == NULL) {
        return HELIA_STATUS_NULL_POINTER;
    }
    if (args->count < 1) {
        return HELIA_STATUS_BAD_SHAPE;
    }
    if (!helia_ops_zero_point_ok(args->input_zero_point) || !helia_ops_zero_point_ok(args->output_zero_point) ||
        !helia_ops_activation_ok(args->act_min, args->act_max) ||
        !helia_ops_multiplier_ok(args->multiplier, args->shift)) {
        return HELIA_STATUS_BAD_PARAMETER;
    }
    /* In place is allowed (each element is read before it is written); any other overlap is refused. */
    if (helia_ops_overlap(args->output, (size_t)args->count, args->input, (size_t)args->count) &&
        (const void *)args->output != (const void *)args->input) {
        return HELIA_STATUS_PARTIAL_OVERLAP;
    }
    return HELIA_STATUS_OK;
}

helia_status helia_requantize_s8_run(const helia_requantize_s8_args *args)
{
    int32_t i;
    for (i = 0; i < args->count; ++i) {
        const int32_t centred = (int32_t)args->input[i] - args->input_zero_point;
        const int32_t scaled = helia_mbqm_double(centred, args->multiplier, args->shift);
        args->output[i] = helia_clamp_s8(scaled + args->output_zero_point, args->act_min, args->act_max);
    }
    return HELIA_STATUS_OK;
}

helia_status helia_requantize_s8(const helia_requantize_s8_args *args)
{
    const helia_status status = helia_requantize_s8_check(args);
    return status != HELIA_STATUS_OK ? status : helia_requantize_s8_run(args);
}

/* ---- LEAKY_RELU: x >= zp_in ? identity rescale : alpha rescale ------------------------------------- */

helia_status helia_leaky_relu_s8_check(const helia_leaky_relu_s8_args *args)
{
    if (args == NULL || args->input == NULL || args->output == NULL) {
        return HELIA_STATUS_NULL_POINTER;
    }
    if (args->count < 1) {
        return HELIA_STATUS_BAD_SHAPE;
    }
    if (!helia_ops_zero_point_ok(args->input_zero_point) || !helia_ops_zero_point_ok(args->output_zero_point) ||
        !helia_ops_multiplier_ok(args->identity_multiplier, args->identity_shift) ||
        !helia_ops_multiplier_ok(args->alpha_multiplier, args->alpha_shift)) {
        return HELIA_STATUS_BAD_PARAMETER;
    }
    if (helia_ops_overlap(args->output, (size_t)args->count, args->input, (size_t)args->count) &&
        (const void *)args->output != (const void *)args->input) {
        return HELIA_STATUS_PARTIAL_OVERLAP;
    }
    return HELIA_STATUS_OK;
}

helia_status helia_leaky_relu_s8_run(const helia_leaky_relu_s8_args *args)
{
    int32_t i;
    for (i = 0; i < args->count; ++i) {
        const int32_t centred = (int32_t)args->input[i] - args->input_zero_point;
        const int32_t scaled =
            centred >= 0 ? helia_mbqm_double(centred, args->identity_multiplier, args->identity_shift)
                         : helia_mbqm_double(centred, args->alpha_multiplier, args->alpha_shift);
        args->output[i] = helia_clamp_s8(scaled + args->output_zero_point, -128, 127);
    }
    return HELIA_STATUS_OK;
}

helia_status helia_leaky_relu_s8(const helia_leaky_relu_s8_args *args)
{
    const helia_status status = helia_leaky_relu_s8_check(args);
    return status != HELIA_STATUS_OK ? status : helia_leaky_relu_s8_run(args);
}
