/* A test firmware that never exits. */
int main(void)
{
    for (;;) {
        __asm__ volatile("wfi");
    }
}
