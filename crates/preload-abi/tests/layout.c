/* Prints every field's offset and size and every constant of multios_preload_abi.h, one
 * "NAME VALUE..." line each, for tests/c_layout.rs to compare with the Rust definition. */
#include "multios_preload_abi.h"
#include <stddef.h>
#include <stdio.h>

#define FIELD(s, f) printf(#s "." #f " %zu %zu\n", offsetof(struct s, f), sizeof(((struct s *)0)->f))
#define CONST(c) printf(#c " %llu\n", (unsigned long long)(c))

int main(void) {
    printf("multios_preload_cost %zu\n", sizeof(struct multios_preload_cost));
    FIELD(multios_preload_cost, kind);
    FIELD(multios_preload_cost, reserved);
    FIELD(multios_preload_cost, param);
    FIELD(multios_preload_cost, samples);
    FIELD(multios_preload_cost, nsamples);
    printf("multios_preload_config %zu\n", sizeof(struct multios_preload_config));
    FIELD(multios_preload_config, magic);
    FIELD(multios_preload_config, version);
    FIELD(multios_preload_config, size);
    FIELD(multios_preload_config, mode);
    FIELD(multios_preload_config, total);
    FIELD(multios_preload_config, intercept);
    FIELD(multios_preload_config, timing);
    FIELD(multios_preload_config, rewrite);
    FIELD(multios_preload_config, realtime);
    FIELD(multios_preload_config, idle_ticks);
    FIELD(multios_preload_config, patience_ticks);
    FIELD(multios_preload_config, hv_exit_ticks);
    FIELD(multios_preload_config, compute);
    FIELD(multios_preload_config, control);
    FIELD(multios_preload_config, stats_dir);
    FIELD(multios_preload_config, rewrite_cache);
    FIELD(multios_preload_config, local_stub);
    FIELD(multios_preload_config, delegated);
    FIELD(multios_preload_config, costs);
    CONST(MULTIOS_PRELOAD_MAGIC);
    CONST(MULTIOS_PRELOAD_VERSION);
    CONST(MULTIOS_PRELOAD_NR_MAX);
    CONST(MULTIOS_PRELOAD_CPU_WORDS);
    CONST(MULTIOS_PRELOAD_PATH_MAX);
    CONST(MULTIOS_PRELOAD_REJECT_EXIT);
    CONST(MULTIOS_PRELOAD_MODE_MIGRATE);
    CONST(MULTIOS_PRELOAD_MODE_SHM);
    CONST(MULTIOS_PRELOAD_INTERCEPT_LAZY);
    CONST(MULTIOS_PRELOAD_INTERCEPT_EAGER);
    CONST(MULTIOS_PRELOAD_COST_CONSTANT);
    CONST(MULTIOS_PRELOAD_COST_EXPONENTIAL);
    CONST(MULTIOS_PRELOAD_COST_SAMPLES);
    printf("MULTIOS_PRELOAD_REJECTED_SUFFIX %s\n", MULTIOS_PRELOAD_REJECTED_SUFFIX);
    return 0;
}
