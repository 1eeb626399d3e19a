/*
 * ethosu_driver.h - TEST DOUBLE of the Ethos-U core driver's header: the
 * documented public API heliabuild's firmware calls, and nothing else (see
 * ../README.md). It drives no NPU.
 */
#ifndef ETHOSU_DRIVER_H
#define ETHOSU_DRIVER_H

#include <stddef.h>
#include <stdint.h>

struct ethosu_driver {
    void *base_address;
    uint32_t pmu_enabled;
    uint32_t counters_enabled;
    uint32_t overflow;
    uint32_t event_types[8];
};

int ethosu_init(struct ethosu_driver *drv, void *const base_address, const void *fast_memory,
                const size_t fast_memory_size, uint32_t secure_enable, uint32_t privilege_enable);

int ethosu_invoke_v3(struct ethosu_driver *drv, const void *custom_data_ptr, const int custom_data_size,
                     uint64_t *const base_addr, const size_t *base_addr_size, const int num_base_addr, void *user_arg);

void ethosu_irq_handler(struct ethosu_driver *drv);

/* Weak in the driver; the application defines them. */
void ethosu_inference_begin(struct ethosu_driver *drv, void *user_arg);
void ethosu_inference_end(struct ethosu_driver *drv, void *user_arg);

#endif /* ETHOSU_DRIVER_H */
