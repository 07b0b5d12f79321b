/* Each SPE sums its slice of integers (fetched by DMA), reports through the
 * interrupting mailbox, and exits with its index. */
#include <spu_mfcio.h>
#include <cellsim.h>

#define SLICE 256

typedef struct {
    unsigned long long data;
    unsigned int index, pad[29];
} job_t;

static job_t job __attribute__((aligned(128)));
static int slice[SLICE] __attribute__((aligned(128)));

int main(unsigned long long speid, unsigned long long argp, unsigned long long envp)
{
    mfc_get(&job, argp, sizeof job, 0, 0, 0);
    mfc_write_tag_mask(1);
    mfc_read_tag_status_all();
    mfc_get(slice, job.data, sizeof slice, 0, 0, 0);
    mfc_read_tag_status_all();
    int sum = 0;
    for (int i = 0; i < SLICE; i++)
        sum += slice[i];
    spu_compute(SLICE * (job.index + 1)); /* later SPEs have more to do */
    spu_write_out_intr_mbox((unsigned int)sum);
    return (int)job.index;
}
