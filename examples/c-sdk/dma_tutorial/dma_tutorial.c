/* The PPU side: two SPEs square half the array each. */
#include <libspe2.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include "control.h"

#define N 8192
#define SPES 2

extern spe_program_handle_t square;

static float in[N] __attribute__((aligned(128)));
static float out[N] __attribute__((aligned(128)));
static control_block_t cbs[SPES];

static void *run(void *p)
{
    spe_context_ptr_t ctx = spe_context_create(0, NULL);
    spe_program_load(ctx, &square);
    unsigned int entry = SPE_DEFAULT_ENTRY;
    spe_context_run(ctx, &entry, 0, p, NULL, NULL);
    spe_context_destroy(ctx);
    return NULL;
}

int main(void)
{
    for (int i = 0; i < N; i++)
        in[i] = (float)(i % 100);
    pthread_t t[SPES];
    for (int s = 0; s < SPES; s++) {
        cbs[s].in = (unsigned long long)(unsigned long)&in[s * N / SPES];
        cbs[s].out = (unsigned long long)(unsigned long)&out[s * N / SPES];
        cbs[s].count = N / SPES;
        pthread_create(&t[s], NULL, run, &cbs[s]);
    }
    for (int s = 0; s < SPES; s++)
        pthread_join(t[s], NULL);
    double sum = 0;
    int bad = 0;
    for (int i = 0; i < N; i++) {
        sum += out[i];
        bad += out[i] != in[i] * in[i];
    }
    printf("squared %d floats on %d SPEs: sum %.0f, %d wrong\n", N, SPES, sum, bad);
    return bad != 0;
}
