/*
 * helia_ops_internal.h - argument checks shared by the int8 operator kernels
 * (ops_*.c). Not part of the C API.
 *
 * C99, no heap.
 */
#ifndef HELIA_OPS_INTERNAL_H
#define HELIA_OPS_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "helia_ops.h"
#include "helia_status.h"

/* The largest |(input - input_zero_point) * filter| of int8 operands: 255 * 128. */
#define HELIA_OPS_MAX_PRODUCT 32640

/* Whether [a, a + a_bytes) and [b, b + b_bytes) share a byte; empty ranges share nothing. */
static inline int helia_ops_overlap(const void *a, size_t a_bytes, const void *b, size_t b_bytes)
{
    const uintptr_t x = (uintptr_t)a;
    const uintptr_t y = (uintptr_t)b;
    if (a_bytes == 0u || b_bytes == 0u) {
        return 0;
    }
    return x < y + b_bytes && y < x + a_bytes;
}

static inline int helia_ops_zero_point_ok(int32_t zero_point)
{
    return zero_point >= -128 && zero_point <= 127;
}

static inline int helia_ops_activation_ok(int32_t act_min, int32_t act_max)
{
    return act_min >= -128 && act_min <= act_max && act_max <= 127;
}

/* A quantized multiplier: 0, or in [2^30, 2^31 - 1], with a shift in [-31, 30]. */
static inline int helia_ops_multiplier_ok(int32_t multiplier, int32_t shift)
{
    return (multiplier == 0 || multiplier >= (INT32_C(1) << 30)) && shift >= -31 && shift <= 30;
}

static inline helia_status helia_ops_multipliers_ok(const int32_t *multipliers, const int32_t *shifts, int32_t count)
{
    int32_t i;
    for (i = 0; i < count; ++i) {
        if (!helia_ops_multiplier_ok(multipliers[i], shifts[i])) {
            return HELIA_STATUS_BAD_PARAMETER;
        }
    }
    return HELIA_STATUS_OK;
}

/* *count = the product of `rank` extents, each >= 1; BAD_SHAPE or SIZE_OVERFLOW (above INT32_MAX) otherwise. */
static inline helia_status helia_ops_count(const int32_t *dims, int32_t rank, int32_t *count)
{
    int64_t product = 1;
    int32_t i;
    for (i = 0; i < rank; ++i) {
        if (dims[i] < 1) {
            return HELIA_STATUS_BAD_SHAPE;
        }
        product *= dims[i];
        if (product > INT32_MAX) {
            return HELIA_STATUS_SIZE_OVERFLOW;
        }
    }
    *count = (int32_t)product;
    return HELIA_STATUS_OK;
}

/* The product of `rank` extents a check has already bounded (a run entry's element count). */
static inline int32_t helia_ops_product(const int32_t *dims, int32_t rank)
{
    int32_t product = 1;
    int32_t i;
    for (i = 0; i < rank; ++i) {
        product *= dims[i];
    }
    return product;
}

/* Whether every CONV_2D output pixel's one tap is an input pixel (1x1, no padding, every stride inside the
 * input): the MVE body then reads the input in place, without an im2col row. */
static inline int helia_ops_conv_reads_in_place(const helia_conv_s8_args *args)
{
    return args->filter_h == 1 && args->filter_w == 1 && args->pad_top == 0 && args->pad_left == 0 &&
           (int64_t)(args->output_h - 1) * args->stride_h < args->input_h &&
           (int64_t)(args->output_w - 1) * args->stride_w < args->input_w;
}

/* The Helium bodies (ops_conv_mve.c), on a target with integer MVE: the same bytes as the portable bodies, for
 * arguments the check passed with weight sums given (and, for the im2col CONV_2D, a scratch row). */
#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 1)
#define HELIA_OPS_MVE 1
void helia_ops_fully_connected_mve(const helia_fully_connected_s8_args *args);
void helia_ops_conv2d_in_place_mve(const helia_conv_s8_args *args);
void helia_ops_conv2d_im2col_mve(const helia_conv_s8_args *args);
void helia_ops_depthwise_conv2d_mve(const helia_conv_s8_args *args);
/* ops_depthwise_plane_mve.c: DEPTHWISE_CONV_2D 3x3 one channel's plane at a time, where it applies. */
int helia_ops_depthwise_plane_applies(const helia_conv_s8_args *args);
void helia_ops_depthwise_plane_mve(const helia_conv_s8_args *args);
#else
#define HELIA_OPS_MVE 0
#endif

/* round(x), ties away from zero, saturated to [-2^31, 2^31 - 1]; NaN gives INT32_MIN. */
static inline int32_t helia_ops_round_half_away_s32(float x)
{
    int32_t whole;
    float fraction;
    if (!(x > -2147483648.0f)) { /* also NaN */
        return INT32_MIN;
    }
    if (x >= 2147483648.0f) {
        return INT32_MAX;
    }
    whole = (int32_t)x;           /* truncation toward zero */
    fraction = x - (float)whole;  /* exact: x and its integer part share an exponent range */
    if (fraction >= 0.5f) {
        return whole + 1;
    }
    if (fraction <= -0.5f) {
        return whole - 1;
    }
    return whole;
}

#endif /* HELIA_OPS_INTERNAL_H */
