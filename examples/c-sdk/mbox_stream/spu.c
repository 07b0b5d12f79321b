/* A mailbox stream: words arrive in the inbound mailbox until a zero ends the
 * stream; every 8 words the running sum goes back through the outbound mailbox. */
#include <spu_mfcio.h>
#include <cellsim.h>

int main(unsigned long long speid, unsigned long long argp, unsigned long long envp)
{
    unsigned int sum = 0, n = 0, word;
    while ((word = spu_read_in_mbox()) != 0) {
        sum += word;
        spu_compute(20);
        if (++n % 8 == 0)
            spu_write_out_mbox(sum);
    }
    spu_write_out_mbox(sum);
    return (int)(n & 0xFF);
}
