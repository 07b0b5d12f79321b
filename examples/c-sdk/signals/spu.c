/* Signal-notification registers: register 1 overwrites (a command), register 2
 * is configured OR (flags accumulate from several writers). */
#include <spu_mfcio.h>
#include <stdio.h>

int main(unsigned long long speid, unsigned long long argp, unsigned long long envp)
{
    for (;;) {
        unsigned int command = spu_read_signal1();
        if (command == 0xDEAD)
            break;
        unsigned int flags = spu_read_signal2();
        printf("SPU: command %u, flags 0x%x\n", command, flags);
        spu_write_out_mbox(command * 10);
    }
    return 0;
}
