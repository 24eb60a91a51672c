/* Memory protection keys (issue #14, found running node in the LWK: pkey_alloc was refused with
 * ENOSYS and a report). Prints what each call answers; run natively and in the LWK. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

static void show(const char *what, int r) {
    printf("%s %d %s\n", what, r, r < 0 ? strerror(errno) : "");
}

int main(void) {
    show("alloc", pkey_alloc(0, 0));
    show("alloc-bad-flags", pkey_alloc(1, 0));
    show("free", pkey_free(5));
    char *p = mmap(0, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    p[0] = 1;
    show("mprotect-key-minus-1", pkey_mprotect(p, 4096, PROT_READ, -1));
    show("mprotect-key-3", pkey_mprotect(p, 4096, PROT_READ | PROT_WRITE, 3));
    printf("readable %d\n", p[0]);
    return 0;
}
