/* The SDK tutorial's pattern: fetch the control block, then stream chunks in and
 * out with the composite intrinsic spu_mfcdma64, waiting on the tag each time. */
#include <spu_intrinsics.h>
#include <spu_mfcio.h>
#include <cellsim.h>
#include "control.h"

static control_block_t cb __attribute__((aligned(128)));
static float chunk[CHUNK_FLOATS] __attribute__((aligned(128)));

static void wait_tag(unsigned int tag)
{
    mfc_write_tag_mask(1 << tag);
    mfc_read_tag_status_all();
}

int main(unsigned long long speid, unsigned long long argp, unsigned long long envp)
{
    const unsigned int tag = 3;
    spu_mfcdma64(&cb, mfc_ea2h(argp), mfc_ea2l(argp), sizeof cb, tag, MFC_GET_CMD);
    wait_tag(tag);
    for (unsigned int done = 0; done < cb.count; done += CHUNK_FLOATS) {
        unsigned long long in = cb.in + done * sizeof(float), out = cb.out + done * sizeof(float);
        spu_mfcdma64(chunk, mfc_ea2h(in), mfc_ea2l(in), sizeof chunk, tag, MFC_GET_CMD);
        wait_tag(tag);
        vec_float4 *v = (vec_float4 *)chunk;
        for (unsigned int i = 0; i < CHUNK_FLOATS / 4; i++)
            v[i] = spu_mul(v[i], v[i]);
        spu_compute(CHUNK_FLOATS / 4);
        spu_mfcdma64(chunk, mfc_ea2h(out), mfc_ea2l(out), sizeof chunk, tag, MFC_PUT_CMD);
        wait_tag(tag);
    }
    return 0;
}
