/* DMA into and out of buffers on the SPU's stack: on the Cell the stack is in
 * the local store, so (unsigned int)&buf is a local-store address. */
#include <spu_mfcio.h>
#include <stdio.h>

typedef struct {
    unsigned long long ea;
    unsigned int words, pad[29];
} request_t;

static unsigned int reverse(unsigned long long ea, unsigned int words)
{
    unsigned int buf[64] __attribute__((aligned(128)));
    mfc_get(buf, ea, words * 4, 2, 0, 0);
    mfc_write_tag_mask(1 << 2);
    mfc_read_tag_status_all();
    for (unsigned int i = 0; i < words / 2; i++) {
        unsigned int t = buf[i];
        buf[i] = buf[words - 1 - i];
        buf[words - 1 - i] = t;
    }
    mfc_put(buf, ea, words * 4, 2, 0, 0);
    mfc_read_tag_status_all();
    return (unsigned int)&buf[0] >= 0x30000; /* near the top of the 256 KB local store */
}

int main(unsigned long long speid, unsigned long long argp, unsigned long long envp)
{
    request_t req __attribute__((aligned(128)));
    mfc_get(&req, argp, sizeof req, 1, 0, 0);
    mfc_write_tag_mask(1 << 1);
    mfc_read_tag_status_all();
    printf("SPU: %u words, stack buffer in the local store's top: %s\n", req.words,
           reverse(req.ea, req.words) ? "yes" : "no");
    return 0;
}
