/*
 * uart.c - console.h on the Corstone-300 FVPs: UART0, Arm's CMSDK UART at
 * 0x49303000, which the FVP writes to its standard output with
 * `-C mps3_board.uart0.out_file=-`. The exit is what Arm's core platform
 * firmware prints and the host reads (../shared/targets/fvp.md, "Output and
 * ending"): `Application exit code: N.`, then EOT (0x04), on which the FVP
 * stops (`uart0.shutdown_on_eot=1`), then the `EXITTHESIM` tag.
 */
#include <stdint.h>

#include "console.h"

#define UART0_DATA (*(volatile uint32_t *)0x49303000u)
#define UART0_STATE (*(volatile uint32_t *)0x49303004u)
#define UART0_CTRL (*(volatile uint32_t *)0x49303008u)
#define UART0_BAUDDIV (*(volatile uint32_t *)0x49303010u)

enum { STATE_TX_FULL = 1u << 0, CTRL_TX_ENABLE = 1u << 0, BAUDDIV_MIN = 16u };

static uint32_t started;

void helia_console_write(const char *text)
{
    if (!started) {
        UART0_BAUDDIV = BAUDDIV_MIN;
        UART0_CTRL = CTRL_TX_ENABLE;
        started = 1u;
    }
    while (*text != '\0') {
        while ((UART0_STATE & STATE_TX_FULL) != 0u) {
        }
        UART0_DATA = (uint8_t)*text++;
    }
}

void helia_console_exit(uint32_t code)
{
    char digits[11];
    char line[48] = "Application exit code: ";
    uint32_t length = 23u;
    int count = 0;
    do {
        digits[count++] = (char)('0' + (int)(code % 10u));
        code /= 10u;
    } while (code != 0u);
    while (count > 0) {
        line[length++] = digits[--count];
    }
    line[length++] = '.';
    line[length++] = '\n';
    line[length] = '\0';
    helia_console_write(line);
    helia_console_write("\004EXITTHESIM\n");
    for (;;) {
        __asm__ volatile("wfi");
    }
}
