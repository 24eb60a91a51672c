/* Issue #16: a program ld.so runs (`ld.so ./prog`, what `ldd` does with --verify and
 * LD_TRACE_LOADED_OBJECTS): built static, non-PIE and PIE. */
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    char *p = malloc(1 << 20);
    p[0] = 1;
    printf("ldso test: %d args, first %s\n", argc, argc > 1 ? argv[1] : "-");
    return 3;
}
