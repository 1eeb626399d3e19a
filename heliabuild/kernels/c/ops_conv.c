/*
 * ops_conv.c - int8 FULLY_CONNECTED, CONV_2D and DEPTHWISE_CONV_2D.
 *
 * Per output element: acc = sum over taps of filter * (input - input_zero_point)
 * (padding taps contribute nothing), plus bias (int32, wrapping), then
 * MultiplyByQuantizedMultiplier with the channel's (or the tensor's)
 * multiplier and shift, plus output_zero_point, clamped to [act_min, act_max].
 * The argument checks bound the number of taps so the sum of products cannot
 * overflow int32. LiteRT's reference kernels round the multiply differently:
 * FULLY_CONNECTED once, CONV_2D and DEPTHWISE_CONV_2D twice (helia_fixed.h);
 * each kernel here does what its LiteRT counterpart does. See docs/kernels.md,
 * "int8 operator kernels".
 *
 * Each run entry has a portable C99 body (the reference, what the host builds)
 * and, on a target with integer MVE, a Helium body (ops_conv_mve.c) that gives the
 * same bytes; the Helium body needs the weight sums (and CONV_2D's scratch row),
 * else the portable body runs. See docs/kernels.md, "Helium (MVE) bodies".
 *
 * C99, no heap, no recursion.
 */
#include "helia_fixed.h"
#include "helia_ops.h"
#include "helia_ops_internal.h"

int32_t helia_ops_mbqm_double(int32_t x, int32_t multiplier, int32_t shift)
{
    return helia_mbqm_double(x, multiplier, shift);
}

int32_t helia_ops_mbqm_single(int32_t x, int32_t multiplier, int32_t shift)
{
    return helia_mbqm_single(x, multiplier, shift);
}

int32_t helia_ops_rounding_divide_by_pot(int32_t x, int32_t exponent)
{
    return helia_rounding_divide_by_pot(x, exponent);
}

int32_t helia_ops_sat_rounding_doubling_high_mul(int32_t a, int32_t b)
{
    return helia_sat_rounding_doubling_high_mul(a, b);
}

/* The rounding LiteRT's reference kernel of each operator uses (see docs/kernels.md). */
#define ROUND_SINGLE 1
#define ROUND_DOUBLE 2

static int8_t requantize(int rounding, int32_t acc, const int32_t *bias, const int32_t *multipliers, const int32_t *shifts,
                         int32_t quant_count, int32_t channel, int32_t output_zero_point, int32_t act_min,
                         int32_t act_max)
{
    const int32_t q = quant_count == 1 ? 0 : channel;
    int32_t value = bias != NULL ? helia_wrapping_add_s32(acc, bias[channel]) : acc;
    value = rounding == ROUND_SINGLE ? helia_mbqm_single(value, multipliers[q], shifts[q])
                                     : helia_mbqm_double(value, multipliers[q], shifts[q]);
    /* Adding the zero point wraps at the int32 extremes, as TFLite's int32 add does on every target. */
    value = helia_wrapping_add_s32(value, output_zero_point);
    return helia_clamp_s8(value, act_min, act_max);
}

/* ---- FULLY_CONNECTED ------------------------------------------------------------------------- */

helia_status helia_fully_connected_s8_check(const helia_fully_connected_s8_args *args)
{
    int64_t input_count;
    int64_t filter_count;
    int64_t output_count;
    size_t out_bytes;
    if (args == NULL || args->input == NULL || args->filter == NULL || args->multipliers == NULL ||
        args->shifts == NULL || args->output == NULL) {
        return HELIA_STATUS_NULL_POINTER;
    }
    if (args->batches < 1 || args->depth < 1 || args->output_depth < 1) {
        return HELIA_STATUS_BAD_SHAPE;
    }
    input_count = (int64_t)args->batches * args->depth;
    filter_count = (int64_t)args->output_depth * args->depth;
    output_count = (int64_t)args->batches * args->output_depth;
    if (input_count > INT32_MAX || filter_count > INT32_MAX || output_count > INT32_MAX ||
        args->depth > INT32_MAX / HELIA_OPS_MAX_PRODUCT) {
        return HELIA_STATUS_SIZE_OVERFLOW;
    }
    if ((args->quant_count != 1 && args->quant_count != args->output_depth) ||
        !helia_ops_zero_point_ok(args->input_zero_point) || !helia_ops_zero_point_ok(args->output_zero_point) ||
        !helia_ops_activation_ok(args->act_min, args->act_max) ||
        helia_ops_multipliers_ok(args->multipliers, args->shifts, args->quant_count) != HELIA_STATUS_OK) {
        return HELIA_STATUS_BAD_PARAMETER;
    }
    out_bytes = (size_t)output_count;
    if (helia_ops_overlap(args->output, out_bytes, args->input, (size_t)input_count) ||
        helia_ops_overlap(args->output, out_bytes, args->filter, (size_t)filter_count) ||
        (args->bias != NULL &&
         helia_ops_overlap(args->output, out_bytes, args->bias, (size_t)args->output_depth * sizeof(int32_t))) ||
        helia_ops_overlap(args->output, out_bytes, args->multipliers, (size_t)args->quant_count * sizeof(int32_t)) ||
        helia_ops_overlap(args->output, out_bytes, args->shifts, (size_t)args->quant_count * sizeof(int32_t)) ||
        (args->weight_sums != NULL && helia_ops_overlap(args->output, out_bytes, args->weight_sums,
                                                        (size_t)args->output_depth * sizeof(int32_t)))) {
        return HELIA_STATUS_PARTIAL_OVERLAP;
    }
    return HELIA_STATUS_OK;
}

static void fully_connected_portable(const helia_fully_connected_s8_args *args)
{
    int32_t b;
    int32_t o;
    int32_t d;
    for (b = 0; b < args->batches; ++b) {
        const int8_t *row = args->input + (size_t)b * (size_t)args->depth;
        int8_t *out = args->output + (size_t)b * (size_t)args->output_depth;
        for (o = 0; o < args->output_depth; ++o) {
            const int8_t *weights = args->filter + (size_t)o * (size_t)args->depth;
            int32_t acc = 0;
            for (d = 0; d < args->depth; ++d) {
                acc += (int32_t)weights[d] * ((int32_t)row[d] - args->input_zero_point);
            }
            out[o] = requantize(ROUND_SINGLE, acc, args->bias, args->multipliers, args->shifts, args->quant_count, o,
                                args->output_zero_point, args->act_min, args->act_max);
        }
    }
}

helia_status helia_fully_connected_s8_run(const helia_fully_connected_s8_args *args)
{
#if HELIA_OPS_MVE
    if (args->weight_sums != NULL) {
        helia_ops_fully_connected_mve(args);
        return HELIA_STATUS_OK;
    }
#endif
    fully_connected_portable(args);
    return HELIA_STATUS_OK;
}

helia_status helia_fully_connected_s8(const helia_fully_connected_s8_args *args)
{
    const helia_status status = helia_fully_connected_s8_check(args);
    return status != HELIA_STATUS_OK ? status : helia_fully_connected_s8_run(args);
}

/* ---- CONV_2D / DEPTHWISE_CONV_2D ------------------------------------------------------------- */

static helia_status conv_check(const helia_conv_s8_args *args, int depthwise)
{
    int64_t input_count;
    int64_t filter_count;
    int64_t output_count;
    int64_t taps;
    int64_t reach_h;
    int64_t reach_w;
    size_t out_bytes;
    if (args == NULL || args->input == NULL || args->filter == NULL || args->multipliers == NULL ||
        args->shifts == NULL || args->output == NULL) {
        return HELIA_STATUS_NULL_POINTER;
    }
    if (args->batches < 1 || args->input_h < 1 || args->input_w < 1 || args->input_c < 1 || args->filter_h < 1 ||
        args->filter_w < 1 || args->output_h < 1 || args->output_w < 1 || args->output_c < 1) {
        return HELIA_STATUS_BAD_SHAPE;
    }
    if (depthwise && (args->depth_multiplier < 1 ||
                      (int64_t)args->input_c * args->depth_multiplier != (int64_t)args->output_c)) {
        return HELIA_STATUS_SHAPE_MISMATCH;
    }
    if (args->stride_h < 1 || args->stride_w < 1 || args->dilation_h < 1 || args->dilation_w < 1 ||
        args->pad_top < 0 || args->pad_left < 0) {
        return HELIA_STATUS_BAD_PARAMETER;
    }
    input_count = (int64_t)args->batches * args->input_h * args->input_w * args->input_c;
    output_count = (int64_t)args->batches * args->output_h * args->output_w * args->output_c;
    filter_count = (int64_t)args->filter_h * args->filter_w * (depthwise ? args->output_c : args->input_c) *
                   (depthwise ? 1 : args->output_c);
    taps = (int64_t)args->filter_h * args->filter_w * (depthwise ? 1 : args->input_c);
    /* Every index the loops form, (output - 1) * stride + (filter - 1) * dilation, must fit int32. */
    reach_h = (int64_t)(args->output_h - 1) * args->stride_h + (int64_t)(args->filter_h - 1) * args->dilation_h;
    reach_w = (int64_t)(args->output_w - 1) * args->stride_w + (int64_t)(args->filter_w - 1) * args->dilation_w;
    if (input_count > INT32_MAX || output_count > INT32_MAX || filter_count > INT32_MAX ||
        taps > INT32_MAX / HELIA_OPS_MAX_PRODUCT || reach_h > INT32_MAX || reach_w > INT32_MAX) {
        return HELIA_STATUS_SIZE_OVERFLOW;
    }
    if ((args->quant_count != 1 && args->quant_count != args->output_c) ||
        !helia_ops_zero_point_ok(args->input_zero_point) || !helia_ops_zero_point_ok(args->output_zero_point) ||
        !helia_ops_activation_ok(args->act_min, args->act_max) ||
        helia_ops_multipliers_ok(args->multipliers, args->shifts, args->quant_count) != HELIA_STATUS_OK) {
        return HELIA_STATUS_BAD_PARAMETER;
    }
    out_bytes = (size_t)output_count;
    if (helia_ops_overlap(args->output, out_bytes, args->input, (size_t)input_count) ||
        helia_ops_overlap(args->output, out_bytes, args->filter, (size_t)filter_count) ||
        (args->bias != NULL &&
         helia_ops_overlap(args->output, out_bytes, args->bias, (size_t)args->output_c * sizeof(int32_t))) ||
        helia_ops_overlap(args->output, out_bytes, args->multipliers, (size_t)args->quant_count * sizeof(int32_t)) ||
        helia_ops_overlap(args->output, out_bytes, args->shifts, (size_t)args->quant_count * sizeof(int32_t)) ||
        (args->weight_sums != NULL &&
         helia_ops_overlap(args->output, out_bytes, args->weight_sums, (size_t)args->output_c * sizeof(int32_t)))) {
        return HELIA_STATUS_PARTIAL_OVERLAP;
    }
    if (!depthwise && args->scratch != NULL) {
        const size_t scratch = (size_t)(args->scratch_bytes > 0 ? args->scratch_bytes : 0);
        if (args->scratch_bytes < helia_conv2d_s8_scratch_bytes(args)) {
            return HELIA_STATUS_BAD_PARAMETER;
        }
        if (helia_ops_overlap(args->scratch, scratch, args->input, (size_t)input_count) ||
            helia_ops_overlap(args->scratch, scratch, args->output, out_bytes) ||
            helia_ops_overlap(args->scratch, scratch, args->filter, (size_t)filter_count)) {
            return HELIA_STATUS_PARTIAL_OVERLAP;
        }
    }
    return HELIA_STATUS_OK;
}

int32_t helia_conv2d_s8_scratch_bytes(const helia_conv_s8_args *args)
{
    return args->filter_h * args->filter_w * args->input_c;
}

helia_status helia_conv2d_s8_check(const helia_conv_s8_args *args)
{
    return conv_check(args, 0);
}

helia_status helia_conv2d_1x1_s8_check(const helia_conv_s8_args *args)
{
    const helia_status status = conv_check(args, 0);
    if (status != HELIA_STATUS_OK) {
        return status;
    }
    return helia_ops_conv_reads_in_place(args) ? HELIA_STATUS_OK : HELIA_STATUS_BAD_PARAMETER;
}

helia_status helia_depthwise_conv2d_s8_check(const helia_conv_s8_args *args)
{
    return conv_check(args, 1);
}

static void conv2d_portable(const helia_conv_s8_args *args)
{
    int32_t b;
    int32_t oy;
    int32_t ox;
    int32_t oc;
    int32_t fy;
    int32_t fx;
    int32_t ic;
    for (b = 0; b < args->batches; ++b) {
        for (oy = 0; oy < args->output_h; ++oy) {
            const int32_t origin_y = oy * args->stride_h - args->pad_top;
            for (ox = 0; ox < args->output_w; ++ox) {
                const int32_t origin_x = ox * args->stride_w - args->pad_left;
                int8_t *out = args->output +
                              (((size_t)b * (size_t)args->output_h + (size_t)oy) * (size_t)args->output_w +
                               (size_t)ox) * (size_t)args->output_c;
                for (oc = 0; oc < args->output_c; ++oc) {
                    int32_t acc = 0;
                    for (fy = 0; fy < args->filter_h; ++fy) {
                        const int32_t iy = origin_y + fy * args->dilation_h;
                        if (iy < 0 || iy >= args->input_h) {
                            continue;
                        }
                        for (fx = 0; fx < args->filter_w; ++fx) {
                            const int32_t ix = origin_x + fx * args->dilation_w;
                            const int8_t *in;
                            const int8_t *weights;
                            if (ix < 0 || ix >= args->input_w) {
                                continue;
                            }
                            in = args->input + (((size_t)b * (size_t)args->input_h + (size_t)iy) *
                                                    (size_t)args->input_w + (size_t)ix) * (size_t)args->input_c;
                            weights = args->filter + (((size_t)oc * (size_t)args->filter_h + (size_t)fy) *
                                                          (size_t)args->filter_w + (size_t)fx) * (size_t)args->input_c;
                            for (ic = 0; ic < args->input_c; ++ic) {
                                acc += (int32_t)weights[ic] * ((int32_t)in[ic] - args->input_zero_point);
                            }
                        }
                    }
                    out[oc] = requantize(ROUND_DOUBLE, acc, args->bias, args->multipliers, args->shifts, args->quant_count, oc,
                                         args->output_zero_point, args->act_min, args->act_max);
                }
            }
        }
    }
}

helia_status helia_conv2d_1x1_s8_run(const helia_conv_s8_args *args)
{
#if HELIA_OPS_MVE
    if (args->weight_sums != NULL) {
        helia_ops_conv2d_in_place_mve(args);
        return HELIA_STATUS_OK;
    }
#endif
    conv2d_portable(args);
    return HELIA_STATUS_OK;
}

helia_status helia_conv2d_1x1_s8(const helia_conv_s8_args *args)
{
    const helia_status status = helia_conv2d_1x1_s8_check(args);
    return status != HELIA_STATUS_OK ? status : helia_conv2d_1x1_s8_run(args);
}

helia_status helia_conv2d_s8_run(const helia_conv_s8_args *args)
{
#if HELIA_OPS_MVE
    if (args->weight_sums != NULL && args->scratch != NULL) {
        helia_ops_conv2d_im2col_mve(args);
        return HELIA_STATUS_OK;
    }
#endif
    conv2d_portable(args);
    return HELIA_STATUS_OK;
}

helia_status helia_conv2d_s8(const helia_conv_s8_args *args)
{
    const helia_status status = conv_check(args, 0);
    return status != HELIA_STATUS_OK ? status : helia_conv2d_s8_run(args);
}

static void depthwise_conv2d_portable(const helia_conv_s8_args *args)
{
    int32_t b;
    int32_t oy;
    int32_t ox;
    int32_t oc;
    int32_t fy;
    int32_t fx;
    for (b = 0; b < args->batches; ++b) {
        for (oy = 0; oy < args->output_h; ++oy) {
            const int32_t origin_y = oy * args->stride_h - args->pad_top;
            for (ox = 0; ox < args->output_w; ++ox) {
                const int32_t origin_x = ox * args->stride_w - args->pad_left;
                int8_t *out = args->output +
                              (((size_t)b * (size_t)args->output_h + (size_t)oy) * (size_t)args->output_w +
                               (size_t)ox) * (size_t)args->output_c;
                for (oc = 0; oc < args->output_c; ++oc) {
                    const int32_t ic = oc / args->depth_multiplier;
                    int32_t acc = 0;
                    for (fy = 0; fy < args->filter_h; ++fy) {
                        const int32_t iy = origin_y + fy * args->dilation_h;
                        if (iy < 0 || iy >= args->input_h) {
                            continue;
                        }
                        for (fx = 0; fx < args->filter_w; ++fx) {
                            const int32_t ix = origin_x + fx * args->dilation_w;
                            int32_t in;
                            int32_t weight;
                            if (ix < 0 || ix >= args->input_w) {
                                continue;
                            }
                            in = args->input[(((size_t)b * (size_t)args->input_h + (size_t)iy) * (size_t)args->input_w +
                                              (size_t)ix) * (size_t)args->input_c + (size_t)ic];
                            weight = args->filter[((size_t)fy * (size_t)args->filter_w + (size_t)fx) *
                                                      (size_t)args->output_c + (size_t)oc];
                            acc += weight * (in - args->input_zero_point);
                        }
                    }
                    out[oc] = requantize(ROUND_DOUBLE, acc, args->bias, args->multipliers, args->shifts, args->quant_count, oc,
                                         args->output_zero_point, args->act_min, args->act_max);
                }
            }
        }
    }
}

helia_status helia_depthwise_conv2d_s8_run(const helia_conv_s8_args *args)
{
#if HELIA_OPS_MVE
    if (args->weight_sums != NULL && args->depth_multiplier == 1) {
        helia_ops_depthwise_conv2d_mve(args);
        return HELIA_STATUS_OK;
    }
#endif
    depthwise_conv2d_portable(args);
    return HELIA_STATUS_OK;
}

helia_status helia_depthwise_conv2d_s8(const helia_conv_s8_args *args)
{
    const helia_status status = conv_check(args, 1);
    return status != HELIA_STATUS_OK ? status : helia_depthwise_conv2d_s8_run(args);
}
