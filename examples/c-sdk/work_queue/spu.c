/* A worker: doubles the 32 integers of one job in place (DMA in, DMA out). */
#include <spu_mfcio.h>
#include <cellsim.h>

static int block[32] __attribute__((aligned(128)));

int main(unsigned long long speid, unsigned long long argp, unsigned long long envp)
{
    mfc_get(block, argp, sizeof block, 5, 0, 0);
    mfc_write_tag_mask(1 << 5);
    mfc_read_tag_status_all();
    for (int i = 0; i < 32; i++)
        block[i] *= 2;
    spu_compute(64);
    mfc_put(block, argp, sizeof block, 5, 0, 0);
    mfc_read_tag_status_all();
    return 0;
}
