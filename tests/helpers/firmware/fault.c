/* A test firmware that faults: a load from an address with nothing behind it. */
#include <stdint.h>

int main(void)
{
    volatile uint32_t *nowhere = (volatile uint32_t *)0xF0000000u;
    return (int)*nowhere;
}
