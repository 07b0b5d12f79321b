#ifndef EVENTS_H
#define EVENTS_H
/* What the PPE and the SPE agree on (examples/events.py has the same numbers). */
#define BLOCK 16384
#define BLOCKS 64          /* the stream: longer than the SPE gets through before the stop */
#define WORK_CYCLES 4096   /* the SPE's work on one block */
#define STOP_AFTER 100000  /* PPE cycles before it writes "stop" */
#define STOP 1
#define DATA_ALIGN 65536 /* the stream's alignment: the same memory banks as the Python twin */
#endif
