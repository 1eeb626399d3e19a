/*
 * ops_depthwise_plane_mve.c - the Helium body of int8 DEPTHWISE_CONV_2D 3x3 (depth multiplier 1, dilation 1)
 * that runs one channel's plane at a time: four output pixels of one channel per vector, along the axis whose
 * stride is 1, so that each tap is one VLDRB.S32 and one VMLA by the tap's weight, a scalar. Across channels
 * (ops_conv_mve.c's depthwise bodies) MVE has no vector-by-vector multiply-accumulate, and every tap costs a
 * multiply and an add.
 *
 * A tile of eight channels' input is copied into eight planes on the stack, the vector axis contiguous (per
 * input row one load of the eight channels' bytes and one scatter of a byte to each plane, each input byte once
 * per tile), with the input zero point at every padded position; the output goes back to NHWC by a scatter of
 * four bytes. Why the bytes equal the portable body's:
 * - sum(w * (x - zp)) = sum(w * x) - zp * sum(w) modulo 2^32 (the check bounds the taps so that the sum fits
 *   int32, and the lanes wrap), with sum(w) the caller's weight sums; a padded position holds zp, so its tap
 *   adds w * zp, which the folded -zp * w cancels, as the portable body's skipped tap adds nothing;
 * - requantization is helia_mbqm_double per lane with the channel's multiplier and shift as scalars: for a
 *   shift below 0, VQRDMULH, the ties fixup (-1 for a negative value) and VRSHL by the shift; for a shift of 0
 *   or more, VSHL by it (wrapping, as the scalar shift) and VQRDMULH (helia_fixed_mve.h says why each step is
 *   the scalar one).
 *
 * C99 with ACLE intrinsics, no heap, no recursion; the planes, one channel's sums and eight channels' constants
 * take 3.6 KiB of stack.
 */
#include "helia_ops_internal.h"

#if HELIA_OPS_MVE

#include <arm_mve.h>

#include "helia_bytes_mve.h"

/* A plane column's bytes: a vector's nine taps sit at 0..2 + {0, 1, 2} * PLANE_COLUMN from one pointer, and four
 * neighbouring outputs' at -PLANE_COLUMN..4 * PLANE_COLUMN + 2, every offset within VLDRB's 7-bit immediate. */
#define PLANE_COLUMN 30
/* Output pixels along the vector axis per tile: with the two more input pixels the taps read, a column. */
#define PLANE_TILE_INNER 28
/* Plane columns per tile: at outer stride 1, six output columns. */
#define PLANE_COLUMNS 8
#define PLANE_BYTES (PLANE_COLUMNS * PLANE_COLUMN)
/* Channels gathered together: one load of their bytes per input row, one byte to each channel's plane. */
#define PLANE_GROUP 8

/* The layer seen along its two axes: `inner` the vector axis (stride 1), `outer` the other. */
typedef struct plane_layer {
    int32_t inner_in;
    int32_t inner_out;
    int32_t inner_pad;
    int32_t outer_in;
    int32_t outer_out;
    int32_t outer_pad;
    int32_t outer_stride;
    uint32_t inner_step;     /* input bytes between neighbours along the inner axis */
    uint32_t outer_step;
    uint32_t out_inner_step; /* output bytes */
    uint32_t out_outer_step;
    int32_t taps[9];         /* filter bytes of tap a along the inner axis and b along the outer one, at a + 3 * b */
} plane_layer;

/* One tile: output pixels [inner0, inner0 + inner_count) x [outer0, outer0 + outer_count) of every channel. */
typedef struct plane_tile {
    const int8_t *input; /* the batch's first input byte */
    int8_t *output;      /* the batch's first output byte */
    int32_t inner0;
    int32_t inner_count;
    int32_t outer0;
    int32_t outer_count;
} plane_tile;

/* One channel: its nine weights (tap a + 3 * b), its sums' start and its requantization. */
typedef struct plane_channel {
    int32_t w[9];
    int32_t offset; /* bias, less input_zero_point * weight sum (modulo 2^32) */
    int32_t multiplier;
    int32_t shift;
} plane_channel;

/* A tile's output vectors along the inner axis, as the stores take them: `full` at 0, 4, 8, ..., and where the
 * count is not a multiple of four (it is at least four), one more at count - 4, `back` = 4 - count % 4 before
 * the next multiple of four, which rewrites `back` outputs with the same bytes, so that no store needs a
 * predicate. */
typedef struct plane_vectors {
    int32_t full;
    int32_t back;
} plane_vectors;

/* The layer's output zero point and range. */
typedef struct plane_range {
    int32x4_t act_min;
    int32x4_t act_max;
    int32_t zero_point;
} plane_range;

/* ---- the input, into planes ------------------------------------------------------------------------------ */

/* The rows [first, end) of the tile's columns that hold input (the others stay at the zero point). */
static void plane_rows(const plane_layer *layer, const plane_tile *tile, int32_t *first, int32_t *end)
{
    const int32_t rows = ((tile->inner_count + 3) / 4) * 4 + 2;
    const int32_t below = layer->inner_pad - tile->inner0;
    const int32_t above = layer->inner_pad + layer->inner_in - tile->inner0;
    *first = below > 0 ? below : 0;
    *end = above < rows ? above : rows;
}

/* The input column of the tile's plane column j, or -1 where that column is padding. */
static inline int32_t plane_source_column(const plane_layer *layer, const plane_tile *tile, int32_t j)
{
    const int32_t u = tile->outer0 * layer->outer_stride + j - layer->outer_pad;
    return u >= 0 && u < layer->outer_in ? u : -1;
}

/* The input byte of row `first` of input column u at channel c. */
static inline const int8_t *plane_source(const plane_layer *layer, const plane_tile *tile, int32_t u, int32_t first,
                                         int32_t c)
{
    return tile->input + (size_t)u * layer->outer_step +
           (size_t)(tile->inner0 + first - layer->inner_pad) * layer->inner_step + (size_t)c;
}

/* Channels c .. c + group - 1 (group 1 to 8) of the tile into as many planes, PLANE_BYTES apart: per input row
 * one load of the channels' bytes (widened to int16 lanes) and one scatter of a byte to each channel's plane.
 * Always inlined with constant `whole` (group is 8: neither needs a predicate). */
static inline __attribute__((always_inline)) void plane_gather_rows(const plane_layer *layer, const plane_tile *tile,
                                                                    int32_t c, int32_t group, int32_t first,
                                                                    int32_t end, int8_t *planes, int whole)
{
    const uint16x8_t scatter = vmulq_n_u16(vidupq_n_u16(0u, 1), (uint16_t)PLANE_BYTES);
    const mve_pred16_t lanes = vctp16q((uint32_t)group);
    const int32_t columns = (tile->outer_count - 1) * layer->outer_stride + 3;
    const size_t step = layer->inner_step;
    int32_t j;
    int32_t r;
    for (j = 0; j < columns; ++j) {
        const int32_t u = plane_source_column(layer, tile, j);
        const int8_t *source;
        int8_t *row;
        if (u < 0) {
            continue;
        }
        source = plane_source(layer, tile, u, first, c);
        row = planes + j * PLANE_COLUMN + first;
        for (r = first; r < end; ++r) {
            if (whole) {
                vstrbq_scatter_offset_s16(row, scatter, vldrbq_s16(source));
            } else {
                vstrbq_scatter_offset_p_s16(row, scatter, vldrbq_z_s16(source, lanes), lanes);
            }
            source += step;
            ++row;
        }
    }
}

/* plane_gather_rows for eight channels. */
static __attribute__((noinline)) void plane_gather_8(const plane_layer *layer, const plane_tile *tile, int32_t c,
                                                     int32_t first, int32_t end, int8_t *planes)
{
    plane_gather_rows(layer, tile, c, 8, first, end, planes, 1);
}

/* plane_gather_rows for fewer. */
static __attribute__((noinline)) void plane_gather_some(const plane_layer *layer, const plane_tile *tile, int32_t c,
                                                        int32_t group, int32_t first, int32_t end, int8_t *planes)
{
    plane_gather_rows(layer, tile, c, group, first, end, planes, 0);
}

/* ---- the sums ---------------------------------------------------------------------------------------------- */

/* One filter row a for `outputs` (4 or 2) neighbouring output columns (outer stride 1), which share their plane
 * columns: from `p` at the second output's first column, output n's filter column b is plane column n + b, at
 * (n + b - 1) * PLANE_COLUMN, -PLANE_COLUMN to 4 * PLANE_COLUMN + 2 (within VLDRB's 7-bit immediate), and each
 * plane column loads once for every output that reads it. */
#define PLANE_ROW(a, wa0, wa1, wa2)                                   \
    do {                                                              \
        int32x4_t x = vldrbq_s32(p - PLANE_COLUMN + (a));             \
        acc0 = vmlaq_n_s32(acc0, x, wa0);                             \
        x = vldrbq_s32(p + (a));                                      \
        acc0 = vmlaq_n_s32(acc0, x, wa1);                             \
        acc1 = vmlaq_n_s32(acc1, x, wa0);                             \
        x = vldrbq_s32(p + PLANE_COLUMN + (a));                       \
        acc0 = vmlaq_n_s32(acc0, x, wa2);                             \
        acc1 = vmlaq_n_s32(acc1, x, wa1);                             \
        if (outputs == 4) {                                           \
            acc2 = vmlaq_n_s32(acc2, x, wa0);                         \
        }                                                             \
        x = vldrbq_s32(p + 2 * PLANE_COLUMN + (a));                   \
        acc1 = vmlaq_n_s32(acc1, x, wa2);                             \
        if (outputs == 4) {                                           \
            acc2 = vmlaq_n_s32(acc2, x, wa1);                         \
            acc3 = vmlaq_n_s32(acc3, x, wa0);                         \
            x = vldrbq_s32(p + 3 * PLANE_COLUMN + (a));               \
            acc2 = vmlaq_n_s32(acc2, x, wa2);                         \
            acc3 = vmlaq_n_s32(acc3, x, wa1);                         \
            x = vldrbq_s32(p + 4 * PLANE_COLUMN + (a));               \
            acc3 = vmlaq_n_s32(acc3, x, wa2);                         \
        }                                                             \
    } while (0)

/* The weights of `k` as nine scalars (locals: the stores between two uses do not reload them). */
#define PLANE_WEIGHTS(k)                                                                              \
    const int32_t w0 = (k)->w[0], w1 = (k)->w[1], w2 = (k)->w[2], w3 = (k)->w[3], w4 = (k)->w[4],     \
                  w5 = (k)->w[5], w6 = (k)->w[6], w7 = (k)->w[7], w8 = (k)->w[8]

/* The sums of `outputs` (4, 2 or 1, a constant) neighbouring output columns of `vectors` groups of four each,
 * from `p` (the second output's first plane column; with one output, its own first column, any outer stride)
 * to `s` ([column][PLANE_TILE_INNER]): the offset and nine products, the weights as scalars. */
static inline __attribute__((always_inline)) void plane_group_sums(const int8_t *p, int32_t *s, const plane_channel *k,
                                                                   int32_t vectors, int outputs)
{
    const int32x4_t offset = vdupq_n_s32(k->offset);
    PLANE_WEIGHTS(k);
    int32_t v;
    for (v = 0; v < vectors; ++v) {
        int32x4_t acc0 = offset;
        int32x4_t acc1 = offset;
        int32x4_t acc2 = offset;
        int32x4_t acc3 = offset;
        if (outputs > 1) {
            PLANE_ROW(0, w0, w3, w6);
            PLANE_ROW(1, w1, w4, w7);
            PLANE_ROW(2, w2, w5, w8);
        } else {
            acc0 = vmlaq_n_s32(acc0, vldrbq_s32(p), w0);
            acc0 = vmlaq_n_s32(acc0, vldrbq_s32(p + 1), w1);
            acc0 = vmlaq_n_s32(acc0, vldrbq_s32(p + 2), w2);
            acc0 = vmlaq_n_s32(acc0, vldrbq_s32(p + PLANE_COLUMN), w3);
            acc0 = vmlaq_n_s32(acc0, vldrbq_s32(p + PLANE_COLUMN + 1), w4);
            acc0 = vmlaq_n_s32(acc0, vldrbq_s32(p + PLANE_COLUMN + 2), w5);
            acc0 = vmlaq_n_s32(acc0, vldrbq_s32(p + 2 * PLANE_COLUMN), w6);
            acc0 = vmlaq_n_s32(acc0, vldrbq_s32(p + 2 * PLANE_COLUMN + 1), w7);
            acc0 = vmlaq_n_s32(acc0, vldrbq_s32(p + 2 * PLANE_COLUMN + 2), w8);
        }
        vstrwq_s32(s, acc0);
        if (outputs > 1) {
            vstrwq_s32(s + PLANE_TILE_INNER, acc1);
        }
        if (outputs > 2) {
            vstrwq_s32(s + 2 * PLANE_TILE_INNER, acc2);
            vstrwq_s32(s + 3 * PLANE_TILE_INNER, acc3);
        }
        p += 4;
        s += 4;
    }
}

/* plane_group_sums of four, two and one output columns, each its own function so that GCC allocates its
 * registers alone, with GCC 12's pre-allocation scheduler off: it hoists the loads until the accumulators spill
 * to the stack (measured on the two-column loop: 58 instructions per iteration with it, 38 without). */
static __attribute__((noinline, optimize("no-schedule-insns"))) void plane_quad_sums(const int8_t *p, int32_t *s,
                                                                                  const plane_channel *k,
                                                                                  int32_t vectors)
{
    plane_group_sums(p, s, k, vectors, 4);
}

static __attribute__((noinline, optimize("no-schedule-insns"))) void plane_pair_sums(const int8_t *p, int32_t *s,
                                                                                  const plane_channel *k,
                                                                                  int32_t vectors)
{
    plane_group_sums(p, s, k, vectors, 2);
}

static __attribute__((noinline, optimize("no-schedule-insns"))) void plane_column_sums(const int8_t *p, int32_t *s,
                                                                                    const plane_channel *k,
                                                                                    int32_t vectors)
{
    plane_group_sums(p, s, k, vectors, 1);
}

/* The sums of one channel's `columns` output columns of `vectors` groups of four, from its plane to `sums`
 * ([column][PLANE_TILE_INNER]): the offset and nine products, the weights as scalars; four, then two columns
 * at a time where the outer stride is 1. */
static void plane_sums(const int8_t *plane, int32_t *sums, const plane_channel *k, int32_t vectors, int32_t columns,
                       int32_t stride)
{
    int32_t t = 0;
    if (stride == 1) {
        for (; t + 4 <= columns; t += 4) {
            plane_quad_sums(plane + (t + 1) * PLANE_COLUMN, sums + t * PLANE_TILE_INNER, k, vectors);
        }
        for (; t + 2 <= columns; t += 2) {
            plane_pair_sums(plane + (t + 1) * PLANE_COLUMN, sums + t * PLANE_TILE_INNER, k, vectors);
        }
    }
    for (; t < columns; ++t) {
        plane_column_sums(plane + t * stride * PLANE_COLUMN, sums + t * PLANE_TILE_INNER, k, vectors);
    }
}

#undef PLANE_ROW
#undef PLANE_WEIGHTS

/* ---- the outputs ------------------------------------------------------------------------------------------- */

/* helia_mbqm_double of four sums, plus the output zero point, clamped. Always inlined with constant `right`
 * (whether the channel's shift is below 0). */
static inline __attribute__((always_inline)) int32x4_t plane_outputs(int32x4_t acc, int32_t multiplier, int32_t shift,
                                                                    plane_range range, int right)
{
    int32x4_t value;
    if (right) {
        value = vqrdmulhq_n_s32(acc, multiplier);
        value = vrshlq_n_s32(vqaddq_s32(value, vshrq_n_s32(value, 31)), shift);
    } else {
        value = vqrdmulhq_n_s32(vshlq_r_s32(acc, shift), multiplier);
    }
    return vminq_s32(vmaxq_s32(vaddq_n_s32(value, range.zero_point), range.act_min), range.act_max);
}

/* One channel's sums of the tile requantized to its output bytes (a scatter of four per vector). Always inlined
 * with constant `right`. */
static inline __attribute__((always_inline)) void plane_store(const plane_layer *layer, const plane_tile *tile,
                                                              const plane_vectors *vectors, const int32_t *sums,
                                                              int8_t *out, const plane_channel *k, plane_range range,
                                                              int right)
{
    const uint32x4_t scatter = vmulq_n_u32(vidupq_n_u32(0u, 1), layer->out_inner_step);
    const int32_t multiplier = k->multiplier;
    const int32_t shift = k->shift;
    const size_t stride = 4u * (size_t)layer->out_inner_step;
    const int32_t full = vectors->full;
    const int32_t back = vectors->back;
    const int32_t columns = tile->outer_count;
    const size_t back_bytes = (size_t)back * (size_t)layer->out_inner_step;
    const size_t next = layer->out_outer_step;
    int32_t t;
    for (t = 0; t < columns; ++t) {
        const int32_t *s = sums + t * PLANE_TILE_INNER;
        int8_t *o = out + (size_t)t * next;
        int32_t j;
        for (j = 0; j < full; ++j) {
            vstrbq_scatter_offset_s32(o, scatter, plane_outputs(vldrwq_s32(s), multiplier, shift, range, right));
            s += 4;
            o += stride;
        }
        if (back != 0) {
            vstrbq_scatter_offset_s32(o - back_bytes, scatter,
                                      plane_outputs(vldrwq_s32(s - back), multiplier, shift, range, right));
        }
    }
}

/* plane_store for a channel whose shift is below 0. */
static __attribute__((noinline)) void plane_store_right(const plane_layer *layer, const plane_tile *tile,
                                                        const plane_vectors *vectors, const int32_t *sums,
                                                        int8_t *out, const plane_channel *k,
                                                        plane_range range)
{
    plane_store(layer, tile, vectors, sums, out, k, range, 1);
}

/* plane_store for a channel whose shift is 0 or more. */
static __attribute__((noinline)) void plane_store_left(const plane_layer *layer, const plane_tile *tile,
                                                       const plane_vectors *vectors, const int32_t *sums,
                                                       int8_t *out, const plane_channel *k,
                                                       plane_range range)
{
    plane_store(layer, tile, vectors, sums, out, k, range, 0);
}

/* ---- the layer ----------------------------------------------------------------------------------------------- */

/* The constants of channels c .. c + count - 1 (count 1 to 4) at once: each tap's weights in one widening load,
 * each field's values to their records in one scatter. */
static void plane_channels_of(const helia_conv_s8_args *args, const plane_layer *layer, int32_t c, int32_t count,
                              plane_channel k[4])
{
    const uint32x4_t records = vmulq_n_u32(vidupq_n_u32(0u, 1), (uint32_t)sizeof(plane_channel));
    const mve_pred16_t lanes = vctp32q((uint32_t)count);
    const int8_t *filter = args->filter + c;
    int32x4_t offset = vmulq_n_s32(vldrwq_z_s32(args->weight_sums + c, lanes), -args->input_zero_point);
    int32_t t;
    for (t = 0; t < 9; ++t) {
        vstrwq_scatter_offset_p_s32(&k[0].w[t], records, vldrbq_z_s32(filter + layer->taps[t], lanes), lanes);
    }
    if (args->bias != NULL) {
        offset = vaddq_s32(offset, vldrwq_z_s32(args->bias + c, lanes));
    }
    vstrwq_scatter_offset_p_s32(&k[0].offset, records, offset, lanes);
    vstrwq_scatter_offset_p_s32(&k[0].multiplier, records,
                                args->quant_count == 1 ? vdupq_n_s32(args->multipliers[0])
                                                       : vldrwq_z_s32(args->multipliers + c, lanes),
                                lanes);
    vstrwq_scatter_offset_p_s32(&k[0].shift, records,
                                args->quant_count == 1 ? vdupq_n_s32(args->shifts[0])
                                                       : vldrwq_z_s32(args->shifts + c, lanes),
                                lanes);
}

/* The vector axis: the rows (1) where stride_h is 1 and the columns are no longer or have another stride, else
 * the columns (0). */
static int plane_along_rows(const helia_conv_s8_args *args)
{
    return args->stride_h == 1 && (args->stride_w != 1 || args->output_h >= args->output_w);
}

static void plane_layer_of(const helia_conv_s8_args *args, plane_layer *layer)
{
    const int rows = plane_along_rows(args);
    const uint32_t channels = (uint32_t)args->output_c;
    const int32_t tap_inner = rows ? 3 * (int32_t)channels : (int32_t)channels;
    const int32_t tap_outer = rows ? (int32_t)channels : 3 * (int32_t)channels;
    int32_t a;
    int32_t b;
    layer->inner_in = rows ? args->input_h : args->input_w;
    layer->inner_out = rows ? args->output_h : args->output_w;
    layer->inner_pad = rows ? args->pad_top : args->pad_left;
    layer->outer_in = rows ? args->input_w : args->input_h;
    layer->outer_out = rows ? args->output_w : args->output_h;
    layer->outer_pad = rows ? args->pad_left : args->pad_top;
    layer->outer_stride = rows ? args->stride_w : args->stride_h;
    layer->inner_step = rows ? (uint32_t)args->input_w * channels : channels;
    layer->outer_step = rows ? channels : (uint32_t)args->input_w * channels;
    layer->out_inner_step = rows ? (uint32_t)args->output_w * channels : channels;
    layer->out_outer_step = rows ? channels : (uint32_t)args->output_w * channels;
    for (b = 0; b < 3; ++b) {
        for (a = 0; a < 3; ++a) {
            layer->taps[a + 3 * b] = a * tap_inner + b * tap_outer;
        }
    }
}

int helia_ops_depthwise_plane_applies(const helia_conv_s8_args *args)
{
    const int rows = plane_along_rows(args);
    return args->filter_h == 3 && args->filter_w == 3 && args->dilation_h == 1 && args->dilation_w == 1 &&
           args->depth_multiplier == 1 && (rows ? args->stride_h : args->stride_w) == 1 &&
           (rows ? args->output_h : args->output_w) >= 4;
}

/* Every channel of one tile. */
static void plane_tile_run(const helia_conv_s8_args *args, const plane_layer *layer, const plane_tile *tile,
                           plane_range range, int8_t *planes)
{
    const int32_t channels = args->output_c;
    const plane_vectors vectors = {tile->inner_count / 4, tile->inner_count % 4 != 0 ? 4 - tile->inner_count % 4 : 0};
    const int32_t columns = tile->outer_count;
    int8_t *out = tile->output + (size_t)tile->outer0 * layer->out_outer_step +
                  (size_t)tile->inner0 * layer->out_inner_step;
    int32_t sums[PLANE_COLUMNS * PLANE_TILE_INNER];
    plane_channel k[PLANE_GROUP];
    int32_t first;
    int32_t end;
    int32_t c;
    int32_t g;
    plane_rows(layer, tile, &first, &end);
    /* Every position no channel's input covers holds the zero point for the whole tile. */
    fill_bytes(planes, (int8_t)args->input_zero_point, PLANE_GROUP * PLANE_BYTES);
    for (c = 0; c < channels; c += PLANE_GROUP) {
        const int32_t group = channels - c < PLANE_GROUP ? channels - c : PLANE_GROUP;
        if (group == PLANE_GROUP) {
            plane_gather_8(layer, tile, c, first, end, planes);
        } else {
            plane_gather_some(layer, tile, c, group, first, end, planes);
        }
        for (g = 0; g < group; g += 4) {
            plane_channels_of(args, layer, c + g, group - g < 4 ? group - g : 4, k + g);
        }
        for (g = 0; g < group; ++g) {
            plane_sums(planes + g * PLANE_BYTES, sums, &k[g], (tile->inner_count + 3) / 4, columns,
                       layer->outer_stride);
            if (k[g].shift < 0) {
                plane_store_right(layer, tile, &vectors, sums, out + c + g, &k[g], range);
            } else {
                plane_store_left(layer, tile, &vectors, sums, out + c + g, &k[g], range);
            }
        }
    }
}

void helia_ops_depthwise_plane_mve(const helia_conv_s8_args *args)
{
    const size_t channels = (size_t)args->output_c;
    const size_t input_image = (size_t)args->input_h * (size_t)args->input_w * channels;
    const size_t output_image = (size_t)args->output_h * (size_t)args->output_w * channels;
    const plane_range range = {vdupq_n_s32(args->act_min), vdupq_n_s32(args->act_max), args->output_zero_point};
    int8_t planes[PLANE_GROUP * PLANE_BYTES];
    plane_layer layer;
    plane_tile tile;
    int32_t outer_tile;
    int32_t b;
    plane_layer_of(args, &layer);
    outer_tile = (PLANE_COLUMNS - 3) / layer.outer_stride + 1;
    for (b = 0; b < args->batches; ++b) {
        tile.input = args->input + (size_t)b * input_image;
        tile.output = args->output + (size_t)b * output_image;
        for (tile.inner0 = 0; tile.inner0 < layer.inner_out; tile.inner0 += tile.inner_count) {
            /* At least four outputs a tile: a last tile of fewer starts earlier and rewrites some (the same bytes). */
            const int32_t inner_left = layer.inner_out - tile.inner0;
            tile.inner0 = inner_left < 4 ? layer.inner_out - 4 : tile.inner0;
            tile.inner_count = inner_left < 4 ? 4 : inner_left < PLANE_TILE_INNER ? inner_left : PLANE_TILE_INNER;
            for (tile.outer0 = 0; tile.outer0 < layer.outer_out; tile.outer0 += outer_tile) {
                const int32_t outer_left = layer.outer_out - tile.outer0;
                tile.outer_count = outer_left < outer_tile ? outer_left : outer_tile;
                plane_tile_run(args, &layer, &tile, range, planes);
            }
        }
    }
}

#else

/* ISO C needs a declaration in every translation unit; without MVE this file compiles to nothing. */
typedef int helia_ops_depthwise_plane_mve_unused;

#endif /* HELIA_OPS_MVE */
