/*
 * ops_lstm.c - UNIDIRECTIONAL_SEQUENCE_LSTM in TFLite's integer form (int8 activations, int16 cell state,
 * docs/kernels.md, "Integer LSTM"). No peephole, CIFG, projection or layer norm.
 *
 * Per step and batch row, each gate g of input, forget, cell and output is
 *   in16 = sat16(mbqm(bias_x[g] + W_g . x, m_x[g], s_x[g]))
 *   pre  = sat16(mbqm(bias_h[g] + U_g . h, m_h[g], s_h[g]) + in16)
 * (the biases already hold the zero points folded with the weights' row sums), read as Q3.12; the input,
 * forget and output gates take gemmlowp's 16-bit logistic, the cell gate its 16-bit tanh, both to Q0.15. Then
 *   c = sat16(rdiv(f * c, 15) + rdiv(i * g, 30 + cell_log2)), clipped to +-cell_clip when it is > 0
 *   h = clamp8(mbqm(o * tanh(c), m_hidden, s_hidden) + hidden_zero_point)
 * with gemmlowp's 16-bit tanh of c read with 15 + cell_log2 integer bits (0..6). The output state h is each
 * step's output. The state tensors are the caller's
 * and carry over between calls: the kernel reads them at the first step and leaves the last step's there.
 *
 * C99, no heap, no recursion, no floating point. Scratch: the four gates of one row, 8 x units bytes.
 */
#include <stddef.h>
#include <stdint.h>

#include "helia_fixed.h"
#include "helia_ops.h"
#include "helia_ops_internal.h"

#define GATES 4
#define GATE_CELL 2
#define MAX_EXTENT 65535

/* ---- gemmlowp's 16-bit fixed point: a raw int16 with 15 - I fractional bits ------------------------- */

static int16_t sat16(int32_t value)
{
    return (int16_t)(value < INT16_MIN ? INT16_MIN : (value > INT16_MAX ? INT16_MAX : value));
}

/* The low 16 bits as a two's complement int16: gemmlowp's int16 add, subtract and negate wrap. */
static int16_t wrap16(int32_t value)
{
    const uint32_t low = (uint32_t)value & 0xFFFFu;
    return (int16_t)(low <= 0x7FFFu ? (int32_t)low : (int32_t)low - 65536);
}

/* round(a * b / 2^15), ties away from zero; INT16_MIN * INT16_MIN saturates (a fixed-point product). */
static int16_t high_mul16(int16_t a, int16_t b)
{
    const int32_t product = (int32_t)a * (int32_t)b;
    if (a == INT16_MIN && b == INT16_MIN) {
        return INT16_MAX;
    }
    return (int16_t)((product + (product >= 0 ? (INT32_C(1) << 14) : 1 - (INT32_C(1) << 14))) / (INT32_C(1) << 15));
}

/* x * 2^exponent, saturated for exponent > 0, rounded to nearest (ties away from zero) for exponent < 0. */
static int16_t multiply_by_pot16(int16_t x, int32_t exponent)
{
    if (exponent > 0) {
        return sat16((int32_t)x * (INT32_C(1) << exponent));
    }
    return exponent < 0 ? (int16_t)helia_rounding_divide_by_pot(x, -exponent) : x;
}

/* A 32-bit gemmlowp constant as the 16-bit one it initializes (rounded to its top 16 bits). */
static int16_t constant16(int32_t value)
{
    return (int16_t)helia_rounding_divide_by_pot(value, 16);
}

/* exp(a) for a in [-1/4, 0), Q0.15: a Taylor expansion around -1/8 (gemmlowp). */
static int16_t exp_quarter(int16_t a)
{
    const int16_t constant_term = constant16(1895147668);  /* exp(-1/8) */
    const int16_t one_third = constant16(715827883);
    const int16_t x = wrap16((int32_t)a + (INT32_C(1) << 12)); /* a + 1/8 */
    const int16_t x2 = high_mul16(x, x);
    const int16_t x3 = high_mul16(x2, x);
    const int16_t x4 = high_mul16(x2, x2);
    const int16_t x4_over_4 = multiply_by_pot16(x4, -2);
    const int16_t sum = wrap16((int32_t)high_mul16(wrap16((int32_t)x4_over_4 + x3), one_third) + x2);
    const int16_t poly = multiply_by_pot16(sum, -1);
    return sat16((int32_t)constant_term + high_mul16(constant_term, wrap16((int32_t)x + poly)));
}

/* exp(a) for a <= 0 with `integer_bits` integer bits, Q0.15 (gemmlowp's exp_on_negative_values). */
static int16_t exp_negative(int16_t a, int32_t integer_bits)
{
    static const int32_t multipliers[7] = {1672461947, 1302514674, 790015084, 290630308, 39332535, 720401, 242};
    const int32_t fractional_bits = 15 - integer_bits;
    const int32_t quarter = INT32_C(1) << (fractional_bits - 2);
    const int16_t remainder_base = wrap16((int32_t)(a & (quarter - 1)) - quarter);
    int16_t result = exp_quarter(multiply_by_pot16(remainder_base, integer_bits));
    const int32_t remainder = wrap16((int32_t)remainder_base - a);
    int32_t exponent;
    for (exponent = -2; exponent <= 4; ++exponent) {
        if (integer_bits > exponent && (remainder & (INT32_C(1) << (fractional_bits + exponent))) != 0) {
            result = high_mul16(result, constant16(multipliers[exponent + 2]));
        }
    }
    if (integer_bits > 5 && a < -(INT32_C(1) << (20 - integer_bits))) {
        result = 0;
    }
    return a == 0 ? INT16_MAX : result;
}

/* 1 / (1 + a) or, with one_minus, (1 - a) / (1 + a) for a in [0, 1], Q0.15, by three
 * Newton-Raphson steps on half the denominator in Q2.13 (gemmlowp). */
static int16_t newton_reciprocal(int16_t a, int one_minus)
{
    const int32_t sum = (int32_t)a + INT16_MAX;
    const int16_t half_denominator = (int16_t)((sum + (sum >= 0 ? 1 : -1)) / 2);
    const int16_t one_q2 = (int16_t)(INT32_C(1) << 13);
    int16_t x = wrap16((int32_t)constant16(1515870810) + high_mul16(half_denominator, constant16(-1010580540)));
    int i;
    for (i = 0; i < 3; ++i) {
        const int16_t product = high_mul16(half_denominator, x);
        const int16_t one_minus_product = wrap16((int32_t)one_q2 - product);
        x = wrap16((int32_t)x + multiply_by_pot16(high_mul16(x, one_minus_product), 2));
    }
    if (one_minus) {
        return multiply_by_pot16(wrap16((int32_t)x - one_q2), 2);
    }
    return multiply_by_pot16(x, 1);
}

/* gemmlowp's logistic of a Q3.12 value, Q0.15. */
static int16_t logistic_q3(int16_t a)
{
    const int16_t magnitude = a > 0 ? a : wrap16(-(int32_t)a);
    const int16_t positive = newton_reciprocal(exp_negative(wrap16(-(int32_t)magnitude), 3), 0);
    if (a == 0) {
        return (int16_t)(INT32_C(1) << 14);
    }
    return a > 0 ? positive : wrap16((int32_t)INT16_MAX - positive);
}

/* gemmlowp's tanh of a value with `integer_bits` integer bits, Q0.15. */
static int16_t tanh_bits(int16_t a, int32_t integer_bits)
{
    const int16_t negative = a < 0 ? a : wrap16(-(int32_t)a);
    /* exp(2n): the same raw value read with one more integer bit. */
    const int16_t t = newton_reciprocal(exp_negative(negative, integer_bits + 1), 1);
    if (a == 0) {
        return 0;
    }
    return a < 0 ? wrap16(-(int32_t)t) : t;
}

/* ---- the operator -------------------------------------------------------------------------------- */

static void gate_pointers(const helia_lstm_s8_args *args, const int8_t *input_w[GATES],
                          const int8_t *recurrent_w[GATES], const int32_t *input_b[GATES],
                          const int32_t *recurrent_b[GATES])
{
    input_w[0] = args->input_to_input_weights;
    input_w[1] = args->input_to_forget_weights;
    input_w[2] = args->input_to_cell_weights;
    input_w[3] = args->input_to_output_weights;
    recurrent_w[0] = args->recurrent_to_input_weights;
    recurrent_w[1] = args->recurrent_to_forget_weights;
    recurrent_w[2] = args->recurrent_to_cell_weights;
    recurrent_w[3] = args->recurrent_to_output_weights;
    input_b[0] = args->input_gate_bias;
    input_b[1] = args->forget_gate_bias;
    input_b[2] = args->cell_gate_bias;
    input_b[3] = args->output_gate_bias;
    recurrent_b[0] = args->recurrent_input_gate_bias;
    recurrent_b[1] = args->recurrent_forget_gate_bias;
    recurrent_b[2] = args->recurrent_cell_gate_bias;
    recurrent_b[3] = args->recurrent_output_gate_bias;
}

helia_status helia_lstm_s8_check(const helia_lstm_s8_args *args)
{
    const int8_t *input_w[GATES];
    const int8_t *recurrent_w[GATES];
    const int32_t *input_b[GATES];
    const int32_t *recurrent_b[GATES];
    size_t rows;
    size_t output_bytes;
    int g;
    if (args == NULL) {
        return HELIA_STATUS_NULL_POINTER;
    }
    gate_pointers(args, input_w, recurrent_w, input_b, recurrent_b);
    if (args->input == NULL || args->output_state == NULL || args->cell_state == NULL || args->output == NULL ||
        args->scratch == NULL) {
        return HELIA_STATUS_NULL_POINTER;
    }
    for (g = 0; g < GATES; ++g) {
        if (input_w[g] == NULL || recurrent_w[g] == NULL || input_b[g] == NULL || recurrent_b[g] == NULL) {
            return HELIA_STATUS_NULL_POINTER;
        }
        if (!helia_ops_multiplier_ok(args->input_multipliers[g], args->input_shifts[g]) ||
            !helia_ops_multiplier_ok(args->recurrent_multipliers[g], args->recurrent_shifts[g])) {
            return HELIA_STATUS_BAD_PARAMETER;
        }
    }
    if (args->batches < 1 || args->time_steps < 1 || args->input_size < 1 || args->units < 1 ||
        args->batches > MAX_EXTENT || args->time_steps > MAX_EXTENT || args->input_size > MAX_EXTENT ||
        args->units > MAX_EXTENT || (args->time_major != 0 && args->time_major != 1)) {
        return HELIA_STATUS_BAD_SHAPE;
    }
    if (args->cell_log2 < -15 || args->cell_log2 > -9 || args->cell_clip < 0 || args->cell_clip > INT16_MAX ||
        !helia_ops_multiplier_ok(args->hidden_multiplier, args->hidden_shift) ||
        !helia_ops_zero_point_ok(args->hidden_zero_point)) {
        return HELIA_STATUS_BAD_PARAMETER;
    }
    if (args->scratch_bytes < 2 * GATES * args->units || ((uintptr_t)args->scratch & 1u) != 0u ||
        ((uintptr_t)args->cell_state & 1u) != 0u) {
        return HELIA_STATUS_BAD_PARAMETER;
    }
    rows = (size_t)args->batches * (size_t)args->time_steps;
    output_bytes = rows * (size_t)args->units;
    if (helia_ops_overlap(args->output, output_bytes, args->input, rows * (size_t)args->input_size) ||
        helia_ops_overlap(args->output, output_bytes, args->output_state, (size_t)args->batches * args->units) ||
        helia_ops_overlap(args->output, output_bytes, args->cell_state, 2u * args->batches * args->units) ||
        helia_ops_overlap(args->output_state, (size_t)args->batches * args->units, args->cell_state,
                          2u * args->batches * args->units) ||
        helia_ops_overlap(args->scratch, (size_t)args->scratch_bytes, args->output, output_bytes) ||
        helia_ops_overlap(args->scratch, (size_t)args->scratch_bytes, args->cell_state,
                          2u * args->batches * args->units) ||
        helia_ops_overlap(args->scratch, (size_t)args->scratch_bytes, args->output_state,
                          (size_t)args->batches * args->units)) {
        return HELIA_STATUS_PARTIAL_OVERLAP;
    }
    return HELIA_STATUS_OK;
}

/* start + a . b; the products' sum is below 2^31 (count <= 65535), the bias is added wrapping as LiteRT's
 * int32 add does. */
static int32_t dot_s8(const int8_t *a, const int8_t *b, int32_t count, int32_t start)
{
    int32_t acc = 0;
    int32_t k;
    for (k = 0; k < count; ++k) {
        acc += (int32_t)a[k] * (int32_t)b[k];
    }
    return helia_wrapping_add_s32(start, acc);
}

static void one_step(const helia_lstm_s8_args *args, const int8_t *x, int8_t *h, int16_t *c, int16_t *gates,
                     int8_t *out)
{
    const int8_t *input_w[GATES];
    const int8_t *recurrent_w[GATES];
    const int32_t *input_b[GATES];
    const int32_t *recurrent_b[GATES];
    const int32_t units = args->units;
    int g;
    int32_t u;
    gate_pointers(args, input_w, recurrent_w, input_b, recurrent_b);
    for (g = 0; g < GATES; ++g) {
        int16_t *gate = gates + g * units;
        for (u = 0; u < units; ++u) {
            const int32_t from_input = sat16(helia_mbqm_double(
                dot_s8(input_w[g] + u * args->input_size, x, args->input_size, input_b[g][u]),
                args->input_multipliers[g], args->input_shifts[g]));
            const int16_t pre = sat16(helia_mbqm_double(dot_s8(recurrent_w[g] + u * units, h, units,
                                                               recurrent_b[g][u]),
                                                        args->recurrent_multipliers[g], args->recurrent_shifts[g]) +
                                      from_input);
            gate[u] = g == GATE_CELL ? tanh_bits(pre, 3) : logistic_q3(pre);
        }
    }
    for (u = 0; u < units; ++u) {
        const int16_t input_gate = gates[u];
        const int16_t forget_gate = gates[units + u];
        const int16_t cell_gate = gates[2 * units + u];
        const int16_t output_gate = gates[3 * units + u];
        const int32_t kept = helia_rounding_divide_by_pot((int32_t)forget_gate * c[u], 15);
        const int32_t added = helia_rounding_divide_by_pot((int32_t)input_gate * cell_gate, 30 + args->cell_log2);
        int16_t cell = sat16((int32_t)(int16_t)kept + (int16_t)added);
        int32_t hidden;
        if (args->cell_clip > 0) {
            cell = (int16_t)(cell > args->cell_clip ? args->cell_clip : (cell < -args->cell_clip ? -args->cell_clip : cell));
        }
        c[u] = cell;
        hidden = helia_mbqm_double((int32_t)output_gate * tanh_bits(cell, 15 + args->cell_log2), args->hidden_multiplier,
                                   args->hidden_shift) +
                 args->hidden_zero_point;
        h[u] = helia_clamp_s8(hidden, -128, 127);
        out[u] = h[u];
    }
}

helia_status helia_lstm_s8_run(const helia_lstm_s8_args *args)
{
    int16_t *gates = (int16_t *)args->scratch;
    int32_t b;
    int32_t t;
    for (b = 0; b < args->batches; ++b) {
        int8_t *h = args->output_state + (size_t)b * args->units;
        int16_t *c = args->cell_state + (size_t)b * args->units;
        for (t = 0; t < args->time_steps; ++t) {
            const size_t row = args->time_major ? (size_t)t * args->batches + b : (size_t)b * args->time_steps + t;
            one_step(args, args->input + row * args->input_size, h, c, gates, args->output + row * args->units);
        }
    }
    return HELIA_STATUS_OK;
}

helia_status helia_lstm_s8(const helia_lstm_s8_args *args)
{
    const helia_status status = helia_lstm_s8_check(args);
    return status != HELIA_STATUS_OK ? status : helia_lstm_s8_run(args);
}
