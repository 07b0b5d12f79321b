#include <libspe2.h>
#include <pthread.h>
#include <stdio.h>

#define SPES 4
#define TICKETS 60

extern spe_program_handle_t tickets_spu;
static int counter[32] __attribute__((aligned(128)));
static spe_context_ptr_t ctx[SPES];
static int taken[SPES];

static void *run(void *arg)
{
    long s = (long)arg;
    unsigned int entry = SPE_DEFAULT_ENTRY;
    spe_stop_info_t stop;
    spe_context_run(ctx[s], &entry, 0, counter, (void *)TICKETS, &stop);
    taken[s] = stop.result.spe_exit_code;
    return NULL;
}

int main(void)
{
    pthread_t t[SPES];
    for (long s = 0; s < SPES; s++) {
        ctx[s] = spe_context_create(0, NULL);
        spe_program_load(ctx[s], &tickets_spu);
        pthread_create(&t[s], NULL, run, (void *)s);
    }
    int total = 0;
    for (int s = 0; s < SPES; s++) {
        pthread_join(t[s], NULL);
        printf("SPE %d took %d tickets\n", s, taken[s]);
        total += taken[s];
    }
    printf("%d of %d tickets taken\n", total, TICKETS);
    return total != TICKETS;
}
