/* The SPU's first registers, set directly: 48 bytes, one quadword per register,
 * the value in each register's preferred doubleword. */
#include <libspe2.h>
#include <stdio.h>
#include <string.h>

typedef struct {
    unsigned long long preferred, unused;
} reg128_t;

extern spe_program_handle_t regs_spu;

int main(void)
{
    spe_context_ptr_t ctx = spe_context_create(0, NULL);
    spe_program_load(ctx, &regs_spu);
    for (unsigned long long step = 1; step <= 3; step++) {
        reg128_t regs[3];
        memset(regs, 0, sizeof regs);
        regs[0].preferred = 1000;
        regs[1].preferred = 10;
        regs[2].preferred = step;
        unsigned int entry = SPE_DEFAULT_ENTRY;
        spe_stop_info_t stop;
        spe_context_run(ctx, &entry, SPE_RUN_USER_REGS, regs, NULL, &stop);
        printf("step %llu: exit code %d\n", step, stop.result.spe_exit_code);
    }
    spe_context_destroy(ctx);
    return 0;
}
