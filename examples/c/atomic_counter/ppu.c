/* Eight SPEs increment one counter in a 128-byte lock line of main memory; no
 * increment is lost. argv[1]: increments per SPE (default 100). */
#include <libspe2.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define SPES 8

extern spe_program_handle_t counter_spu;

static int *counter;
static unsigned long long increments = 100;

static void *run(void *arg) {
    spe_context_ptr_t ctx = arg;
    unsigned int entry = SPE_DEFAULT_ENTRY;
    spe_context_run(ctx, &entry, 0, counter, (void *)(uintptr_t)increments, NULL);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc > 1)
        increments = strtoull(argv[1], NULL, 10);
    if (posix_memalign((void **)&counter, 128, 128))
        return 1;
    *counter = 0;
    spe_context_ptr_t ctx[SPES];
    pthread_t threads[SPES];
    for (int s = 0; s < SPES; s++) {
        ctx[s] = spe_context_create(0, NULL);
        spe_program_load(ctx[s], &counter_spu);
        pthread_create(&threads[s], NULL, run, ctx[s]);
    }
    for (int s = 0; s < SPES; s++) {
        pthread_join(threads[s], NULL);
        spe_context_destroy(ctx[s]);
    }
    printf("%d SPEs x %llu atomic increments: count=%d (%s)\n", SPES, increments, *counter,
           *counter == (int)(SPES * increments) ? "none lost" : "LOST SOME");
    return *counter != (int)(SPES * increments);
}
