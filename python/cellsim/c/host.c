/* cellsim-host: the process a C program runs in (see cellsim_proto.h).
 *
 *   cellsim-host VERSION IMAGE CTL_FD PARENT_PID [FD:ADDRESS:BYTES]...
 *
 * Maps the control block and each shared region (local stores, main memory) at
 * its fixed address, loads the image and hands over to its runtime. Dies with
 * the simulator (PR_SET_PDEATHSIG) and leaves Ctrl-C to it. Written for cellsim. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "cellsim_proto.h"

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

static cellsim_ctl *ctl;

static void fail(const char *what, const char *detail) {
    if (ctl) {
        snprintf(ctl->text, sizeof ctl->text, "%s%s%s", what, detail ? ": " : "", detail ? detail : "");
        ctl->msg = CELLSIM_MSG_ERROR;
        cellsim_give_turn(ctl);
    } else {
        fprintf(stderr, "cellsim-host: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
    }
    _exit(127);
}

int main(int argc, char **argv) {
    if (argc < 5)
        fail("usage: cellsim-host VERSION IMAGE CTL_FD PARENT_PID [FD:ADDRESS:BYTES]...", 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != (pid_t)strtol(argv[4], 0, 10))
        _exit(127); /* the simulator is gone already */
    signal(SIGINT, SIG_IGN);
    void *c = mmap(0, CELLSIM_CTL_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, (int)strtol(argv[3], 0, 10), 0);
    if (c == MAP_FAILED)
        fail("cannot map the control block", 0);
    ctl = c;
    ctl->magic = CELLSIM_MAGIC;
    ctl->version = CELLSIM_PROTOCOL;
    ctl->pid = (uint64_t)getpid();
    if (strtol(argv[1], 0, 10) != CELLSIM_PROTOCOL)
        fail("the simulator speaks another protocol version than this cellsim-host", argv[1]);
    for (int i = 5; i < argc; i++) {
        char *end;
        int fd = (int)strtol(argv[i], &end, 10);
        unsigned long long at = strtoull(end + 1, &end, 0);
        size_t bytes = (size_t)strtoull(end + 1, 0, 0);
        void *p = mmap((void *)at, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED_NOREPLACE, fd, 0);
        if (p != (void *)at)
            fail("cannot map shared memory at its fixed address", argv[i]);
    }
    void *image = dlopen(argv[2], RTLD_NOW | RTLD_LOCAL);
    if (!image)
        fail("cannot load the image", dlerror());
    int (*serve)(cellsim_ctl *, void *) = (int (*)(cellsim_ctl *, void *))dlsym(image, "cellsim_serve");
    if (!serve)
        fail("the image was not built by this cellsim (no cellsim_serve): rebuild it with `cellsim cc`", argv[2]);
    return serve(ctl, dlsym(image, "main"));
}
