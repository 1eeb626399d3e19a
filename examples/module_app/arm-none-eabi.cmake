# arm-none-eabi.cmake - a CMake toolchain file for Debian's arm-none-eabi-gcc and a Cortex-M55 with MVE and
# the FPU: the flags the heliabuild module's README asks for.
set(CMAKE_SYSTEM_NAME Generic)
set(CMAKE_SYSTEM_PROCESSOR arm)
set(CMAKE_C_COMPILER arm-none-eabi-gcc)
set(CMAKE_TRY_COMPILE_TARGET_TYPE STATIC_LIBRARY)
set(CMAKE_C_FLAGS_INIT "-mcpu=cortex-m55 -mthumb -mfloat-abi=hard -O2 -ffreestanding -ffunction-sections -fdata-sections -fno-if-conversion2")
set(CMAKE_EXE_LINKER_FLAGS_INIT "-nostartfiles --specs=nano.specs --specs=nosys.specs -Wl,--gc-sections")
