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
 * On a target with integer MVE the run entries take a Helium body (below) that gives the same bytes: MAX
 * across sixteen channels in int8 lanes (VMAX), AVERAGE across eight in int16 lanes (a window of at most 256
 * values sums exactly there: 256 * -128 = -32768) and its rounded division as a multiply by ceil(2^32 / count)
 * (docs/kernels.md, "Helium (MVE) bodies").
 *
 * C99, no heap, no recursion.
 */
#include "helia_fixed.h"
#include "helia_ops.h"
#include "helia_ops_internal.h"

#if HELIA_OPS_MVE
#include <arm_mve.h>
#endif

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

/* The input rows [y_start, y_end) and columns [x_start, x_end) one output pixel's window covers. */
typedef struct pool_window {
    int32_t y_start;
    int32_t y_end;
    int32_t x_start;
    int32_t x_end;
} pool_window;

static pool_window pool_window_at(const helia_pool_s8_args *args, int32_t oy, int32_t ox)
{
    const int32_t origin_y = oy * args->stride_h - args->pad_top;
    const int32_t origin_x = ox * args->stride_w - args->pad_left;
    pool_window window;
    window.y_start = origin_y < 0 ? 0 : origin_y;
    window.y_end = args->input_h - origin_y < args->filter_h ? args->input_h : origin_y + args->filter_h;
    window.x_start = origin_x < 0 ? 0 : origin_x;
    window.x_end = args->input_w - origin_x < args->filter_w ? args->input_w : origin_x + args->filter_w;
    return window;
}

static void pool_pixel(const helia_pool_s8_args *args, int kind, const int8_t *image, const pool_window *window,
                       int8_t *out)
{
    int32_t c;
    int32_t y;
    int32_t x;
    for (c = 0; c < args->channels; ++c) {
        int32_t acc = kind == KIND_AVERAGE ? 0 : -128;
        int32_t count = 0;
        for (y = window->y_start; y < window->y_end; ++y) {
            const int8_t *row = image + (size_t)y * (size_t)args->input_w * (size_t)args->channels;
            for (x = window->x_start; x < window->x_end; ++x) {
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

#if HELIA_OPS_MVE
/* MAX of sixteen channels at a time (the tail's lanes load under VCTP and are never stored). */
static void max_pool_pixel_mve(const helia_pool_s8_args *args, const int8_t *first, int32_t rows, int32_t columns,
                               int8_t *out)
{
    const size_t channels = (size_t)args->channels;
    const size_t row_step = (size_t)args->input_w * channels;
    int32_t c;
    int32_t y;
    int32_t x;
    for (c = 0; c < args->channels; c += 16) {
        const mve_pred16_t lanes = vctp8q((uint32_t)(args->channels - c));
        int8x16_t acc = vdupq_n_s8(-128);
        const int8_t *row = first + c;
        for (y = 0; y < rows; ++y, row += row_step) {
            const int8_t *in = row;
            for (x = 0; x < columns; ++x, in += channels) {
                acc = vmaxq_s8(acc, vldrbq_z_s8(in, lanes));
            }
        }
        acc = vminq_s8(vmaxq_s8(acc, vdupq_n_s8((int8_t)args->act_min)), vdupq_n_s8((int8_t)args->act_max));
        vstrbq_p_s8(out + c, acc, lanes);
    }
}

/* round(sum / count), ties away from zero, in four lanes: the magnitude plus count / 2 times
 * ceil(2^32 / count), high word (VMULH), which is floor(m / count) exactly for m * count < 2^32 (here m < 2^16,
 * count <= 256); the sign put back. */
static inline int32x4_t rounded_quotient(int32x4_t sum, int32_t count, uint32x4_t reciprocal)
{
    const int32x4_t magnitude = vaddq_n_s32(vabsq_s32(sum), count / 2);
    const int32x4_t quotient = vreinterpretq_s32_u32(vmulhq_u32(vreinterpretq_u32_s32(magnitude), reciprocal));
    return count == 1 ? sum : vpselq_s32(vnegq_s32(quotient), quotient, vcmpltq_n_s32(sum, 0));
}

/* AVERAGE of eight channels at a time, summed in int16 lanes (at most 256 values in the window). */
static void average_pool_pixel_mve(const helia_pool_s8_args *args, const int8_t *first, int32_t rows,
                                   int32_t columns, int8_t *out)
{
    const size_t channels = (size_t)args->channels;
    const size_t row_step = (size_t)args->input_w * channels;
    const int32_t count = rows * columns;
    const uint32x4_t reciprocal = vdupq_n_u32(count > 1 ? 0xFFFFFFFFu / (uint32_t)count + 1u : 0u);
    const int32x4_t act_min = vdupq_n_s32(args->act_min);
    const int32x4_t act_max = vdupq_n_s32(args->act_max);
    int32_t c;
    int32_t y;
    int32_t x;
    for (c = 0; c < args->channels; c += 8) {
        const mve_pred16_t lanes = vctp16q((uint32_t)(args->channels - c));
        int16x8_t acc = vdupq_n_s16(0);
        const int8_t *row = first + c;
        int32x4_t even;
        int32x4_t odd;
        for (y = 0; y < rows; ++y, row += row_step) {
            const int8_t *in = row;
            for (x = 0; x < columns; ++x, in += channels) {
                acc = vaddq_s16(acc, vldrbq_z_s16(in, lanes));
            }
        }
        even = vminq_s32(vmaxq_s32(rounded_quotient(vmovlbq_s16(acc), count, reciprocal), act_min), act_max);
        odd = vminq_s32(vmaxq_s32(rounded_quotient(vmovltq_s16(acc), count, reciprocal), act_min), act_max);
        vstrbq_p_s16(out + c, vmovntq_s32(vmovnbq_s32(vdupq_n_s16(0), even), odd), lanes);
    }
}
#endif

static helia_status pool_run(const helia_pool_s8_args *args, int kind)
{
    const size_t image = (size_t)args->input_h * (size_t)args->input_w * (size_t)args->channels;
#if HELIA_OPS_MVE
    /* The int16 sums of AVERAGE are exact for windows of at most 256 values. */
    const int vector = kind == KIND_MAX || (int64_t)args->filter_h * args->filter_w <= 256;
#endif
    int8_t *out = args->output;
    int32_t b;
    int32_t oy;
    int32_t ox;
    for (b = 0; b < args->batches; ++b) {
        const int8_t *input = args->input + (size_t)b * image;
        for (oy = 0; oy < args->output_h; ++oy) {
            for (ox = 0; ox < args->output_w; ++ox, out += args->channels) {
                const pool_window window = pool_window_at(args, oy, ox);
#if HELIA_OPS_MVE
                if (vector) {
                    const int32_t rows = window.y_end > window.y_start ? window.y_end - window.y_start : 0;
                    const int32_t columns = window.x_end > window.x_start ? window.x_end - window.x_start : 0;
                    const int8_t *first =
                        input + ((size_t)window.y_start * (size_t)args->input_w + (size_t)window.x_start) *
                                    (size_t)args->channels;
                    if (kind == KIND_MAX) {
                        max_pool_pixel_mve(args, first, rows, columns, out);
                    } else {
                        average_pool_pixel_mve(args, first, rows, columns, out);
                    }
                    continue;
                }
#endif
                pool_pixel(args, kind, input, &window, out);
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
