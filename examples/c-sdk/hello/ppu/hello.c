/* One context per SPE, each run from its own pthread, as the SDK's first sample does. */
#include <libspe2.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define SPES 4

extern spe_program_handle_t hello_spu;

typedef struct {
    spe_context_ptr_t spe;
    unsigned long long argp;
} thread_arg_t;

static void *run(void *p)
{
    thread_arg_t *arg = p;
    unsigned int entry = SPE_DEFAULT_ENTRY;
    spe_stop_info_t stop;
    if (spe_context_run(arg->spe, &entry, 0, (void *)arg->argp, NULL, &stop) < 0) {
        perror("spe_context_run");
        exit(1);
    }
    pthread_exit(NULL);
}

int main(void)
{
    pthread_t threads[SPES];
    thread_arg_t args[SPES];
    for (int i = 0; i < SPES; i++) {
        args[i].spe = spe_context_create(0, NULL);
        if (!args[i].spe) {
            perror("spe_context_create");
            return 1;
        }
        if (spe_program_load(args[i].spe, &hello_spu)) {
            perror("spe_program_load");
            return 1;
        }
        args[i].argp = 100 + i;
        pthread_create(&threads[i], NULL, run, &args[i]);
    }
    for (int i = 0; i < SPES; i++) {
        pthread_join(threads[i], NULL);
        spe_context_destroy(args[i].spe);
    }
    printf("all %d SPEs said hello\n", SPES);
    return 0;
}
