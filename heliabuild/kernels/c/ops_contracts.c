/*
 * ops_contracts.c - the operators of the AOT operator contracts that are not int8: the six INT32
 * comparisons, SELECT_V2 on INT32 values, and FP32/FP16 DIV (with a fused activation), NEG and
 * SQUARED_DIFFERENCE. Their numpy statements are the modules of heliabuild/kernels/operators; docs/kernels.md,
 * "C kernels (c/ops_contracts.c)", says what is bit-exact with LiteRT's reference kernels.
 *
 * - DIV: q = x / y in IEEE single precision (no reciprocal), then min(max(q, lo), hi) written so a NaN
 *   passes through; NONE's bounds are the finite dtype limits (+-FLT_MAX, +-65504).
 * - SQUARED_DIFFERENCE: d = x - y rounded, then d * d rounded (no fused multiply-add: C99 with the
 *   default FP_CONTRACT off, and no product is added to anything).
 * - FP16 (uint16_t bit patterns): widen both operands to FP32 (exact), do the FP32 operation, round to
 *   half, ties to even. FP32 carries 24 >= 2 x 11 + 2 significand bits, so for a quotient, a difference
 *   and a square of halves this is the correctly rounded half result. The conversion to half is numpy's
 *   (npy_floatbits_to_halfbits), so the C kernels and the numpy references share every bit but NaN
 *   payloads, which the contract leaves unspecified.
 * - NEG toggles the sign bit; comparisons compare int32_t; SELECT_V2 copies int32_t.
 *
 * C99, no heap, no recursion, no libm; floating point only in DIV and SQUARED_DIFFERENCE (single
 * precision, which the M55 FPU has; there is no MVE vector divide, and the loops index through a
 * broadcast odometer the vectorizer does not turn into MVE lanes, whose arithmetic would flush
 * subnormals).
 */
#include <string.h>

#include "helia_ops.h"
#include "helia_ops_internal.h"

#define FLT_MAX_BITS 0x7F7FFFFFu
#define HALF_MAX 65504.0f

/* ---- bits <-> floats ---------------------------------------------------------------------------- */

static float float_of_bits(uint32_t bits)
{
    float value;
    memcpy(&value, &bits, sizeof value);
    return value;
}

static uint32_t bits_of_float(float value)
{
    uint32_t bits;
    memcpy(&bits, &value, sizeof bits);
    return bits;
}

/* The float32 value of a binary16 pattern (exact; NaN payloads move to the top of the significand). */
static float half_to_float(uint16_t half)
{
    const uint32_t sign = ((uint32_t)half & 0x8000u) << 16;
    uint32_t exponent = ((uint32_t)half >> 10) & 0x1Fu;
    uint32_t significand = (uint32_t)half & 0x3FFu;
    if (exponent == 0x1Fu) {
        return float_of_bits(sign | 0x7F800000u | (significand << 13));
    }
    if (exponent == 0u) {
        if (significand == 0u) {
            return float_of_bits(sign);
        }
        /* A subnormal half is a normal float: shift the leading one up to the hidden bit. */
        exponent = 113u;
        while ((significand & 0x400u) == 0u) {
            significand <<= 1;
            --exponent;
        }
        return float_of_bits(sign | (exponent << 23) | ((significand & 0x3FFu) << 13));
    }
    return float_of_bits(sign | ((exponent + 112u) << 23) | (significand << 13));
}

/* A float32 rounded to binary16, ties to even; overflow gives infinity, a NaN stays a NaN (numpy's rule). */
static uint16_t float_to_half(float value)
{
    const uint32_t f = bits_of_float(value);
    const uint32_t sign = (f & 0x80000000u) >> 16;
    uint32_t exponent = f & 0x7F800000u;
    uint32_t significand;
    if (exponent >= 0x47800000u) {
        significand = f & 0x007FFFFFu;
        if (exponent == 0x7F800000u && significand != 0u) {
            uint32_t nan = 0x7C00u + (significand >> 13);
            if (nan == 0x7C00u) {
                ++nan;
            }
            return (uint16_t)(sign + nan);
        }
        return (uint16_t)(sign + 0x7C00u);
    }
    if (exponent <= 0x38000000u) {
        /* A subnormal half or a signed zero. */
        if (exponent < 0x33000000u) {
            return (uint16_t)sign;
        }
        exponent >>= 23;
        significand = 0x00800000u + (f & 0x007FFFFFu);
        significand >>= (113u - exponent);
        /* Round: add half an ulp unless the rest is exactly a tie with an even result (the shift above
         * may have dropped up to 11 low bits, which the second test looks at in the original). */
        if ((significand & 0x3FFFu) != 0x1000u || (f & 0x7FFu) != 0u) {
            significand += 0x1000u;
        }
        return (uint16_t)(sign + (significand >> 13));
    }
    exponent = (exponent - 0x38000000u) >> 13;
    significand = f & 0x007FFFFFu;
    if ((significand & 0x3FFFu) != 0x1000u) {
        significand += 0x1000u;
    }
    /* A carry out of the significand increments the exponent, up to infinity: the right result. */
    return (uint16_t)(sign + exponent + (significand >> 13));
}

/* ---- broadcasting ------------------------------------------------------------------------------- */

#define MAX_OPERANDS 3

/* An odometer over the output's index, carrying each operand's element offset (stride 0 on a broadcast axis). */
typedef struct odometer {
    int32_t rank;
    int32_t operands;
    const int32_t *output_dims;
    int32_t index[HELIA_SELECT_MAX_RANK];
    int32_t stride[MAX_OPERANDS][HELIA_SELECT_MAX_RANK];
    int32_t offset[MAX_OPERANDS];
} odometer;

static void odometer_init(odometer *it, int32_t rank, int32_t operands, const int32_t *const *dims,
                          const int32_t *output_dims)
{
    int32_t k;
    int32_t i;
    it->rank = rank;
    it->operands = operands;
    it->output_dims = output_dims;
    for (k = 0; k < operands; ++k) {
        int32_t step = 1;
        it->offset[k] = 0;
        for (i = rank - 1; i >= 0; --i) {
            it->stride[k][i] = dims[k][i] == 1 ? 0 : step;
            step *= dims[k][i];
        }
    }
    for (i = 0; i < rank; ++i) {
        it->index[i] = 0;
    }
}

static void odometer_next(odometer *it)
{
    int32_t i;
    int32_t k;
    for (i = it->rank - 1; i >= 0; --i) {
        ++it->index[i];
        for (k = 0; k < it->operands; ++k) {
            it->offset[k] += it->stride[k][i];
        }
        if (it->index[i] < it->output_dims[i]) {
            return;
        }
        for (k = 0; k < it->operands; ++k) {
            it->offset[k] -= it->stride[k][i] * it->index[i];
        }
        it->index[i] = 0;
    }
}

/*
 * The shared check of a broadcasting operator: NULL pointers, the rank, extents >= 1 whose counts and
 * byte counts fit INT32_MAX, each operand's axis equal to the output's or 1 and the output the largest,
 * and the output overlapping no input unless it is exactly one of the same element size and count.
 * counts[k] is each operand's element count, counts[operands] the output's.
 */
static helia_status broadcast_check(int32_t operands, const void *const *inputs, const size_t *sizes,
                                    const void *output, size_t output_size, int32_t rank, int32_t max_rank,
                                    const int32_t *const *dims, const int32_t *output_dims, int32_t *counts)
{
    int32_t k;
    int32_t i;
    helia_status status;
    for (k = 0; k < operands; ++k) {
        if (inputs[k] == NULL) {
            return HELIA_STATUS_NULL_POINTER;
        }
    }
    if (output == NULL) {
        return HELIA_STATUS_NULL_POINTER;
    }
    if (rank < 1 || rank > max_rank) {
        return HELIA_STATUS_BAD_SHAPE;
    }
    for (k = 0; k <= operands; ++k) {
        const int32_t *extents = k < operands ? dims[k] : output_dims;
        const size_t size = k < operands ? sizes[k] : output_size;
        status = helia_ops_count(extents, rank, &counts[k]);
        if (status != HELIA_STATUS_OK) {
            return status;
        }
        if ((size_t)counts[k] > (size_t)INT32_MAX / size) {
            return HELIA_STATUS_SIZE_OVERFLOW;
        }
    }
    for (i = 0; i < rank; ++i) {
        int32_t largest = 1;
        for (k = 0; k < operands; ++k) {
            largest = dims[k][i] > largest ? dims[k][i] : largest;
        }
        if (output_dims[i] != largest) {
            return HELIA_STATUS_SHAPE_MISMATCH;
        }
        for (k = 0; k < operands; ++k) {
            if (dims[k][i] != 1 && dims[k][i] != largest) {
                return HELIA_STATUS_SHAPE_MISMATCH;
            }
        }
    }
    for (k = 0; k < operands; ++k) {
        const size_t out_bytes = (size_t)counts[operands] * output_size;
        const size_t in_bytes = (size_t)counts[k] * sizes[k];
        const int exact = inputs[k] == output && sizes[k] == output_size && counts[k] == counts[operands];
        if (helia_ops_overlap(output, out_bytes, inputs[k], in_bytes) && !exact) {
            return HELIA_STATUS_PARTIAL_OVERLAP;
        }
    }
    return HELIA_STATUS_OK;
}

/* ---- DIV, SQUARED_DIFFERENCE and the comparisons (two operands) --------------------------------- */

typedef enum binary_kind {
    KIND_DIV_F32,
    KIND_DIV_F16,
    KIND_SQUARED_DIFFERENCE_F32,
    KIND_SQUARED_DIFFERENCE_F16,
    KIND_EQUAL,
    KIND_NOT_EQUAL,
    KIND_GREATER,
    KIND_GREATER_EQUAL,
    KIND_LESS,
    KIND_LESS_EQUAL
} binary_kind;

static size_t operand_size(binary_kind kind)
{
    switch (kind) {
    case KIND_DIV_F16:
    case KIND_SQUARED_DIFFERENCE_F16:
        return 2u;
    default:
        return 4u;
    }
}

static helia_status binary_check(const helia_broadcast_args *args, binary_kind kind, int32_t *counts)
{
    const void *inputs[2];
    size_t sizes[2];
    const int32_t *dims[2];
    const int is_comparison = kind >= KIND_EQUAL;
    const int is_div = kind == KIND_DIV_F32 || kind == KIND_DIV_F16;
    helia_status status;
    if (args == NULL) {
        return HELIA_STATUS_NULL_POINTER;
    }
    inputs[0] = args->input1;
    inputs[1] = args->input2;
    sizes[0] = sizes[1] = operand_size(kind);
    dims[0] = args->input1_dims;
    dims[1] = args->input2_dims;
    status = broadcast_check(2, inputs, sizes, args->output, is_comparison ? 1u : sizes[0], args->rank,
                             HELIA_OPS_MAX_RANK, dims, args->output_dims, counts);
    if (status != HELIA_STATUS_OK) {
        return status;
    }
    if (is_comparison && counts[2] > INT32_MAX / 4) {
        return HELIA_STATUS_SIZE_OVERFLOW; /* the contract's INT32_MAX / 4 output elements */
    }
    if (is_div ? (args->activation < HELIA_ACTIVATION_NONE || args->activation > HELIA_ACTIVATION_RELU6)
               : args->activation != HELIA_ACTIVATION_NONE) {
        return HELIA_STATUS_BAD_PARAMETER;
    }
    return HELIA_STATUS_OK;
}

/* min(max(v, lo), hi) as LiteRT's ActivationFunctionWithMinMax: a NaN compares false and passes through. */
static float clamp_float(float v, float lo, float hi)
{
    return v < lo ? lo : (v > hi ? hi : v);
}

static void activation_bounds(int32_t activation, float limit, float *lo, float *hi)
{
    switch (activation) {
    case HELIA_ACTIVATION_RELU:
        *lo = 0.0f;
        *hi = limit;
        break;
    case HELIA_ACTIVATION_RELU_N1_TO_1:
        *lo = -1.0f;
        *hi = 1.0f;
        break;
    case HELIA_ACTIVATION_RELU6:
        *lo = 0.0f;
        *hi = 6.0f;
        break;
    default:
        *lo = -limit;
        *hi = limit;
        break;
    }
}

static void run_div_f32(const helia_broadcast_args *args, odometer *it, int32_t count)
{
    const float *x = (const float *)args->input1;
    const float *y = (const float *)args->input2;
    float *out = (float *)args->output;
    float lo;
    float hi;
    int32_t n;
    activation_bounds(args->activation, float_of_bits(FLT_MAX_BITS), &lo, &hi);
    for (n = 0; n < count; ++n) {
        const float q = x[it->offset[0]] / y[it->offset[1]];
        out[n] = clamp_float(q, lo, hi);
        odometer_next(it);
    }
}

static void run_div_f16(const helia_broadcast_args *args, odometer *it, int32_t count)
{
    const uint16_t *x = (const uint16_t *)args->input1;
    const uint16_t *y = (const uint16_t *)args->input2;
    uint16_t *out = (uint16_t *)args->output;
    const int positive_zero = args->activation == HELIA_ACTIVATION_RELU || args->activation == HELIA_ACTIVATION_RELU6;
    float lo;
    float hi;
    int32_t n;
    activation_bounds(args->activation, HALF_MAX, &lo, &hi);
    for (n = 0; n < count; ++n) {
        const uint16_t q = float_to_half(half_to_float(x[it->offset[0]]) / half_to_float(y[it->offset[1]]));
        uint16_t r = q;
        if ((q & 0x7C00u) != 0x7C00u || (q & 0x3FFu) == 0u) { /* not a NaN: clamp the half's exact value */
            r = float_to_half(clamp_float(half_to_float(q), lo, hi));
            if (positive_zero && (r & 0x7FFFu) == 0u) {
                r = 0u;
            }
        }
        out[n] = r;
        odometer_next(it);
    }
}

static void run_squared_difference_f32(const helia_broadcast_args *args, odometer *it, int32_t count)
{
    const float *x = (const float *)args->input1;
    const float *y = (const float *)args->input2;
    float *out = (float *)args->output;
    int32_t n;
    for (n = 0; n < count; ++n) {
        const float d = x[it->offset[0]] - y[it->offset[1]];
        out[n] = d * d;
        odometer_next(it);
    }
}

static void run_squared_difference_f16(const helia_broadcast_args *args, odometer *it, int32_t count)
{
    const uint16_t *x = (const uint16_t *)args->input1;
    const uint16_t *y = (const uint16_t *)args->input2;
    uint16_t *out = (uint16_t *)args->output;
    int32_t n;
    for (n = 0; n < count; ++n) {
        const float d = half_to_float(float_to_half(half_to_float(x[it->offset[0]]) - half_to_float(y[it->offset[1]])));
        out[n] = float_to_half(d * d);
        odometer_next(it);
    }
}

static void run_compare(const helia_broadcast_args *args, binary_kind kind, odometer *it, int32_t count)
{
    const int32_t *x = (const int32_t *)args->input1;
    const int32_t *y = (const int32_t *)args->input2;
    uint8_t *out = (uint8_t *)args->output;
    int32_t n;
    for (n = 0; n < count; ++n) {
        const int32_t a = x[it->offset[0]];
        const int32_t b = y[it->offset[1]];
        int result;
        switch (kind) {
        case KIND_EQUAL:
            result = a == b;
            break;
        case KIND_NOT_EQUAL:
            result = a != b;
            break;
        case KIND_GREATER:
            result = a > b;
            break;
        case KIND_GREATER_EQUAL:
            result = a >= b;
            break;
        case KIND_LESS:
            result = a < b;
            break;
        default:
            result = a <= b;
            break;
        }
        out[n] = (uint8_t)result;
        odometer_next(it);
    }
}

static helia_status binary_run(const helia_broadcast_args *args, binary_kind kind)
{
    int32_t counts[3];
    const int32_t *dims[2];
    odometer it;
    counts[2] = helia_ops_product(args->output_dims, args->rank);
    dims[0] = args->input1_dims;
    dims[1] = args->input2_dims;
    odometer_init(&it, args->rank, 2, dims, args->output_dims);
    switch (kind) {
    case KIND_DIV_F32:
        run_div_f32(args, &it, counts[2]);
        break;
    case KIND_DIV_F16:
        run_div_f16(args, &it, counts[2]);
        break;
    case KIND_SQUARED_DIFFERENCE_F32:
        run_squared_difference_f32(args, &it, counts[2]);
        break;
    case KIND_SQUARED_DIFFERENCE_F16:
        run_squared_difference_f16(args, &it, counts[2]);
        break;
    default:
        run_compare(args, kind, &it, counts[2]);
        break;
    }
    return HELIA_STATUS_OK;
}

#define BINARY_ENTRY_POINTS(name, kind)                                                                    \
    helia_status helia_##name##_check(const helia_broadcast_args *args)                                    \
    {                                                                                                      \
        int32_t counts[3];                                                                                 \
        return binary_check(args, kind, counts);                                                           \
    }                                                                                                      \
    helia_status helia_##name##_run(const helia_broadcast_args *args)                                      \
    {                                                                                                      \
        return binary_run(args, kind);                                                                     \
    }                                                                                                      \
    helia_status helia_##name(const helia_broadcast_args *args)                                            \
    {                                                                                                      \
        int32_t counts[3];                                                                                 \
        const helia_status status = binary_check(args, kind, counts);                                      \
        return status != HELIA_STATUS_OK ? status : binary_run(args, kind);                                \
    }

BINARY_ENTRY_POINTS(div_f32, KIND_DIV_F32)
BINARY_ENTRY_POINTS(div_f16, KIND_DIV_F16)
BINARY_ENTRY_POINTS(squared_difference_f32, KIND_SQUARED_DIFFERENCE_F32)
BINARY_ENTRY_POINTS(squared_difference_f16, KIND_SQUARED_DIFFERENCE_F16)
BINARY_ENTRY_POINTS(equal_s32, KIND_EQUAL)
BINARY_ENTRY_POINTS(not_equal_s32, KIND_NOT_EQUAL)
BINARY_ENTRY_POINTS(greater_s32, KIND_GREATER)
BINARY_ENTRY_POINTS(greater_equal_s32, KIND_GREATER_EQUAL)
BINARY_ENTRY_POINTS(less_s32, KIND_LESS)
BINARY_ENTRY_POINTS(less_equal_s32, KIND_LESS_EQUAL)

/* ---- SELECT_V2 ---------------------------------------------------------------------------------- */

static helia_status select_check(const helia_select_v2_s32_args *args, int32_t *counts)
{
    const void *inputs[3];
    static const size_t sizes[3] = {1u, 4u, 4u};
    const int32_t *dims[3];
    if (args == NULL) {
        return HELIA_STATUS_NULL_POINTER;
    }
    inputs[0] = args->condition;
    inputs[1] = args->x;
    inputs[2] = args->y;
    dims[0] = args->condition_dims;
    dims[1] = args->x_dims;
    dims[2] = args->y_dims;
    return broadcast_check(3, inputs, sizes, args->output, 4u, args->rank, HELIA_SELECT_MAX_RANK, dims,
                           args->output_dims, counts);
}

helia_status helia_select_v2_s32_check(const helia_select_v2_s32_args *args)
{
    int32_t counts[4];
    return select_check(args, counts);
}

helia_status helia_select_v2_s32_run(const helia_select_v2_s32_args *args)
{
    int32_t counts[4];
    const int32_t *dims[3];
    odometer it;
    int32_t n;
    counts[3] = helia_ops_product(args->output_dims, args->rank);
    dims[0] = args->condition_dims;
    dims[1] = args->x_dims;
    dims[2] = args->y_dims;
    odometer_init(&it, args->rank, 3, dims, args->output_dims);
    for (n = 0; n < counts[3]; ++n) {
        args->output[n] = args->condition[it.offset[0]] != 0u ? args->x[it.offset[1]] : args->y[it.offset[2]];
        odometer_next(&it);
    }
    return HELIA_STATUS_OK;
}

/* ---- NEG ---------------------------------------------------------------------------------------- */

static helia_status neg_check(const void *input, const void *output, int32_t count, size_t size)
{
    if (input == NULL || output == NULL) {
        return HELIA_STATUS_NULL_POINTER;
    }
    if (count < 1) {
        return HELIA_STATUS_BAD_SHAPE;
    }
    if ((size_t)count > (size_t)INT32_MAX / size) {
        return HELIA_STATUS_SIZE_OVERFLOW;
    }
    if (input != output && helia_ops_overlap(output, (size_t)count * size, input, (size_t)count * size)) {
        return HELIA_STATUS_PARTIAL_OVERLAP;
    }
    return HELIA_STATUS_OK;
}

helia_status helia_neg_f32_check(const float *input, float *output, int32_t count)
{
    return neg_check(input, output, count, 4u);
}

helia_status helia_neg_f32_run(const float *input, float *output, int32_t count)
{
    int32_t n;
    for (n = 0; n < count; ++n) {
        uint32_t bits;
        memcpy(&bits, &input[n], sizeof bits);
        bits ^= 0x80000000u;
        memcpy(&output[n], &bits, sizeof bits);
    }
    return HELIA_STATUS_OK;
}

helia_status helia_neg_f16_check(const uint16_t *input, uint16_t *output, int32_t count)
{
    return neg_check(input, output, count, 2u);
}

helia_status helia_neg_f16_run(const uint16_t *input, uint16_t *output, int32_t count)
{
    int32_t n;
    for (n = 0; n < count; ++n) {
        output[n] = (uint16_t)(input[n] ^ 0x8000u);
    }
    return HELIA_STATUS_OK;
}

helia_status helia_select_v2_s32(const helia_select_v2_s32_args *args)
{
    const helia_status status = helia_select_v2_s32_check(args);
    return status != HELIA_STATUS_OK ? status : helia_select_v2_s32_run(args);
}

helia_status helia_neg_f32(const float *input, float *output, int32_t count)
{
    const helia_status status = neg_check(input, output, count, 4u);
    return status != HELIA_STATUS_OK ? status : helia_neg_f32_run(input, output, count);
}

helia_status helia_neg_f16(const uint16_t *input, uint16_t *output, int32_t count)
{
    const helia_status status = neg_check(input, output, count, 2u);
    return status != HELIA_STATUS_OK ? status : helia_neg_f16_run(input, output, count);
}
