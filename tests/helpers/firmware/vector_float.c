/*
 * vector_float.c - MVE floating-point instructions of several forms (lane arithmetic, fused multiply-add, an
 * across-vector reduction into a core register, a conversion, a vector compare, a rounding), beside MVE
 * integer loads and stores and one scalar FPU add, for the test of the "no vector floating point" check
 * (tests/test_kernels_contracts_native.py): it must find the six float forms and nothing else.
 */
void helia_probe_vector_float(void);

void helia_probe_vector_float(void)
{
    __asm__ volatile(
        "vadd.f32 q0, q1, q2\n"
        "vfma.f16 q0, q1, q2\n"
        "vmaxnmv.f32 r0, q0\n"
        "vcvt.f32.s32 q0, q1\n"
        "vcmp.f32 ge, q0, q1\n"
        "vrintn.f32 q0, q1\n"
        "vldrw.u32 q0, [r1]\n"
        "vstrw.32 q0, [r1]\n"
        "vadd.f32 s0, s1, s2\n"
        :
        :
        : "r0", "memory");
}
