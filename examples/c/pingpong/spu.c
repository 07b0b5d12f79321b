/* Ping-pong, two ways. SPE 0 answers the PPE's mailbox messages (in mailbox in,
 * out mailbox back); then SPE 0 and SPE 1 bounce a signal between them with
 * mfc_sndsig to each other's signal-notification register 1. */
#include <spu_mfcio.h>
#include <cellsim.h>

#include "pingpong.h"

static pingpong_t pp __attribute__((aligned(128)));
static unsigned int sig[4] __attribute__((aligned(16))); /* sig[3]: LS address ending in 0xC */

static void send_signal(unsigned long long ea, unsigned int value) {
    sig[3] = value;
    mfc_sndsig(&sig[3], ea, 0, 0, 0);
    mfc_write_tag_mask(1);
    mfc_read_tag_status_all();
}

int main(unsigned long long speid, unsigned long long argp, unsigned long long envp) {
    (void)speid;
    unsigned int me = (unsigned int)envp;
    mfc_get(&pp, argp, sizeof pp, 0, 0, 0);
    mfc_write_tag_mask(1);
    mfc_read_tag_status_all();

    if (me == 0)
        for (unsigned int i = 0; i < pp.rounds; i++)
            spu_write_out_mbox(spu_read_in_mbox() + 1);

    unsigned int got = 0;
    for (unsigned int i = 0; i < pp.rounds; i++) {
        if (me == 0) {
            send_signal(pp.signal1[1], i + 1);
            got = spu_read_signal1();
        } else {
            got = spu_read_signal1();
            spu_compute(50);
            send_signal(pp.signal1[0], got);
        }
    }
    return got;
}
