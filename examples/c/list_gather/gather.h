#ifndef GATHER_H
#define GATHER_H
#include <stdint.h>
#define BLOCK 128      /* bytes per gathered block */
#define BLOCKS 64      /* blocks each SPE gathers, in one DMA list */
#define TABLE_BLOCKS 4096
/* What each SPE gets (argp): the table, the blocks to gather, where to put the sum. */
typedef struct {
    uint64_t table;
    uint64_t result;
    uint32_t first, stride; /* block i is first + i * stride (mod TABLE_BLOCKS) */
    uint32_t pad[2];
} gather_t;
#endif
