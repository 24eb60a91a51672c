/* Calls realloc (and free) but never malloc by name: the malloc override still applies to it. */
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
    (void)argv;
    char *p = realloc(NULL, (size_t)argc * 100);
    if (!p) return 1;
    p[0] = 'x';
    printf("%c\n", p[0]);
    free(p);
    return 0;
}
