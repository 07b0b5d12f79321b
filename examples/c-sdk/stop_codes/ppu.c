/* How programs end, as libspe2 reports it; and spe_event_wait with a timeout. */
#include <libspe2.h>
#include <pthread.h>
#include <stdio.h>

extern spe_program_handle_t codes_spu;

static void *run(void *ctx)
{
    unsigned int entry = SPE_DEFAULT_ENTRY;
    spe_context_run(ctx, &entry, 0, (void *)3, NULL, NULL);
    return NULL;
}

int main(void)
{
    spe_context_ptr_t ctx = spe_context_create(SPE_EVENTS_ENABLE, NULL);
    spe_program_load(ctx, &codes_spu);
    for (unsigned long how = 0; how < 3; how++) {
        unsigned int entry = SPE_DEFAULT_ENTRY;
        spe_stop_info_t stop;
        int rc = spe_context_run(ctx, &entry, 0, (void *)how, NULL, &stop);
        spe_stop_info_t again;
        spe_stop_info_read(ctx, &again);
        printf("run %lu: rc %d, reason %s, exit code %d (read again: %d)\n", how, rc,
               stop.stop_reason == SPE_EXIT ? "SPE_EXIT" : "other", stop.result.spe_exit_code,
               again.result.spe_exit_code);
    }
    spe_event_handler_ptr_t h = spe_event_handler_create();
    spe_event_unit_t unit = {.events = SPE_EVENT_OUT_INTR_MBOX, .spe = ctx};
    spe_event_handler_register(h, &unit);
    pthread_t t;
    pthread_create(&t, NULL, run, ctx);
    spe_event_unit_t got;
    int n = spe_event_wait(h, &got, 1, 0); /* a look: nothing yet */
    printf("a look: %d events\n", n);
    n = spe_event_wait(h, &got, 1, 10); /* 10 ms at most: the word comes after about 31 us */
    printf("a wait of at most 10 ms: %d event(s)%s\n", n,
           n == 1 && got.events == SPE_EVENT_OUT_INTR_MBOX ? ", the out-interrupt mailbox" : "");
    unsigned int word;
    spe_out_intr_mbox_read(ctx, &word, 1, SPE_MBOX_ALL_BLOCKING);
    n = spe_event_wait(h, &got, 1, 2); /* nothing more comes: 2 ms, then 0 */
    printf("the word %u; then a wait of 2 ms: %d events\n", word, n);
    pthread_join(t, NULL);
    spe_event_handler_deregister(h, &unit);
    spe_event_handler_destroy(h);
    spe_context_destroy(ctx);
    return 0;
}
