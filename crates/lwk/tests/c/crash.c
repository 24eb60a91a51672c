/* Dereferences NULL: the LWK must report a guest page fault with rip, address and symbol. */
#include <stdio.h>
int *volatile p;
__attribute__((noinline)) int crash_here(void) { return *p; }
int main(void) {
    printf("before\n");
    fflush(stdout);
    return crash_here();
}
