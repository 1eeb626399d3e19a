/*
 * helia_ops_int16.h - heliabuild's int16-activation kernels beyond ADD and MUL: the TFLite converter's 16x8
 * forms of FULLY_CONNECTED, CONV_2D and DEPTHWISE_CONV_2D (ops_int16_conv.c: int16 activations with zero point 0, int8
 * symmetric weights, int64 bias, an int64 accumulator) and of LOGISTIC, TANH and SOFTMAX (ops_int16_lut.c:
 * table interpolation, the tables derived by the caller, heliabuild.kernels.int16). Included by helia_ops.h;
 * the entries follow its _check / _run / combined convention. docs/kernels.md, "int16 (16x8) kernels".
 */
#ifndef HELIA_OPS_INT16_H
#define HELIA_OPS_INT16_H

#include <stdint.h>

#include "helia_status.h"

/* Largest number of taps (CONV_2D filter_h x filter_w x input_c, FULLY_CONNECTED depth) the int16 kernels
 * take: the int64 accumulator of 2^22-sized products then stays below 2^47, the bound LiteRT's rounding
 * assumes. */
#define HELIA_OPS_S16_MAX_TAPS (INT32_C(1) << 24)

/* ---- FULLY_CONNECTED, 16x8 -------------------------------------------------------------------------------
 * acc = sum(filter * input) + bias in int64; out = clamp(round(acc * multiplier * 2^(shift - 31))) rounded
 * once, the product taken modulo 2^64 as LiteRT's int64 arithmetic is. */
typedef struct helia_fully_connected_s16_args {
    const int16_t *input;        /* [batches, depth], zero point 0 */
    const int8_t *filter;        /* [output_depth, depth], symmetric */
    const int64_t *bias;         /* [output_depth], or NULL */
    const int32_t *multipliers;  /* [quant_count] */
    const int32_t *shifts;       /* [quant_count] */
    int16_t *output;             /* [batches, output_depth], zero point 0 */
    int32_t batches;
    int32_t depth;
    int32_t output_depth;
    int32_t quant_count;         /* 1 (per tensor) or output_depth (per channel) */
    int32_t act_min;
    int32_t act_max;
} helia_fully_connected_s16_args;

helia_status helia_fully_connected_s16_check(const helia_fully_connected_s16_args *args);
helia_status helia_fully_connected_s16_run(const helia_fully_connected_s16_args *args);
helia_status helia_fully_connected_s16(const helia_fully_connected_s16_args *args);

/* ---- CONV_2D and DEPTHWISE_CONV_2D, 16x8 -------------------------------------------------------------------
 * acc as FULLY_CONNECTED's over the taps inside the input; the multiplier reduced to 16 bits first
 * ((m + 2^15) >> 16, 32767 at the top) and applied with one rounding shift by 15 - shift, LiteRT's int64
 * MultiplyByQuantizedMultiplier of the double-rounding build. */
typedef struct helia_conv_s16_args {
    const int16_t *input;        /* [batches, input_h, input_w, input_c], zero point 0 */
    const int8_t *filter;        /* CONV_2D [output_c, filter_h, filter_w, input_c]; DEPTHWISE [1, h, w, output_c] */
    const int64_t *bias;         /* [output_c], or NULL */
    const int32_t *multipliers;  /* [quant_count] */
    const int32_t *shifts;       /* [quant_count] */
    int16_t *output;             /* [batches, output_h, output_w, output_c], zero point 0 */
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
    int32_t pad_top;
    int32_t pad_left;
    int32_t quant_count;         /* 1 (per tensor) or output_c (per channel) */
    int32_t act_min;
    int32_t act_max;
    int32_t depth_multiplier;    /* DEPTHWISE only: output_c == input_c * depth_multiplier */
} helia_conv_s16_args;

helia_status helia_conv2d_s16_check(const helia_conv_s16_args *args);
helia_status helia_conv2d_s16_run(const helia_conv_s16_args *args);
helia_status helia_conv2d_s16(const helia_conv_s16_args *args);
/* DEPTHWISE_CONV_2D, filter [1, filter_h, filter_w, output_c]: output channel o reads input channel
 * o / depth_multiplier; the rounding is CONV_2D's. */
helia_status helia_depthwise_conv2d_s16_check(const helia_conv_s16_args *args);
helia_status helia_depthwise_conv2d_s16_run(const helia_conv_s16_args *args);
helia_status helia_depthwise_conv2d_s16(const helia_conv_s16_args *args);

/* ---- LOGISTIC and TANH, int16 -----------------------------------------------------------------------------
 * v = (x * input_multiplier + round) >> input_left_shift (int32, wrapping), the input rescaled to 1/(3 * 4096);
 * |v| indexes a 256-entry table of sigmoid(i / 24) in 0.16 (LOGISTIC: |v| >> 9 with 9 fraction bits, TANH:
 * |v| >> 8 with 8, as tanh(x) = 2 sigmoid(2x) - 1), interpolated linearly, reflected for v < 0; output scale
 * 2^-15, zero point 0. */
typedef struct helia_sigmoid_s16_args {
    const int16_t *input;
    int16_t *output;             /* may be exactly input */
    int32_t count;
    const uint16_t *table;       /* [256]: sigmoid(i / 24) in 0.16 (heliabuild.kernels.int16.sigmoid_table) */
    int32_t input_multiplier;    /* in [1, 2^16) */
    int32_t input_left_shift;    /* in [0, 31] */
} helia_sigmoid_s16_args;

helia_status helia_logistic_s16_check(const helia_sigmoid_s16_args *args);
helia_status helia_logistic_s16_run(const helia_sigmoid_s16_args *args);
helia_status helia_logistic_s16(const helia_sigmoid_s16_args *args);
helia_status helia_tanh_s16_check(const helia_sigmoid_s16_args *args);
helia_status helia_tanh_s16_run(const helia_sigmoid_s16_args *args);
helia_status helia_tanh_s16(const helia_sigmoid_s16_args *args);

/* ---- SOFTMAX, int16 (last axis) ---------------------------------------------------------------------------
 * Per row: d = x - max (int32), scaled by the double-rounding multiplier so [-65535, 0] spans [-10, 0], shifted
 * by +32767 and saturated to int16, looked up in exp_table (513 entries over [-10, 0], Q0.15, interpolated on
 * 7 fraction bits); the sum's reciprocal from reciprocal_table (1 / (1 + x) over [0, 1]) at the sum normalized
 * to Q1.15; out = clamp(exp * reciprocal >> (31 - clz(sum)), 0, 32767), output scale 2^-15, zero point 0. */
typedef struct helia_softmax_s16_args {
    const int16_t *input;
    int16_t *output;             /* shares no byte with input (each row's exps are computed twice) */
    int32_t rows;
    int32_t depth;               /* in [1, 65536] */
    int32_t input_multiplier;
    int32_t input_shift;
    const int16_t *exp_table;        /* [513] (heliabuild.kernels.int16.softmax_tables) */
    const int16_t *reciprocal_table; /* [513] */
} helia_softmax_s16_args;

helia_status helia_softmax_s16_check(const helia_softmax_s16_args *args);
helia_status helia_softmax_s16_run(const helia_softmax_s16_args *args);
helia_status helia_softmax_s16(const helia_softmax_s16_args *args);

/* ---- QUANTIZE float32 -> int16 and DEQUANTIZE int16 -> float32 (ops_int16_convert.c) -------------------------
 * As the int8 conversions: y = saturate(round_half_away(x / scale) + zero_point), x = (q - zero_point) * scale. */
helia_status helia_quantize_f32_s16_check(const float *input, int16_t *output, int32_t count, float scale,
                                          int32_t zero_point);
helia_status helia_quantize_f32_s16_run(const float *input, int16_t *output, int32_t count, float scale,
                                        int32_t zero_point);
helia_status helia_quantize_f32_s16(const float *input, int16_t *output, int32_t count, float scale,
                                    int32_t zero_point);
helia_status helia_dequantize_s16_f32_check(const int16_t *input, float *output, int32_t count, float scale,
                                            int32_t zero_point);
helia_status helia_dequantize_s16_f32_run(const int16_t *input, float *output, int32_t count, float scale,
                                          int32_t zero_point);
helia_status helia_dequantize_s16_f32(const int16_t *input, float *output, int32_t count, float scale,
                                      int32_t zero_point);

#endif /* HELIA_OPS_INT16_H */
