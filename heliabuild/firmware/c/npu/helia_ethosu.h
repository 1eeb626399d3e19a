/*
 * helia_ethosu.h - the call a generated module makes for each `ethos-u`
 * operator of Vela's output (docs/firmware.md, "Corstone-300 and the
 * Ethos-U driver"). helia_ethosu.c implements it with Arm's Ethos-U core
 * driver from the folder the user names (HELIA_ETHOSU_DRIVER_DIR).
 *
 * The regions are the operator's tensors after its command stream, in
 * order (the weights, the scratch, the fast scratch, the feature maps read,
 * then those written): region k is the command stream's base pointer k, as
 * Vela numbers them and TFLite Micro's Ethos-U operator passes them.
 */
#ifndef HELIA_ETHOSU_H
#define HELIA_ETHOSU_H

#include <stdint.h>

#include "helia_status.h"

typedef struct helia_ethosu_args {
    const void *command_stream;
    uint32_t command_stream_bytes;
    const void *const *regions;
    const uint32_t *region_bytes;
    uint32_t region_count;
} helia_ethosu_args;

/* At model_init: starts the driver on the first call (ethosu_init); refuses
 * arguments it cannot pass. A driver failure writes one `npu_error` record. */
helia_status helia_ethosu_prepare(const helia_ethosu_args *args);

/* One command stream on the NPU (ethosu_invoke_v3); blocks until it ends. */
helia_status helia_ethosu_run(const helia_ethosu_args *args);

#endif /* HELIA_ETHOSU_H */
