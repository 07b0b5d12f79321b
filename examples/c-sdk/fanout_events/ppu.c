/* Book style: fan out one pthread per SPE, then collect results as they come
 * with one event handler (SPE_EVENT_OUT_INTR_MBOX and SPE_EVENT_SPE_STOPPED). */
#include <libspe2.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define SPES 6
#define SLICE 256

typedef struct {
    unsigned long long data;
    unsigned int index, pad[29];
} job_t;

static job_t jobs[SPES] __attribute__((aligned(128)));
static int data[SPES * SLICE] __attribute__((aligned(128)));
static spe_context_ptr_t ctx[SPES];

static void *runner(void *arg)
{
    job_t *job = arg;
    unsigned int entry = SPE_DEFAULT_ENTRY;
    spe_context_run(ctx[job->index], &entry, 0, job, NULL, NULL);
    return NULL;
}

int main(void)
{
    spe_program_handle_t *image = spe_image_open("fanout.spu.elf");
    if (!image) {
        perror("spe_image_open");
        return 1;
    }
    for (int i = 0; i < SPES * SLICE; i++)
        data[i] = i;
    spe_event_handler_ptr_t handler = spe_event_handler_create();
    spe_event_unit_t units[SPES];
    pthread_t threads[SPES];
    for (int s = 0; s < SPES; s++) {
        ctx[s] = spe_context_create(SPE_EVENTS_ENABLE, NULL);
        spe_program_load(ctx[s], image);
        units[s].events = SPE_EVENT_OUT_INTR_MBOX | SPE_EVENT_SPE_STOPPED;
        units[s].spe = ctx[s];
        units[s].data.u32 = (unsigned int)s;
        spe_event_handler_register(handler, &units[s]);
        jobs[s].data = (unsigned long long)(unsigned long)&data[s * SLICE];
        jobs[s].index = (unsigned int)s;
        pthread_create(&threads[s], NULL, runner, &jobs[s]);
    }
    long total = 0;
    for (int stopped = 0; stopped < SPES;) {
        spe_event_unit_t got;
        if (spe_event_wait(handler, &got, 1, -1) < 1)
            continue;
        unsigned int s = got.data.u32;
        if (got.events & SPE_EVENT_OUT_INTR_MBOX) {
            unsigned int sum;
            spe_out_intr_mbox_read(got.spe, &sum, 1, SPE_MBOX_ALL_BLOCKING);
            printf("SPE %u: sum %u\n", s, sum);
            total += sum;
        }
        if (got.events & SPE_EVENT_SPE_STOPPED) {
            spe_stop_info_t stop;
            spe_stop_info_read(got.spe, &stop);
            printf("SPE %u stopped, exit code %d\n", s, stop.result.spe_exit_code);
            stopped++;
        }
    }
    for (int s = 0; s < SPES; s++) {
        pthread_join(threads[s], NULL);
        spe_event_handler_deregister(handler, &units[s]);
        spe_context_destroy(ctx[s]);
    }
    spe_event_handler_destroy(handler);
    spe_image_close(image);
    printf("total %ld (expected %ld)\n", total, (long)(SPES * SLICE) * (SPES * SLICE - 1) / 2);
    return 0;
}
