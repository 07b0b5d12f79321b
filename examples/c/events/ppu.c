/* The PPE's side: it starts the streaming SPE, writes "stop" to its inbound mailbox
 * after a while, and waits with a libspe2 event handler for the SPE's
 * outbound-interrupt message and for its stop. */
#include <libspe2.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include <cellsim.h>

#include "events.h"

extern spe_program_handle_t stream;

static void *data;

static void *run(void *arg) {
    unsigned int entry = SPE_DEFAULT_ENTRY;
    spe_stop_info_t stop;
    spe_context_run(arg, &entry, 0, data, (void *)(uintptr_t)BLOCKS, &stop);
    return NULL;
}

int main(void) {
    if (posix_memalign(&data, DATA_ALIGN, BLOCK * BLOCKS))
        return 1;
    spe_context_ptr_t ctx = spe_context_create(0, NULL);
    spe_program_load(ctx, &stream);
    spe_event_handler_ptr_t handler = spe_event_handler_create();
    spe_event_unit_t unit = {.events = SPE_EVENT_OUT_INTR_MBOX | SPE_EVENT_SPE_STOPPED, .spe = ctx};
    spe_event_handler_register(handler, &unit);
    pthread_t runner;
    pthread_create(&runner, NULL, run, ctx);
    ppu_compute(STOP_AFTER);
    unsigned int stop = STOP;
    spe_in_mbox_write(ctx, &stop, 1, SPE_MBOX_ALL_BLOCKING);
    printf("the PPE writes 'stop' after %d cycles; the SPE waits on tag group OR mailbox\n", STOP_AFTER);
    for (int i = 0; i < 2; i++) {
        spe_event_unit_t event;
        spe_event_wait(handler, &event, 1, -1);
        if (event.events == SPE_EVENT_OUT_INTR_MBOX) {
            unsigned int done;
            spe_out_intr_mbox_read(ctx, &done, 1, SPE_MBOX_ALL_BLOCKING);
            printf("  SPE_EVENT_OUT_INTR_MBOX: the SPE streamed %u of %d blocks before the stop\n", done, BLOCKS);
        } else {
            printf("  SPE_EVENT_SPE_STOPPED: the SPE program ended\n");
        }
    }
    pthread_join(runner, NULL);
    spe_event_handler_destroy(handler);
    spe_context_destroy(ctx);
    free(data);
    return 0;
}
