/* Ends in different ways, by argp: a return, exit(), exit(-1), and a quiet wait
 * for a mailbox word that takes its time. */
#include <spu_mfcio.h>
#include <stdlib.h>
#include <cellsim.h>

int main(unsigned long long speid, unsigned long long argp, unsigned long long envp)
{
    switch (argp) {
    case 0:
        return 7;
    case 1:
        exit(300); /* libspe2 reports the low 8 bits: 44 */
    case 2:
        exit(-1); /* 255 */
    default:
        spu_compute(100000); /* about 31 us */
        spu_write_out_intr_mbox(42);
        return 0;
    }
}
