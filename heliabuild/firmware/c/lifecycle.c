/*
 * lifecycle.c - the firmware's main: the acquisition lifecycle of an AOT
 * module, compiled in from the frozen policy, and its record stream
 * (docs/firmware.md, "Lifecycle" and "Record stream").
 *
 *   begin   protocol segments inputs outputs state warmups measured arena xMODEL_SHA256 input_crc32...
 *   sample  ...                                       (measure.h: the target's counts)
 *   output  index position xBYTES                      (one per model output)
 *   receipt version state warmups measured initialization
 *   end     count
 *
 * model_init runs once, before any invoke and outside measurement. Warmups
 * and measured invokes run model_run on the same context. Every input is
 * refilled (zeros, or the policy's bytes) before every invoke, outside the
 * measured window; measure.h counts each measured model_run and its
 * segments (helia_measure_begin/fence/end) and writes its record. `begin` binds the run to what the host froze: the model's SHA-256 compiled into the module, and
 * the CRC-32 of each input's bytes as the firmware fills them. A refused init writes `refused operator status` and exits
 * HELIA_EXIT_REFUSED; a kernel error during an invoke writes
 * `kernel_error invoke operator status` and exits HELIA_EXIT_KERNEL.
 */
#include <stdint.h>
#include <string.h>

#include "firmware.h"
#include "helia_policy.h"
#include "measure.h"
#include "records.h"

enum {
    PROTOCOL_VERSION = 1,
    RECEIPT_VERSION = 1,
    INITIALIZATION_BEFORE_MEASUREMENT = 1,
    MAX_SEGMENTS = 1024
};

static void mark_fence(void *user, uint32_t fence)
{
    (void)user;
    helia_measure_fence(fence);
}

static void refill_inputs(const helia_model *model, const helia_policy *policy)
{
    uint32_t index;
    for (index = 0; index < model->input_count; ++index) {
        const helia_io_tensor *input = &model->inputs[index];
        const helia_input_fill *fill = index < policy->input_count ? &policy->inputs[index] : NULL;
        if (fill != NULL && fill->bytes != NULL && fill->length == input->bytes) {
            memcpy(input->data, fill->bytes, input->bytes);
        } else {
            memset(input->data, 0, input->bytes);
        }
    }
}

static int invoke(const helia_model *model, helia_model_context *context, uint32_t number)
{
    helia_model_result result = model->run(context);
    if (result != HELIA_MODEL_OK) {
        helia_record_begin("kernel_error");
        helia_record_u32(number);
        helia_record_i32(context->failed_operator);
        helia_record_u32((uint32_t)context->kernel_status);
        helia_record_end();
        return 0;
    }
    return 1;
}

int main(void)
{
    const helia_model *model = helia_firmware_model;
    const helia_policy *policy = &helia_firmware_policy;
    helia_model_context context;
    uint32_t number = 0;
    uint32_t sample;
    uint32_t segments = model->segment_count;

    memset(&context, 0, sizeof context);
    context.on_fence = mark_fence;
    refill_inputs(model, policy);
    helia_record_begin("begin");
    helia_record_u32(PROTOCOL_VERSION);
    helia_record_u32(segments);
    helia_record_u32(model->input_count);
    helia_record_u32(model->output_count);
    helia_record_u32((uint32_t)policy->state);
    helia_record_u32(policy->warmup_invokes);
    helia_record_u32(policy->measured_invokes);
    helia_record_u32(model->arena_bytes);
    helia_record_bytes(model->model_sha256, 32u);
    for (sample = 0; sample < model->input_count; ++sample) {
        helia_record_u32(helia_crc32(model->inputs[sample].data, model->inputs[sample].bytes));
    }
    helia_record_end();
    if (segments == 0u || segments > MAX_SEGMENTS || policy->input_count != model->input_count) {
        helia_record_begin("refused");
        helia_record_i32(-1);
        helia_record_u32(0u);
        helia_record_end();
        return HELIA_EXIT_REFUSED;
    }

    if (model->init(&context) != HELIA_MODEL_OK) {
        helia_record_begin("refused");
        helia_record_i32(context.failed_operator);
        helia_record_u32((uint32_t)context.kernel_status);
        helia_record_end();
        return HELIA_EXIT_REFUSED;
    }
    helia_measure_start();

    for (sample = 0; sample < policy->warmup_invokes; ++sample) {
        refill_inputs(model, policy);
        if (!invoke(model, &context, number++)) {
            return HELIA_EXIT_KERNEL;
        }
    }
    for (sample = 0; sample < policy->measured_invokes; ++sample) {
        uint32_t segment;
        refill_inputs(model, policy);
        helia_measure_begin(segments);
        if (!invoke(model, &context, number++)) {
            return HELIA_EXIT_KERNEL;
        }
        helia_measure_end();
        helia_measure_record(sample);
        for (segment = 0; segment < model->output_count; ++segment) {
            helia_record_begin("output");
            helia_record_u32(sample);
            helia_record_u32(segment);
            helia_record_bytes(model->outputs[segment].data, model->outputs[segment].bytes);
            helia_record_end();
        }
    }

    helia_record_begin("receipt");
    helia_record_u32(RECEIPT_VERSION);
    helia_record_u32((uint32_t)policy->state);
    helia_record_u32(policy->warmup_invokes);
    helia_record_u32(policy->measured_invokes);
    helia_record_u32(INITIALIZATION_BEFORE_MEASUREMENT);
    helia_record_end();
    helia_record_begin("end");
    helia_record_u32(helia_record_count());
    helia_record_end();
    return HELIA_EXIT_OK;
}
