/* Issue #16: a program the malformed-ELF tests copy and damage (its headers, not its code). */
#include <stdio.h>
int main(void) {
    puts("hello from an intact program");
    return 0;
}
