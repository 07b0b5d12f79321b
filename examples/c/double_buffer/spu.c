/* Double buffering on the SPE: while it squares one 16 KB buffer, the MFC fetches
 * the next into the other. The twin of examples/double_buffer.py, line for line. */
#include <spu_mfcio.h>
#include <cellsim.h>

#include "control.h"

#define CYCLES_PER_CHUNK (CHUNK / 16 * 2) /* one 4-wide multiply per 16 bytes */

static control_block_t ctl __attribute__((aligned(128)));
static float buf[2][CHUNK / 4] __attribute__((aligned(128)));

static void wait(unsigned int tag) {
    mfc_write_tag_mask(1 << tag);
    mfc_read_tag_status_all();
}

int main(unsigned long long speid, unsigned long long argp, unsigned long long envp) {
    (void)speid, (void)envp;
    mfc_get(&ctl, argp, sizeof ctl, 0, 0, 0);
    wait(0);

    mfc_get(buf[0], ctl.src, CHUNK, 0, 0, 0);
    for (unsigned int i = 0; i < ctl.chunks; i++) {
        unsigned int cur = i % 2, nxt = (i + 1) % 2;
        if (i + 1 < ctl.chunks) /* the barrier keeps it behind buf[nxt]'s put */
            mfc_getb(buf[nxt], ctl.src + (i + 1) * CHUNK, CHUNK, nxt, 0, 0);
        wait(cur);
        for (int j = 0; j < CHUNK / 4; j++)
            buf[cur][j] *= buf[cur][j];
        spu_compute(CYCLES_PER_CHUNK);
        mfc_put(buf[cur], ctl.dst + i * CHUNK, CHUNK, cur, 0, 0);
    }
    mfc_write_tag_mask(0x3);
    mfc_read_tag_status_all();
    return 0;
}
