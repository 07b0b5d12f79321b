#include <libspe2.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

extern spe_program_handle_t ls_spu;
static spe_context_ptr_t ctx;

static void *run(void *p)
{
    unsigned int entry = SPE_DEFAULT_ENTRY;
    spe_context_run(ctx, &entry, 0, NULL, NULL, NULL);
    return p;
}

int main(void)
{
    ctx = spe_context_create(0, NULL);
    spe_program_load(ctx, &ls_spu);
    pthread_t t;
    pthread_create(&t, NULL, run, NULL);
    unsigned int lsa;
    while (spe_out_mbox_read(ctx, &lsa, 1) == 0)
        ;
    char *ls = spe_ls_area_get(ctx);
    strcpy(ls + lsa, "written by the PPU through spe_ls_area_get");
    printf("PPU: local-store address 0x%05x, in the top 64 KB: %s\n", lsa, lsa >= 0x30000 ? "yes" : "no");
    unsigned int go = 1;
    spe_in_mbox_write(ctx, &go, 1, SPE_MBOX_ALL_BLOCKING);
    pthread_join(t, NULL);
    return 0;
}
