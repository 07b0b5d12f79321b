/* The PPU side: one control block per SPE, one pthread per SPE context
 * (spe_context_run blocks until the SPE program stops), then a check. */
#include <libspe2.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "control.h"

extern spe_program_handle_t square; /* built with --spu square=spu.c */

static control_block_t ctl[SPES] __attribute__((aligned(128)));

typedef struct {
    spe_context_ptr_t ctx;
    void *argp;
    int exit_code;
} run_t;

static void *run(void *arg) {
    run_t *r = arg;
    spe_stop_info_t stop;
    spe_context_run(r->ctx, &(unsigned int){SPE_DEFAULT_ENTRY}, 0, r->argp, NULL, &stop);
    r->exit_code = stop.result.spe_exit_code;
    return NULL;
}

int main(void) {
    float *data, *out;
    if (posix_memalign((void **)&data, 128, FLOATS * 4) || posix_memalign((void **)&out, 128, FLOATS * 4))
        return 1;
    for (int i = 0; i < FLOATS; i++)
        data[i] = (float)(i % 1000);

    pthread_t threads[SPES];
    run_t runs[SPES];
    for (int s = 0; s < SPES; s++) {
        size_t share = (size_t)CHUNKS_PER_SPE * CHUNK;
        ctl[s].src = (uint64_t)(uintptr_t)((char *)data + s * share);
        ctl[s].dst = (uint64_t)(uintptr_t)((char *)out + s * share);
        ctl[s].chunks = CHUNKS_PER_SPE;
        runs[s].ctx = spe_context_create(0, NULL);
        spe_program_load(runs[s].ctx, &square);
        runs[s].argp = &ctl[s];
        pthread_create(&threads[s], NULL, run, &runs[s]);
    }
    for (int s = 0; s < SPES; s++) {
        pthread_join(threads[s], NULL);
        spe_context_destroy(runs[s].ctx);
    }

    int wrong = 0;
    for (int i = 0; i < FLOATS; i++)
        wrong += out[i] != data[i] * data[i];
    printf("%d SPEs squared %d floats: %s\n", SPES, FLOATS, wrong ? "WRONG" : "all correct");
    for (int s = 0; s < SPES; s++)
        printf("  SPE %d exit code %d\n", s, runs[s].exit_code);
    return wrong != 0;
}
