/* The control block the PPU gives each SPE (argp points to it): 32 bytes. */
#ifndef CONTROL_H
#define CONTROL_H
#include <stdint.h>

#define SPES 8
#define CHUNK 16384 /* bytes per DMA, the largest single transfer */
#define CHUNKS_PER_SPE 16
#define FLOATS (SPES * CHUNKS_PER_SPE * CHUNK / 4)

typedef struct {
    uint64_t src, dst;
    uint32_t chunks;
    uint32_t pad[3];
} control_block_t __attribute__((aligned(32)));
#endif
