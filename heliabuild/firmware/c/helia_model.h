/*
 * helia_model.h - the interface between a generated AOT module and the
 * firmware that runs it (docs/firmware.md, "The generated module").
 *
 * A module generated for prefix P defines P_model_init, P_model_run and a
 * `const helia_model P_model` describing it. init runs once, before any
 * invoke and outside measurement: it runs every kernel's prepare check and
 * copies the pinned constants. run executes every operator in order, copies
 * each transfer unit into the stream pool at its issue point, and calls
 * ctx->on_fence after each ETHOS_U_STREAM_SPLIT fence's copy, so segment k
 * ends with fence k. Inputs and outputs live in the module's arena; the
 * caller writes the inputs before each run and reads the outputs after it.
 *
 * C99, no heap.
 */
#ifndef HELIA_MODEL_H
#define HELIA_MODEL_H

#include <stdint.h>

#include "helia_status.h"

typedef enum helia_model_result {
    HELIA_MODEL_OK = 0,
    /* run before a successful init. */
    HELIA_MODEL_NOT_INITIALIZED = 1,
    /* A kernel refused its arguments: ctx->failed_operator and
     * ctx->kernel_status say which and why. */
    HELIA_MODEL_KERNEL_REFUSED = 2
} helia_model_result;

typedef struct helia_model_context {
    /* Called after fence `fence` (0-based) has copied; may be NULL. */
    void (*on_fence)(void *user, uint32_t fence);
    void *user;
    /* Set by the module. */
    uint32_t initialized;
    int32_t failed_operator;
    helia_status kernel_status;
} helia_model_context;

typedef struct helia_io_tensor {
    uint8_t *data;
    uint32_t bytes;
} helia_io_tensor;

typedef struct helia_model {
    helia_model_result (*init)(helia_model_context *ctx);
    helia_model_result (*run)(helia_model_context *ctx);
    const helia_io_tensor *inputs;
    uint32_t input_count;
    const helia_io_tensor *outputs;
    uint32_t output_count;
    uint32_t segment_count;
    uint32_t arena_bytes;
    /* The SHA-256 of the model the module was generated from (32 bytes). */
    const uint8_t *model_sha256;
} helia_model;

#endif /* HELIA_MODEL_H */
