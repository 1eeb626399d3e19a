/*
 * ops_svdf.c - SVDF in TFLite's integer form (int8 input, weights_feature and output, int16 weights_time and
 * activation state, zero points 0 for the int16 tensors; docs/kernels.md, "Integer SVDF").
 *
 * Per batch row: the activation state [filters, memory_size] moves one step left (the oldest value drops),
 * and each filter's newest value is
 *   state[f][memory_size - 1] = sat16(mbqm(sum_k feature[f][k] * (x[k] - input_zero_point), m1, s1));
 * then each unit u sums its `rank` filters over the memory,
 *   acc = bias[u] + sum_{f in u} sum_j time[f][j] * state[f][j]   (int32, wrapping as LiteRT's int32 sums do),
 * and the output is clamp(mbqm(acc, m2, s2) + output_zero_point, act_min, act_max). The state is the caller's
 * and carries over between calls.
 *
 * C99, no heap, no recursion, no floating point, no scratch.
 */
#include <stddef.h>
#include <stdint.h>

#include "helia_fixed.h"
#include "helia_ops.h"
#include "helia_ops_internal.h"

#define MAX_EXTENT 65535

helia_status helia_svdf_s8_check(const helia_svdf_s8_args *args)
{
    size_t state_bytes;
    size_t output_bytes;
    if (args == NULL) {
        return HELIA_STATUS_NULL_POINTER;
    }
    if (args->input == NULL || args->weights_feature == NULL || args->weights_time == NULL || args->state == NULL ||
        args->output == NULL) {
        return HELIA_STATUS_NULL_POINTER;
    }
    if (args->batches < 1 || args->input_size < 1 || args->filters < 1 || args->memory_size < 1 || args->rank < 1 ||
        args->batches > MAX_EXTENT || args->input_size > MAX_EXTENT || args->filters > MAX_EXTENT ||
        args->memory_size > MAX_EXTENT || args->filters % args->rank != 0) {
        return HELIA_STATUS_BAD_SHAPE;
    }
    if (!helia_ops_zero_point_ok(args->input_zero_point) || !helia_ops_zero_point_ok(args->output_zero_point) ||
        !helia_ops_activation_ok(args->act_min, args->act_max) ||
        !helia_ops_multiplier_ok(args->feature_multiplier, args->feature_shift) ||
        !helia_ops_multiplier_ok(args->time_multiplier, args->time_shift) || ((uintptr_t)args->state & 1u) != 0u ||
        ((uintptr_t)args->weights_time & 1u) != 0u) {
        return HELIA_STATUS_BAD_PARAMETER;
    }
    state_bytes = 2u * (size_t)args->batches * (size_t)args->filters * (size_t)args->memory_size;
    output_bytes = (size_t)args->batches * (size_t)(args->filters / args->rank);
    if (helia_ops_overlap(args->state, state_bytes, args->input, (size_t)args->batches * (size_t)args->input_size) ||
        helia_ops_overlap(args->state, state_bytes, args->output, output_bytes) ||
        helia_ops_overlap(args->output, output_bytes, args->input, (size_t)args->batches * (size_t)args->input_size)) {
        return HELIA_STATUS_PARTIAL_OVERLAP;
    }
    return HELIA_STATUS_OK;
}

static int16_t saturate_s16(int32_t value)
{
    return (int16_t)(value < INT16_MIN ? INT16_MIN : (value > INT16_MAX ? INT16_MAX : value));
}

helia_status helia_svdf_s8_run(const helia_svdf_s8_args *args)
{
    const int32_t memory = args->memory_size;
    const int32_t units = args->filters / args->rank;
    int32_t b;
    for (b = 0; b < args->batches; ++b) {
        const int8_t *x = args->input + (size_t)b * args->input_size;
        int16_t *state = args->state + (size_t)b * args->filters * memory;
        int8_t *out = args->output + (size_t)b * units;
        int32_t f;
        int32_t u;
        for (f = 0; f < args->filters; ++f) {
            int16_t *row = state + (size_t)f * memory;
            const int8_t *feature = args->weights_feature + (size_t)f * args->input_size;
            int32_t dot = 0;
            int32_t k;
            for (k = 0; k + 1 < memory; ++k) {
                row[k] = row[k + 1];
            }
            for (k = 0; k < args->input_size; ++k) {
                dot += (int32_t)feature[k] * ((int32_t)x[k] - args->input_zero_point);
            }
            row[memory - 1] = saturate_s16(helia_mbqm_double(dot, args->feature_multiplier, args->feature_shift));
        }
        for (u = 0; u < units; ++u) {
            int32_t acc = args->bias != NULL ? args->bias[u] : 0;
            int32_t r;
            for (r = 0; r < args->rank; ++r) {
                const int32_t filter = u * args->rank + r;
                const int16_t *time = args->weights_time + (size_t)filter * memory;
                const int16_t *row = state + (size_t)filter * memory;
                int32_t sum = 0;
                int32_t j;
                for (j = 0; j < memory; ++j) {
                    sum = helia_wrapping_add_s32(sum, (int32_t)time[j] * (int32_t)row[j]);
                }
                acc = helia_wrapping_add_s32(acc, sum);
            }
            out[u] = helia_clamp_s8(helia_mbqm_double(acc, args->time_multiplier, args->time_shift) +
                                        args->output_zero_point,
                                    args->act_min, args->act_max);
        }
    }
    return HELIA_STATUS_OK;
}

helia_status helia_svdf_s8(const helia_svdf_s8_args *args)
{
    const helia_status status = helia_svdf_s8_check(args);
    return status != HELIA_STATUS_OK ? status : helia_svdf_s8_run(args);
}
