/*
 * helia_ops.h - heliabuild's portable int8 operator kernels.
 *
 * Each operator has three entry points taking the same arguments, all
 * returning a helia_status (helia_status.h):
 *   helia_<op>_check  validates every argument (pointers, extents, parameters,
 *                     buffer overlap) and touches no data;
 *   helia_<op>_run    the computation only: it trusts that the check passed
 *                     on these very arguments and checks nothing itself (the
 *                     generated module checks once at init and runs this);
 *   helia_<op>        the check, then the run: it writes nothing when the
 *                     check refuses (the host bindings and tests call this).
 *
 * Layouts are TFLite's: NHWC activations, CONV_2D filters [out_c, k_h, k_w,
 * in_c], DEPTHWISE_CONV_2D filters [1, k_h, k_w, out_c], FULLY_CONNECTED
 * filters [out_c, depth]. Quantized multipliers, shifts and activation bounds
 * are derived by the caller (heliabuild.kernels.int8 in Python, the firmware
 * generator in C) exactly as TFLite derives them; docs/kernels.md, "int8
 * operator kernels", states the arithmetic.
 *
 * C99, no heap, no recursion, no mutable global state. Only CONV_2D takes
 * scratch memory (its im2col row, from the caller's arena); SOFTMAX recomputes
 * each exp instead of storing the row.
 *
 * FULLY_CONNECTED, CONV_2D and DEPTHWISE_CONV_2D have a Helium (MVE) body,
 * compiled where __ARM_FEATURE_MVE says the target has integer MVE, beside
 * the portable C99 body, which the host builds and which stays the reference;
 * both give the same bytes (docs/kernels.md, "Helium (MVE) bodies"). The MVE
 * body runs when the caller passes the weight sums (and, for a CONV_2D that
 * is not 1x1, the scratch row); otherwise the portable body runs. The weight
 * sums are the caller's word: a check touches no data (a streamed filter is
 * not even in place at init), so it cannot compare them with the filter.
 */
#ifndef HELIA_OPS_H
#define HELIA_OPS_H

#include <stddef.h>
#include <stdint.h>

#include "helia_status.h"

/* Largest rank PAD, CONCATENATION and the broadcasting binary operators accept. */
#define HELIA_OPS_MAX_RANK 6

/* ---- FULLY_CONNECTED ---------------------------------------------------------------------------- */
typedef struct helia_fully_connected_s8_args {
    const int8_t *input;         /* [batches, depth] */
    const int8_t *filter;        /* [output_depth, depth], symmetric (zero point 0) */
    const int32_t *bias;         /* [output_depth], or NULL */
    const int32_t *multipliers;  /* [quant_count] */
    const int32_t *shifts;       /* [quant_count] */
    int8_t *output;              /* [batches, output_depth] */
    int32_t batches;
    int32_t depth;
    int32_t output_depth;
    int32_t quant_count;         /* 1 (per tensor) or output_depth (per channel) */
    int32_t input_zero_point;
    int32_t output_zero_point;
    int32_t act_min;
    int32_t act_max;
    const int32_t *weight_sums;  /* [output_depth]: each filter row's sum, or NULL (the MVE body needs it) */
} helia_fully_connected_s8_args;

helia_status helia_fully_connected_s8_check(const helia_fully_connected_s8_args *args);
helia_status helia_fully_connected_s8_run(const helia_fully_connected_s8_args *args);
helia_status helia_fully_connected_s8(const helia_fully_connected_s8_args *args);

/* ---- CONV_2D and DEPTHWISE_CONV_2D -------------------------------------------------------------- */
typedef struct helia_conv_s8_args {
    const int8_t *input;         /* [batches, input_h, input_w, input_c] */
    const int8_t *filter;        /* CONV_2D [output_c, filter_h, filter_w, input_c]; DEPTHWISE [1, filter_h, filter_w, output_c] */
    const int32_t *bias;         /* [output_c], or NULL */
    const int32_t *multipliers;  /* [quant_count] */
    const int32_t *shifts;       /* [quant_count] */
    int8_t *output;              /* [batches, output_h, output_w, output_c] */
    int32_t batches;
    int32_t input_h;
    int32_t input_w;
    int32_t input_c;
    int32_t filter_h;
    int32_t filter_w;
    int32_t output_h;
    int32_t output_w;
    int32_t output_c;
    int32_t stride_h;
    int32_t stride_w;
    int32_t dilation_h;
    int32_t dilation_w;
    int32_t pad_top;             /* padding before the first row / column (SAME: total / 2) */
    int32_t pad_left;
    int32_t depth_multiplier;    /* DEPTHWISE only: output_c == input_c * depth_multiplier */
    int32_t quant_count;         /* 1 (per tensor) or output_c (per channel) */
    int32_t input_zero_point;
    int32_t output_zero_point;
    int32_t act_min;
    int32_t act_max;
    const int32_t *weight_sums;  /* [output_c]: each output channel's sum of filter taps, or NULL (the MVE body needs it) */
    int8_t *scratch;             /* CONV_2D's im2col row (helia_conv2d_s8_scratch_bytes), or NULL; written before read */
    int32_t scratch_bytes;
} helia_conv_s8_args;

/* The scratch bytes CONV_2D's MVE body uses: one im2col row, filter_h x filter_w x input_c (the portable body
 * uses none). */
int32_t helia_conv2d_s8_scratch_bytes(const helia_conv_s8_args *args);
helia_status helia_conv2d_s8_check(const helia_conv_s8_args *args);
helia_status helia_conv2d_s8_run(const helia_conv_s8_args *args);
helia_status helia_conv2d_s8(const helia_conv_s8_args *args);
/* CONV_2D 1x1 without padding whose every output pixel reads inside the input (the plan's
 * arm_convolve_1x1_s8[_fast]): the MVE body reads the input pixels in place, no scratch; any other
 * convolution is BAD_PARAMETER. */
helia_status helia_conv2d_1x1_s8_check(const helia_conv_s8_args *args);
helia_status helia_conv2d_1x1_s8_run(const helia_conv_s8_args *args);
helia_status helia_conv2d_1x1_s8(const helia_conv_s8_args *args);
helia_status helia_depthwise_conv2d_s8_check(const helia_conv_s8_args *args);
helia_status helia_depthwise_conv2d_s8_run(const helia_conv_s8_args *args);
helia_status helia_depthwise_conv2d_s8(const helia_conv_s8_args *args);

/* ---- AVERAGE_POOL_2D and MAX_POOL_2D ------------------------------------------------------------ */
typedef struct helia_pool_s8_args {
    const int8_t *input;         /* [batches, input_h, input_w, channels] */
    int8_t *output;              /* [batches, output_h, output_w, channels] */
    int32_t batches;
    int32_t input_h;
    int32_t input_w;
    int32_t channels;
    int32_t output_h;
    int32_t output_w;
    int32_t filter_h;
    int32_t filter_w;
    int32_t stride_h;
    int32_t stride_w;
    int32_t pad_top;
    int32_t pad_left;
    int32_t act_min;
    int32_t act_max;
} helia_pool_s8_args;

helia_status helia_average_pool2d_s8_check(const helia_pool_s8_args *args);
helia_status helia_average_pool2d_s8_run(const helia_pool_s8_args *args);
helia_status helia_average_pool2d_s8(const helia_pool_s8_args *args);
helia_status helia_max_pool2d_s8_check(const helia_pool_s8_args *args);
helia_status helia_max_pool2d_s8_run(const helia_pool_s8_args *args);
helia_status helia_max_pool2d_s8(const helia_pool_s8_args *args);

/* ---- ADD and MUL (NumPy broadcasting over rank <= HELIA_OPS_MAX_RANK) --------------------------- */
typedef struct helia_binary_s8_args {
    const int8_t *input1;
    const int8_t *input2;
    int8_t *output;              /* may be exactly input1 or input2 when it has the same extents */
    int32_t rank;                /* 1..HELIA_OPS_MAX_RANK; all three extents lists have this rank */
    int32_t input1_dims[HELIA_OPS_MAX_RANK];
    int32_t input2_dims[HELIA_OPS_MAX_RANK];
    int32_t output_dims[HELIA_OPS_MAX_RANK];
    int32_t input1_zero_point;
    int32_t input2_zero_point;
    int32_t output_zero_point;
    int32_t left_shift;          /* ADD: 20; MUL: unused */
    int32_t input1_multiplier;   /* ADD only */
    int32_t input1_shift;
    int32_t input2_multiplier;   /* ADD only */
    int32_t input2_shift;
    int32_t output_multiplier;
    int32_t output_shift;
    int32_t act_min;
    int32_t act_max;
} helia_binary_s8_args;

helia_status helia_add_s8_check(const helia_binary_s8_args *args);
helia_status helia_add_s8_run(const helia_binary_s8_args *args);
helia_status helia_add_s8(const helia_binary_s8_args *args);
helia_status helia_mul_s8_check(const helia_binary_s8_args *args);
helia_status helia_mul_s8_run(const helia_binary_s8_args *args);
helia_status helia_mul_s8(const helia_binary_s8_args *args);

/* ---- RESHAPE: a byte copy ----------------------------------------------------------------------- */
helia_status helia_reshape_check(const void *input, size_t input_bytes, const void *output, size_t output_bytes);
helia_status helia_reshape_run(const void *input, size_t input_bytes, void *output, size_t output_bytes);
helia_status helia_reshape(const void *input, size_t input_bytes, void *output, size_t output_bytes);

/* ---- PAD (constant value) ----------------------------------------------------------------------- */
typedef struct helia_pad_args {
    const void *input;
    void *output;
    size_t element_size;         /* 1 for int8 */
    int32_t rank;                /* 1..HELIA_OPS_MAX_RANK */
    int32_t input_dims[HELIA_OPS_MAX_RANK];
    int32_t before[HELIA_OPS_MAX_RANK];
    int32_t after[HELIA_OPS_MAX_RANK];
    const void *pad_value;       /* element_size bytes: for int8 PAD, the output zero point */
} helia_pad_args;

helia_status helia_pad_check(const helia_pad_args *args);
helia_status helia_pad_run(const helia_pad_args *args);
helia_status helia_pad(const helia_pad_args *args);

/* ---- CONCATENATION (inputs and output share one quantization) ----------------------------------- */
typedef struct helia_concat_args {
    const void *const *inputs;   /* [input_count] */
    const int32_t *axis_extents; /* [input_count]: each input's extent along the axis */
    void *output;
    size_t element_size;
    int32_t input_count;
    int32_t outer;               /* product of the extents before the axis */
    int32_t inner;               /* product of the extents after the axis */
} helia_concat_args;

helia_status helia_concatenation_check(const helia_concat_args *args);
helia_status helia_concatenation_run(const helia_concat_args *args);
helia_status helia_concatenation(const helia_concat_args *args);

/* ---- QUANTIZE (float32 -> int8) and DEQUANTIZE (int8 -> float32) -------------------------------- */
helia_status helia_quantize_f32_s8_check(const float *input, int8_t *output, int32_t count, float scale,
                                         int32_t zero_point);
helia_status helia_quantize_f32_s8_run(const float *input, int8_t *output, int32_t count, float scale,
                                       int32_t zero_point);
helia_status helia_quantize_f32_s8(const float *input, int8_t *output, int32_t count, float scale,
                                   int32_t zero_point);
helia_status helia_dequantize_s8_f32_check(const int8_t *input, float *output, int32_t count, float scale,
                                           int32_t zero_point);
helia_status helia_dequantize_s8_f32_run(const int8_t *input, float *output, int32_t count, float scale,
                                         int32_t zero_point);
helia_status helia_dequantize_s8_f32(const int8_t *input, float *output, int32_t count, float scale,
                                     int32_t zero_point);

/* ---- SOFTMAX over the last axis (output scale 1/256, zero point -128) --------------------------- */
typedef struct helia_softmax_s8_args {
    const int8_t *input;         /* [rows, depth] */
    int8_t *output;              /* [rows, depth] */
    int32_t rows;
    int32_t depth;
    int32_t input_multiplier;    /* beta * input_scale * 2^(31 - 5), as a quantized multiplier */
    int32_t input_left_shift;
    int32_t diff_min;            /* differences below it contribute nothing */
} helia_softmax_s8_args;

helia_status helia_softmax_s8_check(const helia_softmax_s8_args *args);
helia_status helia_softmax_s8_run(const helia_softmax_s8_args *args);
helia_status helia_softmax_s8(const helia_softmax_s8_args *args);

/* ---- int8 requantization: RELU, RELU6, RELU_N1_TO_1 and int8 -> int8 QUANTIZE (ops_unary.c) ------- */
typedef struct helia_requantize_s8_args {
    const int8_t *input;
    int8_t *output;              /* may be exactly the input */
    int32_t count;
    int32_t input_zero_point;
    int32_t output_zero_point;
    int32_t multiplier;          /* input_scale / output_scale as a quantized multiplier */
    int32_t shift;
    int32_t act_min;             /* the activation's bounds; QUANTIZE: -128, 127 */
    int32_t act_max;
} helia_requantize_s8_args;

helia_status helia_requantize_s8_check(const helia_requantize_s8_args *args);
helia_status helia_requantize_s8_run(const helia_requantize_s8_args *args);
helia_status helia_requantize_s8(const helia_requantize_s8_args *args);

/* ---- SUB (ADD's multipliers), MAXIMUM and MINIMUM (raw codes) on helia_binary_s8_args (ops_binary.c) -- */
helia_status helia_sub_s8_check(const helia_binary_s8_args *args);
helia_status helia_sub_s8_run(const helia_binary_s8_args *args);
helia_status helia_sub_s8(const helia_binary_s8_args *args);
helia_status helia_maximum_s8_check(const helia_binary_s8_args *args);
helia_status helia_maximum_s8_run(const helia_binary_s8_args *args);
helia_status helia_maximum_s8(const helia_binary_s8_args *args);
helia_status helia_minimum_s8_check(const helia_binary_s8_args *args);
helia_status helia_minimum_s8_run(const helia_binary_s8_args *args);
helia_status helia_minimum_s8(const helia_binary_s8_args *args);

/* ---- MEAN over a contiguous run of axes (ops_data.c) -------------------------------------------- */
typedef struct helia_mean_s8_args {
    const int8_t *input;         /* [outer, reduced, inner] */
    int8_t *output;              /* [outer, inner] */
    int32_t outer;
    int32_t reduced;
    int32_t inner;
    int32_t input_zero_point;
    int32_t output_zero_point;
    int32_t multiplier;          /* in_scale / (out_scale x reduced) (heliabuild.kernels.int8.mean_params): */
    int32_t shift;               /* 0..2^31 - 1 (may be below 2^30), shift -31..30 */
} helia_mean_s8_args;

helia_status helia_mean_s8_check(const helia_mean_s8_args *args);
helia_status helia_mean_s8_run(const helia_mean_s8_args *args);
helia_status helia_mean_s8(const helia_mean_s8_args *args);

/* ---- index copy: output[i0..ik] = input[sum_k maps_k[i_k] x input_strides[k]] (ops_data.c) ---------- */
typedef struct helia_index_copy_args {
    const void *input;
    void *output;                /* must not overlap the input */
    size_t element_size;         /* 1, 2, 4 or 8 */
    int32_t input_count;         /* the input's elements: every read is checked to lie below it */
    int32_t rank;                /* 1..HELIA_OPS_MAX_RANK */
    int32_t output_dims[HELIA_OPS_MAX_RANK];
    int32_t input_strides[HELIA_OPS_MAX_RANK];  /* in elements, >= 0, per output axis */
    const int32_t *maps;         /* output_dims[0] entries for axis 0, then axis 1, ...; each >= 0 */
} helia_index_copy_args;

helia_status helia_index_copy_check(const helia_index_copy_args *args);
helia_status helia_index_copy_run(const helia_index_copy_args *args);
helia_status helia_index_copy(const helia_index_copy_args *args);

/* ---- SPLIT, SPLIT_V, UNPACK: the input [outer, sum of axis_extents, inner] into output_count pieces ---- */
typedef struct helia_split_args {
    const void *input;
    const void *const *outputs;  /* [output_count] written (the generated tables are const), none overlapping */
    const int32_t *axis_extents; /* [output_count] */
    size_t element_size;
    int32_t output_count;
    int32_t outer;
    int32_t inner;
} helia_split_args;

helia_status helia_split_check(const helia_split_args *args);
helia_status helia_split_run(const helia_split_args *args);
helia_status helia_split(const helia_split_args *args);

/* ---- LEAKY_RELU (ops_unary.c) and PRELU (ops_binary.c, input2 the alpha tensor, broadcast) --------- */
typedef struct helia_leaky_relu_s8_args {
    const int8_t *input;
    int8_t *output;              /* may be exactly the input */
    int32_t count;
    int32_t input_zero_point;
    int32_t output_zero_point;
    int32_t identity_multiplier; /* in_scale / out_scale */
    int32_t identity_shift;
    int32_t alpha_multiplier;    /* in_scale x alpha / out_scale */
    int32_t alpha_shift;
} helia_leaky_relu_s8_args;

helia_status helia_leaky_relu_s8_check(const helia_leaky_relu_s8_args *args);
helia_status helia_leaky_relu_s8_run(const helia_leaky_relu_s8_args *args);
helia_status helia_leaky_relu_s8(const helia_leaky_relu_s8_args *args);
/* PRELU: input1_multiplier/shift rescale x >= zp1, output_multiplier/shift the alpha product. */
helia_status helia_prelu_s8_check(const helia_binary_s8_args *args);
helia_status helia_prelu_s8_run(const helia_binary_s8_args *args);
helia_status helia_prelu_s8(const helia_binary_s8_args *args);

/* ---- ARG_MAX, ARG_MIN over the axis of [outer, axis_extent, inner] (ops_data.c) -------------------- */
#define HELIA_ARG_MAX 0
#define HELIA_ARG_MIN 1

typedef struct helia_arg_s8_args {
    const int8_t *input;
    void *output;                /* [outer, inner] int32 or int64 indices */
    int32_t outer;
    int32_t axis_extent;
    int32_t inner;
    int32_t kind;                /* HELIA_ARG_MAX or HELIA_ARG_MIN */
    int32_t index_bytes;         /* 4 (int32 output) or 8 (int64) */
} helia_arg_s8_args;

helia_status helia_arg_s8_check(const helia_arg_s8_args *args);
helia_status helia_arg_s8_run(const helia_arg_s8_args *args);
helia_status helia_arg_s8(const helia_arg_s8_args *args);

/* ==== LUT and arithmetic-heavy int8 kernels (ops_lut.c, ops_arith.c; docs/kernels.md, "LUT and
 * arithmetic-heavy int8 kernels"). Every one has `_check` (validates, touches no data), `_run` (the
 * computation, trusting the check) and the combined entry (check, then run). ========================== */

/* ---- LOGISTIC, TANH, EXP: output[i] = table[input[i] + 128] (ops_lut.c) ---------------------------- */
typedef struct helia_lookup_s8_args {
    const int8_t *input;         /* [count] */
    int8_t *output;              /* [count]; may be exactly the input (in place) */
    const int8_t *table;         /* [256]: the output code of every input code -128..127, in that order */
    int32_t count;
} helia_lookup_s8_args;

helia_status helia_lookup_s8_check(const helia_lookup_s8_args *args);
helia_status helia_lookup_s8_run(const helia_lookup_s8_args *args);
helia_status helia_lookup_s8(const helia_lookup_s8_args *args);

/* ---- HARD_SWISH (ops_lut.c): TFLite's 16-bit fixed-point x * relu6(x + 3) / 6 ----------------------- */
typedef struct helia_hard_swish_s8_args {
    const int8_t *input;         /* [count] */
    int8_t *output;              /* [count]; may be exactly the input (in place) */
    int32_t count;
    int32_t input_zero_point;
    int32_t output_zero_point;
    int32_t reluish_multiplier;  /* int16 fixed point in [0, 32767] */
    int32_t reluish_shift;       /* in [-31, 30] */
    int32_t output_multiplier;   /* int16 fixed point in [0, 32767] */
    int32_t output_shift;        /* in [-31, 0] */
} helia_hard_swish_s8_args;

helia_status helia_hard_swish_s8_check(const helia_hard_swish_s8_args *args);
helia_status helia_hard_swish_s8_run(const helia_hard_swish_s8_args *args);
helia_status helia_hard_swish_s8(const helia_hard_swish_s8_args *args);

/* ---- RSQRT (ops_lut.c): 1 / sqrt(x), gemmlowp's Newton-Raphson inverse square root ----------------- */
typedef struct helia_rsqrt_s8_args {
    const int8_t *input;         /* [count] */
    int8_t *output;              /* [count]; may be exactly the input (in place) */
    int32_t count;
    int32_t input_zero_point;
    int32_t output_zero_point;
    int32_t multiplier;          /* 1 / (sqrt(input_scale) * output_scale) as a quantized multiplier */
    int32_t shift;               /* in [-11, 30] (shift - 20 must be a valid right shift) */
} helia_rsqrt_s8_args;

helia_status helia_rsqrt_s8_check(const helia_rsqrt_s8_args *args);
helia_status helia_rsqrt_s8_run(const helia_rsqrt_s8_args *args);
helia_status helia_rsqrt_s8(const helia_rsqrt_s8_args *args);

/* ---- L2_NORMALIZATION over the last axis (ops_lut.c): output scale 1/128, zero point 0 -------------
 * y = clamp(MBQM(x - zp, m, s + 7)) with (m, s) the inverse square root of the row's sum of squares. The
 * output must not overlap the input (each row is read twice). */
typedef struct helia_l2_normalization_s8_args {
    const int8_t *input;         /* [rows, depth] */
    int8_t *output;              /* [rows, depth] */
    int32_t rows;
    int32_t depth;               /* <= 33025, so the sum of squares fits int32 */
    int32_t input_zero_point;
} helia_l2_normalization_s8_args;

helia_status helia_l2_normalization_s8_check(const helia_l2_normalization_s8_args *args);
helia_status helia_l2_normalization_s8_run(const helia_l2_normalization_s8_args *args);
helia_status helia_l2_normalization_s8(const helia_l2_normalization_s8_args *args);

/* ---- LOG_SOFTMAX over the last axis (ops_softmax.c): output scale 16/256, zero point 127 -----------
 * y = clamp(RDBPOT(scaled(x - max) - log(sum of exps), 22) + 127) where x - max is above the adjusted
 * minimum, else -128; the exps, their Q12.19 sum and the scaling are SOFTMAX's, the log TFLite's fixed-point
 * log for x >= 1. */
typedef struct helia_log_softmax_s8_args {
    const int8_t *input;         /* [rows, depth] */
    int8_t *output;              /* [rows, depth] */
    int32_t rows;
    int32_t depth;               /* < 4096 */
    int32_t input_multiplier;    /* as SOFTMAX's, beta 1 */
    int32_t input_left_shift;
    int32_t reverse_multiplier;  /* 2^(31 - input_left_shift) / input_multiplier, below one */
    int32_t reverse_shift;       /* <= 0 */
    int32_t diff_min;
} helia_log_softmax_s8_args;

helia_status helia_log_softmax_s8_check(const helia_log_softmax_s8_args *args);
helia_status helia_log_softmax_s8_run(const helia_log_softmax_s8_args *args);
helia_status helia_log_softmax_s8(const helia_log_softmax_s8_args *args);

/* ---- int16 ADD and MUL, the converter's 16x8 forms (ops_int16.c), NumPy broadcasting -----------------
 * As the int8 ADD and MUL with int16 values: ADD lifts both inputs by 2^left_shift (15) and uses three
 * multipliers below one; MUL one multiplier. LiteRT's int16 zero points are 0; act_min/act_max in int16. */
typedef struct helia_binary_s16_args {
    const int16_t *input1;
    const int16_t *input2;
    int16_t *output;             /* may be exactly input1 or input2 when it has the same extents */
    int32_t rank;
    int32_t input1_dims[HELIA_OPS_MAX_RANK];
    int32_t input2_dims[HELIA_OPS_MAX_RANK];
    int32_t output_dims[HELIA_OPS_MAX_RANK];
    int32_t left_shift;          /* ADD: 15; MUL: unused */
    int32_t input1_multiplier;   /* ADD only */
    int32_t input1_shift;
    int32_t input2_multiplier;   /* ADD only */
    int32_t input2_shift;
    int32_t output_multiplier;
    int32_t output_shift;
    int32_t act_min;
    int32_t act_max;
} helia_binary_s16_args;

helia_status helia_add_s16_check(const helia_binary_s16_args *args);
helia_status helia_add_s16_run(const helia_binary_s16_args *args);
helia_status helia_add_s16(const helia_binary_s16_args *args);
helia_status helia_mul_s16_check(const helia_binary_s16_args *args);
helia_status helia_mul_s16_run(const helia_binary_s16_args *args);
helia_status helia_mul_s16(const helia_binary_s16_args *args);

/* The other int16 (16x8) kernels: FULLY_CONNECTED, CONV_2D, LOGISTIC, TANH, SOFTMAX. */
#include "helia_ops_int16.h"

/* ---- int8 SQUARED_DIFFERENCE (ops_arith.c), NumPy broadcasting over rank <= 6 ------------------------
 * helia_binary_s8_args: left_shift 7, both input multipliers and the output multiplier below one (shifts
 * <= 0); act_min/act_max the int8 range. */
helia_status helia_squared_difference_s8_check(const helia_binary_s8_args *args);
helia_status helia_squared_difference_s8_run(const helia_binary_s8_args *args);
helia_status helia_squared_difference_s8(const helia_binary_s8_args *args);

/* ---- BATCH_MATMUL (ops_matmul.c): output[b] = lhs[b] x rhs[b], batch axes broadcast ---------------
 * out[b, m, n] = clamp(MBQM(sum_k (lhs[b, m, k] - zp_lhs) * (rhs[b, k, n] - zp_rhs)) + zp_out), with lhs
 * stored [.., rows, depth] ([.., depth, rows] when adj_lhs) and rhs [.., depth, cols] ([.., cols, depth]
 * when adj_rhs). Up to three batch axes, each lhs/rhs extent 1 or the output's. */
#define HELIA_BATCH_MATMUL_BATCH_AXES 3
typedef struct helia_batch_matmul_s8_args {
    const int8_t *lhs;
    const int8_t *rhs;
    int8_t *output;              /* [batch..., rows, cols] */
    int32_t lhs_batch[HELIA_BATCH_MATMUL_BATCH_AXES];
    int32_t rhs_batch[HELIA_BATCH_MATMUL_BATCH_AXES];
    int32_t output_batch[HELIA_BATCH_MATMUL_BATCH_AXES];
    int32_t rows;
    int32_t cols;
    int32_t depth;
    int32_t adj_lhs;             /* 0 or 1 */
    int32_t adj_rhs;             /* 0 or 1 */
    int32_t lhs_zero_point;
    int32_t rhs_zero_point;
    int32_t output_zero_point;
    int32_t multiplier;
    int32_t shift;
    int32_t act_min;
    int32_t act_max;
} helia_batch_matmul_s8_args;

helia_status helia_batch_matmul_s8_check(const helia_batch_matmul_s8_args *args);
helia_status helia_batch_matmul_s8_run(const helia_batch_matmul_s8_args *args);
helia_status helia_batch_matmul_s8(const helia_batch_matmul_s8_args *args);

/* ---- TRANSPOSE_CONV (ops_matmul.c): the gradient of a convolution, one output at a time -------------
 * out[n, y, x, c] = clamp(MBQM(sum of (in[n, i, j, k] - zp_in) * filter[c, ky, kx, k] over i * stride_h -
 * pad_top + ky = y, j * stride_w - pad_left + kx = x, + bias[c]) + zp_out); per-channel multipliers.
 * helia_conv_s8_args with `input_*` the operator's input, `output_*` its output, filter [output_c,
 * filter_h, filter_w, input_c], dilation 1 and depth_multiplier 1. */
helia_status helia_transpose_conv_s8_check(const helia_conv_s8_args *args);
helia_status helia_transpose_conv_s8_run(const helia_conv_s8_args *args);
helia_status helia_transpose_conv_s8(const helia_conv_s8_args *args);

/* ---- RESIZE_NEAREST_NEIGHBOR and RESIZE_BILINEAR (ops_resize.c), NHWC, any batches and channels ----- */
typedef struct helia_resize_s8_args {
    const int8_t *input;         /* [batches, input_h, input_w, channels] */
    int8_t *output;              /* [batches, output_h, output_w, channels] */
    const int32_t *row_map;      /* NEAREST: [output_h] input row of each output row; BILINEAR: NULL */
    const int32_t *column_map;   /* NEAREST: [output_w] input column of each output column; BILINEAR: NULL */
    int32_t batches;
    int32_t input_h;
    int32_t input_w;
    int32_t channels;
    int32_t output_h;
    int32_t output_w;
    int32_t align_corners;       /* BILINEAR: 0 or 1 */
    int32_t half_pixel_centers;  /* BILINEAR: 0 or 1 */
} helia_resize_s8_args;

helia_status helia_resize_nearest_s8_check(const helia_resize_s8_args *args);
helia_status helia_resize_nearest_s8_run(const helia_resize_s8_args *args);
helia_status helia_resize_nearest_s8(const helia_resize_s8_args *args);
helia_status helia_resize_bilinear_s8_check(const helia_resize_s8_args *args);
helia_status helia_resize_bilinear_s8_run(const helia_resize_s8_args *args);
helia_status helia_resize_bilinear_s8(const helia_resize_s8_args *args);

/* ---- the fixed-point helpers, exported for tests ------------------------------------------------ */
int32_t helia_ops_mbqm_double(int32_t x, int32_t multiplier, int32_t shift);
int32_t helia_ops_mbqm_single(int32_t x, int32_t multiplier, int32_t shift);
int32_t helia_ops_rounding_divide_by_pot(int32_t x, int32_t exponent);
int32_t helia_ops_sat_rounding_doubling_high_mul(int32_t a, int32_t b);

/* ==== Operator contracts: INT32 comparisons, SELECT_V2, float DIV, NEG and SQUARED_DIFFERENCE ======
 * (ops_contracts.c; aot-operator-contracts.md; docs/kernels.md, "C kernels (c/ops_contracts.c)").
 * Unquantized values. FP16 tensors are IEEE binary16 bit patterns (uint16_t); their arithmetic is the
 * FP32 operation on the widened operands rounded to half (ties to even), which is the correctly rounded
 * half result for these operations. Booleans are bytes: a comparison writes 0 or 1, SELECT_V2 takes any
 * nonzero condition byte as true. Broadcasting is NumPy's, with every extents list given at `rank`
 * (left-padded with 1). Same checks and statuses as the int8 kernels: the run function writes nothing
 * when the check refuses; each tensor's byte count must fit INT32_MAX (SIZE_OVERFLOW); an output may be
 * exactly an input of the same element size and count (in place), any other overlap is PARTIAL_OVERLAP. */

/* Largest rank of SELECT_V2's extents lists (the contract's "through rank eight"). */
#define HELIA_SELECT_MAX_RANK 8

/* Fused activations of DIV, with TFLite's ActivationFunctionType codes. */
#define HELIA_ACTIVATION_NONE 0
#define HELIA_ACTIVATION_RELU 1
#define HELIA_ACTIVATION_RELU_N1_TO_1 2
#define HELIA_ACTIVATION_RELU6 3

typedef struct helia_broadcast_args {
    const void *input1;          /* DIV: the numerator; comparisons: x (int32_t); float: float or uint16_t (FP16) */
    const void *input2;          /* DIV: the denominator; comparisons: y */
    void *output;                /* comparisons: uint8_t 0/1; otherwise the inputs' type */
    int32_t rank;                /* 1..HELIA_OPS_MAX_RANK; all three extents lists have this rank */
    int32_t input1_dims[HELIA_OPS_MAX_RANK];
    int32_t input2_dims[HELIA_OPS_MAX_RANK];
    int32_t output_dims[HELIA_OPS_MAX_RANK];
    int32_t activation;          /* DIV: HELIA_ACTIVATION_*; every other operator: HELIA_ACTIVATION_NONE */
} helia_broadcast_args;

/* DIV: x / y (IEEE quotient, no reciprocal), then the activation's clamp [lo, hi] with NaN passing through;
 * an unbounded end is the finite dtype limit (FLT_MAX, 65504). FP16 rounds the quotient to half before the
 * clamp and, under RELU and RELU6, turns -0 into +0. */
helia_status helia_div_f32_check(const helia_broadcast_args *args);
helia_status helia_div_f32_run(const helia_broadcast_args *args);
helia_status helia_div_f32(const helia_broadcast_args *args);
helia_status helia_div_f16_check(const helia_broadcast_args *args);
helia_status helia_div_f16_run(const helia_broadcast_args *args);
helia_status helia_div_f16(const helia_broadcast_args *args);

/* SQUARED_DIFFERENCE: (x - y) rounded, then squared and rounded, at the operands' precision. */
helia_status helia_squared_difference_f32_check(const helia_broadcast_args *args);
helia_status helia_squared_difference_f32_run(const helia_broadcast_args *args);
helia_status helia_squared_difference_f32(const helia_broadcast_args *args);
helia_status helia_squared_difference_f16_check(const helia_broadcast_args *args);
helia_status helia_squared_difference_f16_run(const helia_broadcast_args *args);
helia_status helia_squared_difference_f16(const helia_broadcast_args *args);

/* INT32 comparisons at full signed width; the output is one byte per element (no in place). */
helia_status helia_equal_s32_check(const helia_broadcast_args *args);
helia_status helia_equal_s32_run(const helia_broadcast_args *args);
helia_status helia_equal_s32(const helia_broadcast_args *args);
helia_status helia_not_equal_s32_check(const helia_broadcast_args *args);
helia_status helia_not_equal_s32_run(const helia_broadcast_args *args);
helia_status helia_not_equal_s32(const helia_broadcast_args *args);
helia_status helia_greater_s32_check(const helia_broadcast_args *args);
helia_status helia_greater_s32_run(const helia_broadcast_args *args);
helia_status helia_greater_s32(const helia_broadcast_args *args);
helia_status helia_greater_equal_s32_check(const helia_broadcast_args *args);
helia_status helia_greater_equal_s32_run(const helia_broadcast_args *args);
helia_status helia_greater_equal_s32(const helia_broadcast_args *args);
helia_status helia_less_s32_check(const helia_broadcast_args *args);
helia_status helia_less_s32_run(const helia_broadcast_args *args);
helia_status helia_less_s32(const helia_broadcast_args *args);
helia_status helia_less_equal_s32_check(const helia_broadcast_args *args);
helia_status helia_less_equal_s32_run(const helia_broadcast_args *args);
helia_status helia_less_equal_s32(const helia_broadcast_args *args);

/* SELECT_V2: output = condition ? x : y elementwise, values copied exactly. */
typedef struct helia_select_v2_s32_args {
    const uint8_t *condition;
    const int32_t *x;
    const int32_t *y;
    int32_t *output;             /* may be exactly x or y when it has the same extents */
    int32_t rank;                /* 1..HELIA_SELECT_MAX_RANK */
    int32_t condition_dims[HELIA_SELECT_MAX_RANK];
    int32_t x_dims[HELIA_SELECT_MAX_RANK];
    int32_t y_dims[HELIA_SELECT_MAX_RANK];
    int32_t output_dims[HELIA_SELECT_MAX_RANK];
} helia_select_v2_s32_args;

helia_status helia_select_v2_s32_check(const helia_select_v2_s32_args *args);
helia_status helia_select_v2_s32_run(const helia_select_v2_s32_args *args);
helia_status helia_select_v2_s32(const helia_select_v2_s32_args *args);

/* NEG: toggles the IEEE sign bit of `count` >= 1 elements (subnormals and NaN payloads kept, +0 <-> -0);
 * the output may be exactly the input. */
helia_status helia_neg_f32_check(const float *input, float *output, int32_t count);
helia_status helia_neg_f32_run(const float *input, float *output, int32_t count);
helia_status helia_neg_f32(const float *input, float *output, int32_t count);
helia_status helia_neg_f16_check(const uint16_t *input, uint16_t *output, int32_t count);
helia_status helia_neg_f16_run(const uint16_t *input, uint16_t *output, int32_t count);
helia_status helia_neg_f16(const uint16_t *input, uint16_t *output, int32_t count);

/* UNIDIRECTIONAL_SEQUENCE_LSTM, TFLite's integer form (ops_lstm.c): int8 input, weights and output state,
 * int16 cell state with a power-of-two scale 2^cell_log2 (-15..-9), gates in Q3.12; no peephole, CIFG, projection or
 * layer norm. The gate biases hold the zero points folded in: input side bias - input_zp * row sums,
 * recurrent side -output_state_zp * row sums. output_state and cell_state carry between calls. */
typedef struct helia_lstm_s8_args {
    const int8_t *input;         /* [batches, time_steps, input_size], or [time_steps, batches, ...] */
    const int8_t *input_to_input_weights; /* each [units, input_size] */
    const int8_t *input_to_forget_weights;
    const int8_t *input_to_cell_weights;
    const int8_t *input_to_output_weights;
    const int8_t *recurrent_to_input_weights; /* each [units, units] */
    const int8_t *recurrent_to_forget_weights;
    const int8_t *recurrent_to_cell_weights;
    const int8_t *recurrent_to_output_weights;
    const int32_t *input_gate_bias; /* each [units] */
    const int32_t *forget_gate_bias;
    const int32_t *cell_gate_bias;
    const int32_t *output_gate_bias;
    const int32_t *recurrent_input_gate_bias;
    const int32_t *recurrent_forget_gate_bias;
    const int32_t *recurrent_cell_gate_bias;
    const int32_t *recurrent_output_gate_bias;
    int32_t input_multipliers[4]; /* gate order input, forget, cell, output */
    int32_t input_shifts[4];
    int32_t recurrent_multipliers[4];
    int32_t recurrent_shifts[4];
    int8_t *output_state;        /* [batches, units], carried */
    int16_t *cell_state;         /* [batches, units], carried, 2-byte aligned */
    int8_t *output;              /* like input with units for input_size */
    void *scratch;               /* 8 x units bytes, 2-byte aligned */
    int32_t scratch_bytes;
    int32_t batches;
    int32_t time_steps;
    int32_t input_size;
    int32_t units;
    int32_t time_major;          /* 0 or 1 */
    int32_t cell_log2;           /* -15..-9 */
    int32_t cell_clip;           /* 0 (none) or the clip in cell-state codes */
    int32_t hidden_multiplier;
    int32_t hidden_shift;
    int32_t hidden_zero_point;
} helia_lstm_s8_args;

helia_status helia_lstm_s8_check(const helia_lstm_s8_args *args);
helia_status helia_lstm_s8_run(const helia_lstm_s8_args *args);
helia_status helia_lstm_s8(const helia_lstm_s8_args *args);

/* SVDF, TFLite's integer form (ops_svdf.c): int8 input, weights_feature and output, int16 weights_time and
 * activation state (zero point 0); the state [batches, filters * memory_size] carries between calls. */
typedef struct helia_svdf_s8_args {
    const int8_t *input;           /* [batches, input_size] */
    const int8_t *weights_feature; /* [filters, input_size] */
    const int16_t *weights_time;   /* [filters, memory_size], 2-byte aligned */
    const int32_t *bias;           /* [filters / rank], or NULL */
    int16_t *state;                /* [batches, filters * memory_size], carried, 2-byte aligned */
    int8_t *output;                /* [batches, filters / rank] */
    int32_t batches;
    int32_t input_size;
    int32_t filters;               /* a multiple of rank */
    int32_t memory_size;
    int32_t rank;
    int32_t input_zero_point;
    int32_t output_zero_point;
    int32_t feature_multiplier;    /* input_scale * feature_scale / state_scale */
    int32_t feature_shift;
    int32_t time_multiplier;       /* state_scale * time_scale / output_scale */
    int32_t time_shift;
    int32_t act_min;
    int32_t act_max;
} helia_svdf_s8_args;

helia_status helia_svdf_s8_check(const helia_svdf_s8_args *args);
helia_status helia_svdf_s8_run(const helia_svdf_s8_args *args);
helia_status helia_svdf_s8(const helia_svdf_s8_args *args);

#endif /* HELIA_OPS_H */
