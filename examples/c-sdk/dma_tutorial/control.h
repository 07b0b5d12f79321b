/* The control block the PPU hands each SPE (argp): where its data is and how much. */
#ifndef CONTROL_H
#define CONTROL_H

typedef struct {
    unsigned long long in;  /* effective address of the input floats */
    unsigned long long out; /* effective address of the output floats */
    unsigned int count;     /* floats, a multiple of CHUNK_FLOATS */
    unsigned int pad[27];   /* a whole 128-byte line */
} control_block_t __attribute__((aligned(128)));

#endif
