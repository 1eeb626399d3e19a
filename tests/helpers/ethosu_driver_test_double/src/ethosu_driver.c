/*
 * ethosu_driver.c - TEST DOUBLE (see ../README.md): no NPU is driven. An
 * invoke checks its arguments and calls the begin and end hooks around the
 * command stream, as the driver does.
 */
#include "ethosu_driver.h"

int ethosu_init(struct ethosu_driver *drv, void *const base_address, const void *fast_memory,
                const size_t fast_memory_size, uint32_t secure_enable, uint32_t privilege_enable)
{
    (void)fast_memory;
    (void)fast_memory_size;
    (void)secure_enable;
    (void)privilege_enable;
    if (drv == NULL || base_address == NULL) {
        return -1;
    }
    drv->base_address = base_address;
    return 0;
}

int ethosu_invoke_v3(struct ethosu_driver *drv, const void *custom_data_ptr, const int custom_data_size,
                     uint64_t *const base_addr, const size_t *base_addr_size, const int num_base_addr, void *user_arg)
{
    if (drv == NULL || drv->base_address == NULL || custom_data_ptr == NULL || custom_data_size <= 0 ||
        (num_base_addr > 0 && (base_addr == NULL || base_addr_size == NULL))) {
        return -1;
    }
    ethosu_inference_begin(drv, user_arg);
    ethosu_inference_end(drv, user_arg);
    return 0;
}

void ethosu_irq_handler(struct ethosu_driver *drv)
{
    (void)drv;
}
