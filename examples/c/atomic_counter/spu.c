/* envp increments of the shared counter at argp with libsync's atomic_inc: the
 * atomic unit's getllar/putllc loop, retried while another SPE wrote the line.
 * The SPU twin of examples/atomic_counter.py. */
#include <libsync.h>

int main(unsigned long long speid, unsigned long long argp, unsigned long long envp) {
    (void)speid;
    for (unsigned long long i = 0; i < envp; i++)
        atomic_inc(argp);
    return 0;
}
