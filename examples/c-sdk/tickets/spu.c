/* Each SPE takes tickets from a shared counter in main memory (libsync's
 * atomic_inc_return) until they run out, and says how many it took. */
#include <libsync.h>
#include <spu_mfcio.h>
#include <cellsim.h>

int main(unsigned long long speid, unsigned long long argp, unsigned long long envp)
{
    int mine = 0;
    while (atomic_inc_return(argp) <= (int)envp) {
        mine++;
        spu_compute(200); /* the work of one ticket */
    }
    return mine;
}
