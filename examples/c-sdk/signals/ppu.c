#include <libspe2.h>
#include <pthread.h>
#include <stdio.h>

static spe_context_ptr_t ctx;

static void *run(void *p)
{
    unsigned int entry = SPE_DEFAULT_ENTRY;
    spe_context_run(ctx, &entry, 0, NULL, NULL, NULL);
    return p;
}

int main(void)
{
    spe_program_handle_t *prog = spe_image_open("bin/waiter");
    ctx = spe_context_create(SPE_CFG_SIGNOTIFY2_OR, NULL);
    spe_program_load(ctx, prog);
    pthread_t t;
    pthread_create(&t, NULL, run, NULL);
    for (unsigned int c = 1; c <= 3; c++) {
        spe_signal_write(ctx, SPE_SIG_NOTIFY_REG_2, 1u << c);
        spe_signal_write(ctx, SPE_SIG_NOTIFY_REG_2, 0x100u << c); /* ORed with the first */
        spe_signal_write(ctx, SPE_SIG_NOTIFY_REG_1, c);
        unsigned int reply;
        while (spe_out_mbox_read(ctx, &reply, 1) == 0)
            ;
        printf("PPU: reply %u\n", reply);
    }
    spe_signal_write(ctx, SPE_SIG_NOTIFY_REG_1, 0xDEAD);
    pthread_join(t, NULL);
    spe_context_destroy(ctx);
    return 0;
}
