/* Both sides keep their buffers on the stack: the PPU's stack is main memory,
 * so a local array is an effective address the SPE can DMA. */
#include <libspe2.h>
#include <stdio.h>

typedef struct {
    unsigned long long ea;
    unsigned int words, pad[29];
} request_t;

extern spe_program_handle_t stack_spu;

int main(void)
{
    unsigned int data[64] __attribute__((aligned(128)));
    request_t req __attribute__((aligned(128)));
    for (int i = 0; i < 64; i++)
        data[i] = (unsigned int)i;
    req.ea = (unsigned long long)(unsigned long)data;
    req.words = 64;
    spe_context_ptr_t ctx = spe_context_create(0, NULL);
    spe_program_load(ctx, &stack_spu);
    unsigned int entry = SPE_DEFAULT_ENTRY;
    spe_context_run(ctx, &entry, 0, &req, NULL, NULL);
    printf("PPU: data[0]=%u data[63]=%u\n", data[0], data[63]);
    return 0;
}
