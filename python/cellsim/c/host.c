/* cellsim-host: the process a C program runs in (see cellsim_proto.h).
 *
 *   cellsim-host VERSION IMAGE CTL_FD PARENT_PID [FD:ADDRESS:BYTES]...
 *
 * Maps the control block and each shared region (local stores, main memory) at
 * its fixed address, loads the image and hands over to its runtime. Dies with
 * the simulator (PR_SET_PDEATHSIG) and leaves Ctrl-C to it. Written for cellsim. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <stdint.h>
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

/* The pages an image occupies (its PT_LOAD segments), found by its base address. */
struct image_range {
    uintptr_t base, lo, hi;
};

static int image_extent(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    struct image_range *r = data;
    uintptr_t lo = UINTPTR_MAX, hi = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        uintptr_t a = info->dlpi_addr + ph->p_vaddr;
        if (a < lo)
            lo = a;
        if (a + ph->p_memsz > hi)
            hi = a + ph->p_memsz;
    }
    if (lo != r->base && !(lo <= r->base && r->base < hi))
        return 0;
    r->lo = lo & ~(uintptr_t)4095;
    r->hi = (hi + 4095) & ~(uintptr_t)4095;
    return 1;
}

/* Maps region FD:ADDRESS:BYTES at its fixed address, except the pages [skip_lo, skip_hi) an
 * image linked into it occupies. A local store is followed by a page-less guard, so a pointer
 * run past its 256 KB faults, as on the SPU. */
static void map_region(const char *spec, uintptr_t skip_lo, uintptr_t skip_hi) {
    char *end;
    int fd = (int)strtol(spec, &end, 10);
    uintptr_t at = (uintptr_t)strtoull(end + 1, &end, 0);
    size_t bytes = (size_t)strtoull(end + 1, &end, 0);
    uintptr_t stop = at + bytes;
    if (skip_hi <= at || skip_lo >= stop)
        skip_lo = skip_hi = stop; /* the image is elsewhere: the whole region */
    if (skip_lo < at)
        skip_lo = at;
    if (skip_hi > stop)
        skip_hi = stop;
    uintptr_t parts[2][2] = {{at, skip_lo}, {skip_hi, stop}};
    for (int i = 0; i < 2; i++) {
        size_t n = parts[i][1] - parts[i][0];
        if (!n)
            continue;
        void *p = mmap((void *)parts[i][0], n, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED_NOREPLACE, fd,
                       (off_t)(parts[i][0] - at));
        if (p != (void *)parts[i][0])
            fail("cannot map shared memory at its fixed address", spec);
    }
    if (strstr(end, ":image"))
        mmap((void *)stop, 1 << 16, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
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
    /* the shared regions, but a local store the image is linked into (":image") after it */
    for (int i = 5; i < argc; i++)
        if (!strstr(argv[i], ":image"))
            map_region(argv[i], 0, 0);
    void *image = dlopen(argv[2], RTLD_NOW | RTLD_LOCAL);
    if (!image)
        fail("cannot load the image", dlerror());
    struct image_range r = {0, 0, 0};
    Dl_info info;
    if (dladdr(dlsym(image, "cellsim_serve"), &info) && info.dli_fbase) {
        r.base = (uintptr_t)info.dli_fbase;
        dl_iterate_phdr(image_extent, &r);
    }
    for (int i = 5; i < argc; i++)
        if (strstr(argv[i], ":image"))
            map_region(argv[i], r.lo, r.hi);
    int (*serve)(cellsim_ctl *, void *) = (int (*)(cellsim_ctl *, void *))dlsym(image, "cellsim_serve");
    if (!serve)
        fail("the image was not built by this cellsim (no cellsim_serve): rebuild it with `cellsim cc`", argv[2]);
    return serve(ctl, dlsym(image, "main"));
}
