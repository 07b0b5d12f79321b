/* A DMA-list gather: BLOCKS scattered 128-byte blocks of a table in main memory
 * come into one local-store buffer with a single mfc_getl; the SPE sums them and
 * puts the sum back. */
#include <spu_mfcio.h>
#include <cellsim.h>

#include "gather.h"

static gather_t g __attribute__((aligned(128)));
static mfc_list_element_t list[BLOCKS] __attribute__((aligned(8)));
static unsigned int buf[BLOCKS * BLOCK / 4] __attribute__((aligned(128)));
static unsigned long long sum[2] __attribute__((aligned(16)));

int main(unsigned long long speid, unsigned long long argp, unsigned long long envp) {
    (void)speid, (void)envp;
    unsigned int tag = mfc_tag_reserve();
    mfc_get(&g, argp, sizeof g, tag, 0, 0);
    mfc_write_tag_mask(1 << tag);
    mfc_read_tag_status_all();

    for (unsigned int i = 0; i < BLOCKS; i++) {
        unsigned long long ea = g.table + (unsigned long long)((g.first + i * g.stride) % TABLE_BLOCKS) * BLOCK;
        list[i].notify = 0;
        list[i].reserved = 0;
        list[i].size = BLOCK;
        list[i].eal = mfc_ea2l(ea);
    }
    mfc_getl(buf, g.table, list, sizeof list, tag, 0, 0);
    mfc_read_tag_status_all();

    sum[0] = 0;
    for (unsigned int i = 0; i < BLOCKS * BLOCK / 4; i++)
        sum[0] += buf[i];
    spu_compute(BLOCKS * BLOCK / 16); /* one 4-wide add per quadword */
    mfc_put(sum, g.result, 16, tag, 0, 0);
    mfc_read_tag_status_all();
    mfc_tag_release(tag);
    return 0;
}
