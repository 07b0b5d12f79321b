/* SPU events: one wait for "my DMA is done OR the PPE has a message". The SPE streams
 * 16 KB blocks and waits in spu_read_event_status on the tag-group event (the update
 * requested with mfc_write_tag_update_all is met) and the inbound-mailbox event at
 * once. The twin of examples/events.py, line for line. */
#include <spu_mfcio.h>
#include <cellsim.h>

#include "events.h"

static char buf[BLOCK] __attribute__((aligned(128)));

int main(unsigned long long speid, unsigned long long argp, unsigned long long envp) {
    (void)speid;
    spu_write_event_mask(MFC_TAG_STATUS_UPDATE_EVENT | MFC_IN_MBOX_AVAILABLE_EVENT);
    mfc_write_tag_mask(1 << 0);
    unsigned int done = 0;
    mfc_get(buf, argp, BLOCK, 0, 0, 0);
    mfc_write_tag_update_all();
    while (done < envp) {
        unsigned int events = spu_read_event_status();
        spu_write_event_ack(events);
        if ((events & MFC_IN_MBOX_AVAILABLE_EVENT) && spu_read_in_mbox() == STOP) {
            mfc_read_tag_status(); /* the get in flight lands before the program ends */
            break;
        }
        if (events & MFC_TAG_STATUS_UPDATE_EVENT) {
            mfc_read_tag_status();
            spu_compute(WORK_CYCLES);
            done++;
            if (done < envp) {
                mfc_get(buf, argp + (unsigned long long)done * BLOCK, BLOCK, 0, 0, 0);
                mfc_write_tag_update_all();
            }
        }
    }
    spu_write_out_intr_mbox(done);
    return done;
}
