/*
 * firmware.h - what every heliabuild firmware shares: its exit statuses.
 *
 * The host reads the status QEMU exits with (semihosting SYS_EXIT_EXTENDED)
 * and publishes nothing unless it is HELIA_EXIT_OK and the record stream
 * ends with its `end` record.
 */
#ifndef HELIA_FIRMWARE_H
#define HELIA_FIRMWARE_H

enum helia_exit {
    HELIA_EXIT_OK = 0,
    /* The model's prepare checks refused it (a `refused` record says why). */
    HELIA_EXIT_REFUSED = 3,
    /* A kernel returned an error during an invoke. */
    HELIA_EXIT_KERNEL = 4,
    /* A CPU fault (a `fault` record names it). */
    HELIA_EXIT_FAULT = 5
};

#endif /* HELIA_FIRMWARE_H */
