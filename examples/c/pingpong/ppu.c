/* The PPE's side of the ping-pong: it starts two SPE contexts, tells them where
 * each other's signal register is, and plays mailbox ping-pong with SPE 0. */
#include <libspe2.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "pingpong.h"

#define ROUNDS 10
#define SIG_NOTIFY_1_OFFSET 0x1400C /* in the problem-state area */

extern spe_program_handle_t pingpong_spu;

static pingpong_t pp __attribute__((aligned(128)));

typedef struct {
    spe_context_ptr_t ctx;
    unsigned long long me;
    int exit_code;
} run_t;

static void *run(void *arg) {
    run_t *r = arg;
    unsigned int entry = SPE_DEFAULT_ENTRY;
    spe_stop_info_t stop;
    spe_context_run(r->ctx, &entry, 0, &pp, (void *)(uintptr_t)r->me, &stop);
    r->exit_code = stop.result.spe_exit_code;
    return NULL;
}

int main(void) {
    run_t runs[2];
    pthread_t threads[2];
    for (int s = 0; s < 2; s++) {
        runs[s].ctx = spe_context_create(0, NULL);
        runs[s].me = s;
        spe_program_load(runs[s].ctx, &pingpong_spu);
        pp.signal1[s] = (uint64_t)(uintptr_t)spe_ps_area_get(runs[s].ctx, SPE_MSSYNC_AREA) + SIG_NOTIFY_1_OFFSET;
    }
    pp.rounds = ROUNDS;
    for (int s = 0; s < 2; s++)
        pthread_create(&threads[s], NULL, run, &runs[s]);

    unsigned int value = 0;
    for (int i = 0; i < ROUNDS; i++) {
        spe_in_mbox_write(runs[0].ctx, &value, 1, SPE_MBOX_ALL_BLOCKING);
        while (spe_out_mbox_status(runs[0].ctx) == 0)
            ; /* poll: each status read is a load over the EIB */
        spe_out_mbox_read(runs[0].ctx, &value, 1);
    }
    printf("mailbox ping-pong: %d rounds, the PPE's value is %u\n", ROUNDS, value);

    for (int s = 0; s < 2; s++) {
        pthread_join(threads[s], NULL);
        spe_context_destroy(runs[s].ctx);
    }
    printf("signal ping-pong: %d rounds, SPE 0 last got %d, SPE 1 last got %d\n", ROUNDS, runs[0].exit_code,
           runs[1].exit_code);
    return 0;
}
