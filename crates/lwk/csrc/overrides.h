/* multios LWK function overrides (issue #13): what the families of the preloaded object share.
 * Each family (clock.c in overrides.c, threads.c, prefault.c) exports the functions it overrides
 * and has an init function the object's constructor calls with the list of overrides that are
 * on (MULTIOS_LWK_OVERRIDES); a function that is not on calls the next definition (libc's). */
#ifndef MULTIOS_LWK_OVERRIDES_H
#define MULTIOS_LWK_OVERRIDES_H

/* True when `name` is in the comma-separated `list`. */
int multios_listed(const char *list, const char *name);
/* The next definition of `name` after this object (libc's), looked up once at start-up. */
void *multios_next(const char *name);

void multios_threads_init(const char *list);
void multios_prefault_init(const char *list);

#endif
