/*
 * ethosu_device_u55_u65.c - TEST DOUBLE (see ../README.md): the driver keeps the
 * register access of each NPU family in a source of its own; the double has
 * none, only the file, so a build picks one as it would the driver's.
 */
#include "ethosu_driver.h"

int ethosu_test_double_device_u55_u65(void);

int ethosu_test_double_device_u55_u65(void)
{
    return 0;
}
