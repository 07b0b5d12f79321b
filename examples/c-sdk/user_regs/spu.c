/* With SPE_RUN_USER_REGS, main's three arguments are r3, r4 and r5 as the PPU
 * set them: here a base, a count and a step. */
#include <stdio.h>

int main(unsigned long long base, unsigned long long count, unsigned long long step)
{
    unsigned long long sum = 0;
    for (unsigned long long i = 0; i < count; i++)
        sum += base + i * step;
    printf("r3=%llu r4=%llu r5=%llu: sum %llu\n", base, count, step, sum);
    return (int)(sum % 256);
}
