/* libmisc.h for cellsim: the SDK's aligned allocation, written for cellsim from the
 * public SDK library documentation. On the PPU the memory is simulated main memory;
 * on the SPU it is the program's heap in its local store. */
#ifndef CELLSIM_LIBMISC_H
#define CELLSIM_LIBMISC_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* `size` bytes aligned to 2**log2_align bytes (7: a 128-byte cache line). */
void *malloc_align(size_t size, unsigned int log2_align);
void free_align(void *ptr);

#ifdef __cplusplus
}
#endif
#endif
