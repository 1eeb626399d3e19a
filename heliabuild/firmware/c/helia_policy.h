/*
 * helia_policy.h - the frozen measurement policy a firmware is built with
 * (docs/firmware.md, "Lifecycle"; ../shared/spec/acquisition-lifecycle.md).
 *
 * The runner build generates one `helia_firmware_policy` and points
 * `helia_firmware_model` at the generated module; lifecycle.c runs them.
 */
#ifndef HELIA_POLICY_H
#define HELIA_POLICY_H

#include <stdint.h>

#include "helia_model.h"

typedef enum helia_state {
    HELIA_STATE_CARRY = 0,
    HELIA_STATE_SINGLE = 1
} helia_state;

/* The bytes an input is filled with before every invoke; NULL bytes: zeros. */
typedef struct helia_input_fill {
    const uint8_t *bytes;
    uint32_t length;
} helia_input_fill;

typedef struct helia_policy {
    helia_state state;
    uint32_t warmup_invokes;
    uint32_t measured_invokes;
    const helia_input_fill *inputs; /* one per model input */
    uint32_t input_count;
} helia_policy;

extern const helia_model *const helia_firmware_model;
extern const helia_policy helia_firmware_policy;

#endif /* HELIA_POLICY_H */
