/*
 * ops_pool.c - int8 AVERAGE_POOL_2D and MAX_POOL_2D.
 *
 * A window covers the input rows origin .. origin + filter - 1 with origin =
 * output * stride - pad, cut to the input (padding is never counted).
 * AVERAGE: the sum of the covered int8 values divided by their count, rounded
 * to nearest with ties away from zero; MAX: the largest covered value. Then
 * the clamp to [act_min, act_max]. Input and output share one quantization,
 * so no rescaling happens. See docs/kernels.md, "int8 operator kernels".
 *
 * C99, no heap, no recursion.
 */
#include "helia_fixed.h"
#include "helia_ops.h"
#include "helia_ops_internal.h"

#define KIND_AVERAGE 0
#define KIND_MAX 1


static helia_status pool_check(const helia_pool_s8_args *args, int kind)
{
    int64_t input_count;
    int64_t output_count;
    int64_t reach_h;
    int64_t reach_w;
    int32_t oy;
    int32_t ox;
    if (args == NULL || args->input == NULL || args->output == NULL) {
        return HELIA_STATUS_NULL_POINTER;
    }
    if (args->batches < 1 || args->input_h < 1 || args->input_w < 1 || args->channels < 1 || args->output_h < 1 ||
        args->output_w < 1 || args->filter_h < 1 || args->filter_w < 1) {
        return HELIA_STATUS_BAD_SHAPE;
    }
    if (args->stride_h < 1 || args->stride_w < 1 || args->pad_top < 0 || args->pad_left < 0 ||
        !helia_ops_activation_ok(args->act_min, args->act_max)) {
        return HELIA_STATUS_BAD_PARAMETER;
    }
    input_count = (int64_t)args->batches * args->input_h * args->input_w * args->channels;
    output_count = (int64_t)args->batches * args->output_h * args->output_w * args->channels;
    reach_h = (int64_t)(args->output_h - 1) * args->stride_h + args->filter_h;
    reach_w = (int64_t)(args->output_w - 1) * args->stride_w + args->filter_w;
    if (input_count > INT32_MAX || output_count > INT32_MAX || reach_h > INT32_MAX || reach_w > INT32_MAX ||
        (int64_t)args->filter_h * args->filter_w > INT32_MAX / 256) {
        return HELIA_STATUS_SIZE_OVERFLOW;
    }
    if (kind == KIND_AVERAGE) {
        /* Every window must cover at least one input element (TFLite fails the invoke otherwise). */
        for (oy = 0; oy < args->output_h; ++oy) {
            const int64_t origin = (int64_t)oy * args->stride_h - args->pad_top;
            if (origin + args->filter_h <= 0 || origin >= args->input_h) {
                return HELIA_STATUS_BAD_PARAMETER;
            }
        }
        for (ox = 0; ox < args->output_w; ++ox) {
            const int64_t origin = (int64_t)ox * args->stride_w - args->pad_left;
            if (origin + args->filter_w <= 0 || origin >= args->input_w) {
                return HELIA_STATUS_BAD_PARAMETER;
            }
        }
    }
    if (helia_ops_overlap(args->output, (size_t)output_count, args->input, (size_t)input_count)) {
        return HELIA_STATUS_PARTIAL_OVERLAP;
    }
    return HELIA_STATUS_OK;
}

static helia_status pool_run(const helia_pool_s8_args *args, int kind)
{
    int32_t b;
    int32_t oy;
    int32_t ox;
    int32_t c;
    int32_t y;
    int32_t x;
    for (b = 0; b < args->batches; ++b) {
        for (oy = 0; oy < args->output_h; ++oy) {
            const int32_t origin_y = oy * args->stride_h - args->pad_top;
            const int32_t y_start = origin_y < 0 ? 0 : origin_y;
            const int32_t y_end = args->input_h - origin_y < args->filter_h ? args->input_h : origin_y + args->filter_h;
            for (ox = 0; ox < args->output_w; ++ox) {
                const int32_t origin_x = ox * args->stride_w - args->pad_left;
                const int32_t x_start = origin_x < 0 ? 0 : origin_x;
                const int32_t x_end = args->input_w - origin_x < args->filter_w ? args->input_w : origin_x + args->filter_w;
                int8_t *out = args->output + (((size_t)b * (size_t)args->output_h + (size_t)oy) *
                                                  (size_t)args->output_w + (size_t)ox) * (size_t)args->channels;
                for (c = 0; c < args->channels; ++c) {
                    int32_t acc = kind == KIND_AVERAGE ? 0 : -128;
                    int32_t count = 0;
                    for (y = y_start; y < y_end; ++y) {
                        const int8_t *row = args->input + (((size_t)b * (size_t)args->input_h + (size_t)y) *
                                                               (size_t)args->input_w) * (size_t)args->channels;
                        for (x = x_start; x < x_end; ++x) {
                            const int32_t value = row[(size_t)x * (size_t)args->channels + (size_t)c];
                            if (kind == KIND_AVERAGE) {
                                acc += value;
                            } else if (value > acc) {
                                acc = value;
                            }
                            ++count;
                        }
                    }
                    if (kind == KIND_AVERAGE) {
                        /* count >= 1 (checked); C division truncates, so this rounds half away from zero. */
                        acc = acc > 0 ? (acc + count / 2) / count : (acc - count / 2) / count;
                    }
                    out[c] = helia_clamp_s8(acc, args->act_min, args->act_max);
                }
            }
        }
    }
    return HELIA_STATUS_OK;
}

helia_status helia_average_pool2d_s8_check(const helia_pool_s8_args *args)
{
    return pool_check(args, KIND_AVERAGE);
}

helia_status helia_average_pool2d_s8_run(const helia_pool_s8_args *args)
{
    return pool_run(args, KIND_AVERAGE);
}

helia_status helia_average_pool2d_s8(const helia_pool_s8_args *args)
{
    const helia_status status = pool_check(args, KIND_AVERAGE);
    return status != HELIA_STATUS_OK ? status : pool_run(args, KIND_AVERAGE);
}

helia_status helia_max_pool2d_s8_check(const helia_pool_s8_args *args)
{
    return pool_check(args, KIND_MAX);
}

helia_status helia_max_pool2d_s8_run(const helia_pool_s8_args *args)
{
    return pool_run(args, KIND_MAX);
}

helia_status helia_max_pool2d_s8(const helia_pool_s8_args *args)
{
    const helia_status status = pool_check(args, KIND_MAX);
    return status != HELIA_STATUS_OK ? status : pool_run(args, KIND_MAX);
}
