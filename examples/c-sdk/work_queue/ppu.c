/* A work queue guarded by a mutex and two condition variables: main produces
 * 12 jobs into a 3-slot queue, 3 pthreads take them and run each on their SPE. */
#include <libspe2.h>
#include <pthread.h>
#include <stdio.h>

#define WORKERS 3
#define JOBS 12
#define SLOTS 3

static int blocks[JOBS][32] __attribute__((aligned(128)));
static int queue[SLOTS], head, tail, finished;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t not_empty = PTHREAD_COND_INITIALIZER, not_full = PTHREAD_COND_INITIALIZER;
static spe_program_handle_t *image;
static int done_by[WORKERS];

static void *worker(void *arg)
{
    int me = (int)(long)arg;
    spe_context_ptr_t ctx = spe_context_create(0, NULL);
    spe_program_load(ctx, image);
    for (;;) {
        pthread_mutex_lock(&lock);
        while (head == tail && !finished)
            pthread_cond_wait(&not_empty, &lock);
        if (head == tail) {
            pthread_mutex_unlock(&lock);
            break;
        }
        int job = queue[head++ % SLOTS];
        pthread_cond_signal(&not_full);
        pthread_mutex_unlock(&lock);
        unsigned int entry = SPE_DEFAULT_ENTRY;
        spe_context_run(ctx, &entry, 0, blocks[job], NULL, NULL);
        done_by[me]++;
    }
    spe_context_destroy(ctx);
    pthread_exit(NULL);
}

int main(void)
{
    image = spe_image_open("worker.elf");
    for (int j = 0; j < JOBS; j++)
        for (int i = 0; i < 32; i++)
            blocks[j][i] = j * 100 + i;
    pthread_t t[WORKERS];
    for (long w = 0; w < WORKERS; w++)
        pthread_create(&t[w], NULL, worker, (void *)w);
    for (int j = 0; j < JOBS; j++) {
        pthread_mutex_lock(&lock);
        while (tail - head == SLOTS)
            pthread_cond_wait(&not_full, &lock);
        queue[tail++ % SLOTS] = j;
        pthread_cond_signal(&not_empty);
        pthread_mutex_unlock(&lock);
    }
    pthread_mutex_lock(&lock);
    finished = 1;
    pthread_cond_broadcast(&not_empty);
    pthread_mutex_unlock(&lock);
    int jobs = 0;
    for (int w = 0; w < WORKERS; w++) {
        pthread_join(t[w], NULL);
        jobs += done_by[w];
    }
    long sum = 0;
    for (int j = 0; j < JOBS; j++)
        for (int i = 0; i < 32; i++)
            sum += blocks[j][i];
    printf("%d jobs done by %d workers, sum %ld (expected %ld)\n", jobs, WORKERS, sum,
           2L * (JOBS * 32 * (JOBS - 1) * 100 / 2 + JOBS * 31 * 32 / 2));
    return 0;
}
