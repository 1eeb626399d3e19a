/*
 * ops_int16_lut.c - int16 LOGISTIC, TANH and SOFTMAX by table interpolation, as LiteRT's int16 reference
 * kernels compute them (input and output zero points 0, output scale 2^-15). The tables come from the
 * caller (heliabuild.kernels.int16 derives them as LiteRT does); the arithmetic is in helia_ops_int16.h and
 * docs/kernels.md, "int16 (16x8) kernels".
 *
 * Every intermediate is the width LiteRT's is, its wraps written out (helia_wrap_s32, unsigned sums), so
 * the kernels are defined C on every input and give LiteRT's bytes where LiteRT's own arithmetic is defined.
 *
 * C99, no heap, no recursion, no floating point.
 */
#include "helia_fixed.h"
#include "helia_ops.h"
#include "helia_ops_internal.h"

#define SIGMOID_TABLE_SIZE 256
#define SOFTMAX_MAX_DEPTH 65536

/* The int16 whose two's complement bits are the low 16 bits of value (a C cast of an out-of-range value is
 * implementation-defined). */
static int16_t wrap_s16(int32_t value)
{
    const uint32_t low = (uint32_t)value & 0xFFFFu;
    return low <= 0x7FFFu ? (int16_t)low : (int16_t)((int32_t)low - 65536);
}

/* (x * multiplier + round) >> left_shift in int32, the product and sum wrapping. */
static int32_t rescale_input(int32_t x, const helia_sigmoid_s16_args *args)
{
    const int32_t shift = args->input_left_shift;
    const int64_t round = shift > 0 ? (int64_t)1 << (shift - 1) : 0;
    return helia_floor_shift_s32(helia_wrap_s32((int64_t)x * args->input_multiplier + round), shift);
}

static uint32_t magnitude(int32_t v)
{
    return v >= 0 ? (uint32_t)v : 0u - (uint32_t)v;
}

static helia_status sigmoid_check(const helia_sigmoid_s16_args *args)
{
    if (args == NULL || args->input == NULL || args->output == NULL || args->table == NULL) {
        return HELIA_STATUS_NULL_POINTER;
    }
    if (args->count < 1) {
        return HELIA_STATUS_BAD_SHAPE;
    }
    if (args->count > INT32_MAX / 2) {
        return HELIA_STATUS_SIZE_OVERFLOW;
    }
    if (args->input_multiplier < 1 || args->input_multiplier > 0xFFFF || args->input_left_shift < 0 ||
        args->input_left_shift > 31) {
        return HELIA_STATUS_BAD_PARAMETER;
    }
    if ((helia_ops_overlap(args->output, (size_t)args->count * 2u, args->input, (size_t)args->count * 2u) &&
         (const void *)args->output != (const void *)args->input) ||
        helia_ops_overlap(args->output, (size_t)args->count * 2u, args->table, SIGMOID_TABLE_SIZE * 2u)) {
        return HELIA_STATUS_PARTIAL_OVERLAP;
    }
    return HELIA_STATUS_OK;
}

/* The interpolated table value at |v| with `fraction` fraction bits, in 0.(16 + fraction); `saturated` above
 * the table. */
static uint32_t sigmoid_interpolate(const uint16_t *table, uint32_t abs_v, int32_t fraction, uint32_t saturated)
{
    const uint32_t index = abs_v >> fraction;
    const uint32_t low = abs_v & ((1u << fraction) - 1u);
    uint32_t a;
    if (index >= SIGMOID_TABLE_SIZE - 1u) {
        return saturated;
    }
    a = table[index];
    /* The unsigned difference wraps where a later entry is smaller, as LiteRT's uint32 arithmetic does. */
    return (a << fraction) + low * ((uint32_t)table[index + 1u] - a);
}

helia_status helia_logistic_s16_check(const helia_sigmoid_s16_args *args)
{
    return sigmoid_check(args);
}

helia_status helia_logistic_s16_run(const helia_sigmoid_s16_args *args)
{
    int32_t i;
    for (i = 0; i < args->count; ++i) {
        const int32_t v = rescale_input(args->input[i], args);
        uint32_t result = sigmoid_interpolate(args->table, magnitude(v), 9, UINT32_C(0x7FFF) << 10);
        result = v >= 0 ? result + (1u << 9) : (1u << 25) - result + (1u << 9) - 1u;
        args->output[i] = wrap_s16((int32_t)(result >> 10));
    }
    return HELIA_STATUS_OK;
}

helia_status helia_logistic_s16(const helia_sigmoid_s16_args *args)
{
    const helia_status status = helia_logistic_s16_check(args);
    return status != HELIA_STATUS_OK ? status : helia_logistic_s16_run(args);
}

helia_status helia_tanh_s16_check(const helia_sigmoid_s16_args *args)
{
    return sigmoid_check(args);
}

helia_status helia_tanh_s16_run(const helia_sigmoid_s16_args *args)
{
    int32_t i;
    for (i = 0; i < args->count; ++i) {
        const int32_t v = rescale_input(args->input[i], args);
        const uint32_t sigmoid = sigmoid_interpolate(args->table, magnitude(v), 8, UINT32_C(0xFFFF) << 8);
        /* 2 sigmoid - 1 in int32 (the table value is below 2^24), rounded to 2^-15. */
        const int32_t centred = v >= 0 ? (int32_t)sigmoid - (INT32_C(1) << 23) + (INT32_C(1) << 7)
                                       : (INT32_C(1) << 23) - (int32_t)sigmoid + (INT32_C(1) << 7) - 1;
        args->output[i] = wrap_s16(helia_floor_shift_s32(centred, 8));
    }
    return HELIA_STATUS_OK;
}

helia_status helia_tanh_s16(const helia_sigmoid_s16_args *args)
{
    const helia_status status = helia_tanh_s16_check(args);
    return status != HELIA_STATUS_OK ? status : helia_tanh_s16_run(args);
}

/* ---- SOFTMAX -------------------------------------------------------------------------------------------- */

/* The 513-entry table at a Q0.15 value: entry 256 + (value >> 7), plus the slope to the next entry times the
 * 7 low bits, rounded. */
static int16_t table_lookup(const int16_t *table, int32_t value)
{
    const int32_t index = 256 + helia_floor_shift_s32(value, 7);
    const int32_t offset = (int32_t)((uint32_t)value & 0x7Fu);
    const int32_t base = table[index];
    const int32_t slope = wrap_s16(table[index + 1] - base);
    return wrap_s16(base + helia_floor_shift_s32(slope * offset + 64, 7));
}

static int32_t saturate_s16(int32_t value)
{
    return value < INT16_MIN ? INT16_MIN : (value > INT16_MAX ? INT16_MAX : value);
}

static int16_t softmax_exp(const helia_softmax_s16_args *args, int32_t x, int32_t max)
{
    const int32_t scaled = helia_mbqm_double(x - max, args->input_multiplier, args->input_shift);
    return table_lookup(args->exp_table, saturate_s16(helia_wrapping_add_s32(scaled, 32767)));
}

static int32_t leading_zeros(uint32_t x)
{
    int32_t n = 0;
    if (x == 0u) {
        return 32;
    }
    while ((x & 0x80000000u) == 0u) {
        x <<= 1;
        ++n;
    }
    return n;
}

helia_status helia_softmax_s16_check(const helia_softmax_s16_args *args)
{
    int64_t count;
    if (args == NULL || args->input == NULL || args->output == NULL || args->exp_table == NULL ||
        args->reciprocal_table == NULL) {
        return HELIA_STATUS_NULL_POINTER;
    }
    if (args->rows < 1 || args->depth < 1) {
        return HELIA_STATUS_BAD_SHAPE;
    }
    count = (int64_t)args->rows * args->depth;
    if (count > INT32_MAX / 2 || args->depth > SOFTMAX_MAX_DEPTH) {
        return HELIA_STATUS_SIZE_OVERFLOW;
    }
    if (!helia_ops_multiplier_ok(args->input_multiplier, args->input_shift) || args->input_shift > 14) {
        return HELIA_STATUS_BAD_PARAMETER;
    }
    if (helia_ops_overlap(args->output, (size_t)count * 2u, args->input, (size_t)count * 2u) ||
        helia_ops_overlap(args->output, (size_t)count * 2u, args->exp_table, 513u * 2u) ||
        helia_ops_overlap(args->output, (size_t)count * 2u, args->reciprocal_table, 513u * 2u)) {
        return HELIA_STATUS_PARTIAL_OVERLAP;
    }
    return HELIA_STATUS_OK;
}

helia_status helia_softmax_s16_run(const helia_softmax_s16_args *args)
{
    int32_t r;
    int32_t j;
    for (r = 0; r < args->rows; ++r) {
        const int16_t *row = args->input + (size_t)r * (size_t)args->depth;
        int16_t *out = args->output + (size_t)r * (size_t)args->depth;
        int32_t max = INT16_MIN;
        uint32_t sum = 0u;
        int32_t headroom;
        int32_t normalized;
        int32_t reciprocal;
        int32_t right_shift;
        for (j = 0; j < args->depth; ++j) {
            max = row[j] > max ? row[j] : max;
        }
        for (j = 0; j < args->depth; ++j) {
            sum += (uint32_t)(int32_t)softmax_exp(args, row[j], max);
        }
        /* The sum normalized to [2^30, 2^31), rounded to Q1.15, less 1 and recentred for the 1 / (1 + x) table. */
        headroom = leading_zeros(sum);
        normalized = (int32_t)((((uint64_t)sum << (headroom - 1)) + (1u << 13)) >> 14);
        reciprocal = table_lookup(args->reciprocal_table, saturate_s16(normalized - ((1 << 15) + (1 << 16))));
        right_shift = 31 - headroom;
        for (j = 0; j < args->depth; ++j) {
            const int64_t product = (int64_t)softmax_exp(args, row[j], max) * reciprocal;
            const int64_t value = helia_floor_shift_s64(product + ((int64_t)1 << (right_shift - 1)), right_shift);
            out[j] = (int16_t)(value < 0 ? 0 : (value > INT16_MAX ? INT16_MAX : value));
        }
    }
    return HELIA_STATUS_OK;
}

helia_status helia_softmax_s16(const helia_softmax_s16_args *args)
{
    const helia_status status = helia_softmax_s16_check(args);
    return status != HELIA_STATUS_OK ? status : helia_softmax_s16_run(args);
}
