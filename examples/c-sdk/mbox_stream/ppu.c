/* The PPU feeds 64 words, four at a time with a blocking write, reading the
 * partial sums back by polling the outbound mailbox's status. */
#include <libspe2.h>
#include <pthread.h>
#include <stdio.h>

static spe_context_ptr_t ctx;
static spe_stop_info_t stop;
static int replies; /* 64 words: 8 partial sums, then the final one */

static void *run(void *unused)
{
    unsigned int entry = SPE_DEFAULT_ENTRY;
    spe_context_run(ctx, &entry, 0, NULL, NULL, &stop);
    return unused;
}

static void drain(void)
{
    unsigned int sum;
    while (spe_out_mbox_status(ctx) > 0) {
        spe_out_mbox_read(ctx, &sum, 1);
        printf("%s sum %u\n", ++replies > 8 ? "final" : "partial", sum);
    }
}

int main(void)
{
    spe_program_handle_t *prog = spe_image_open("spu-accumulate");
    ctx = spe_context_create(0, NULL);
    spe_program_load(ctx, prog);
    pthread_t t;
    pthread_create(&t, NULL, run, NULL);
    unsigned int words[4];
    for (unsigned int next = 1; next <= 64;) {
        for (int i = 0; i < 4; i++)
            words[i] = next++;
        int sent = 0;
        while (sent < 4) {
            sent += spe_in_mbox_write(ctx, words + sent, 4 - sent, SPE_MBOX_ANY_NONBLOCKING);
            drain();
        }
    }
    unsigned int end = 0;
    spe_in_mbox_write(ctx, &end, 1, SPE_MBOX_ALL_BLOCKING);
    while (replies < 9) /* the outbound mailbox holds one word: read until the last */
        drain();
    pthread_join(t, NULL);
    printf("the SPU read %d words\n", stop.result.spe_exit_code);
    return 0;
}
