/* fork is not supported: the LWK refuses clone with a named report and fork() fails cleanly. */
#include <stdio.h>
#include <unistd.h>
int main(void) {
    pid_t p = fork();
    printf("fork returned %d\n", p < 0 ? -1 : 0);
    return p < 0 ? 0 : 1;
}
