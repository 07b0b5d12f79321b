/* Four SPEs each gather 64 scattered blocks of a 512 KB table with one DMA list;
 * the PPE checks their sums. */
#include <libspe2.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "gather.h"

#define SPES 4

extern spe_program_handle_t gather_spu;

typedef struct {
    spe_context_ptr_t ctx;
    gather_t *g;
} run_t;

static void *run(void *arg) {
    run_t *r = arg;
    unsigned int entry = SPE_DEFAULT_ENTRY;
    spe_context_run(r->ctx, &entry, 0, r->g, NULL, NULL);
    return NULL;
}

int main(void) {
    unsigned int *table;
    gather_t *g;
    unsigned long long *results;
    if (posix_memalign((void **)&table, 128, TABLE_BLOCKS * BLOCK) ||
        posix_memalign((void **)&g, 128, SPES * sizeof *g) || posix_memalign((void **)&results, 128, SPES * 16))
        return 1;
    for (unsigned int i = 0; i < TABLE_BLOCKS * BLOCK / 4; i++)
        table[i] = i;

    run_t runs[SPES];
    pthread_t threads[SPES];
    for (int s = 0; s < SPES; s++) {
        g[s] = (gather_t){(uint64_t)(uintptr_t)table, (uint64_t)(uintptr_t)&results[2 * s], 17 * s, 61, {0, 0}};
        runs[s].ctx = spe_context_create(0, NULL);
        runs[s].g = &g[s];
        spe_program_load(runs[s].ctx, &gather_spu);
        pthread_create(&threads[s], NULL, run, &runs[s]);
    }
    int wrong = 0;
    for (int s = 0; s < SPES; s++) {
        pthread_join(threads[s], NULL);
        spe_context_destroy(runs[s].ctx);
        unsigned long long want = 0;
        for (unsigned int i = 0; i < BLOCKS; i++) {
            unsigned int block = (g[s].first + i * g[s].stride) % TABLE_BLOCKS;
            for (unsigned int w = 0; w < BLOCK / 4; w++)
                want += block * (BLOCK / 4) + w;
        }
        printf("SPE %d gathered %d blocks: sum %llu (%s)\n", s, BLOCKS, results[2 * s],
               results[2 * s] == want ? "right" : "WRONG");
        wrong += results[2 * s] != want;
    }
    return wrong != 0;
}
