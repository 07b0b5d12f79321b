/* Each SPE greets with the id libspe2 gave its context. */
#include <stdio.h>

int main(unsigned long long speid, unsigned long long argp, unsigned long long envp)
{
    (void)envp;
    printf("Hello Cell from SPE context %llu (argp %llu)\n", speid, argp);
    return 0;
}
