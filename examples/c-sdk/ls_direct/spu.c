/* The PPU writes straight into this SPE's local store: the SPU tells it where
 * (a stack buffer's address, which on the Cell is its local-store address). */
#include <spu_mfcio.h>
#include <stdio.h>

int main(unsigned long long speid, unsigned long long argp, unsigned long long envp)
{
    volatile char message[64] __attribute__((aligned(16)));
    message[0] = 0;
    spu_write_out_mbox((unsigned int)message); /* its local-store address */
    spu_read_in_mbox();                        /* the PPU has written it */
    printf("SPU found: %s\n", (const char *)message);
    return 0;
}
