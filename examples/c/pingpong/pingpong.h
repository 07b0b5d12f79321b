#ifndef PINGPONG_H
#define PINGPONG_H
#include <stdint.h>
/* What the PPE tells both SPEs: the EA of each one's signal register 1. */
typedef struct {
    uint64_t signal1[2];
    uint32_t rounds;
    uint32_t pad[3];
} pingpong_t;
#endif
