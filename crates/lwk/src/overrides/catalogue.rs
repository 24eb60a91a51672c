//! What the LWK can override: each function with its implementation (see `mod.rs`), the families
//! bound together, and the glibc names a trace shows on the way to them.

/// What can be overridden: (function, implementation, what the implementation does).
pub const CATALOGUE: &[(&str, &str, &str)] = &[
    (
        "clock_gettime",
        "tsc",
        "CLOCK_REALTIME/MONOTONIC (and _COARSE) read from the TSC in the guest, re-anchored on the real clock every 50 ms; the CPU-time clocks read every 50 ms and extrapolated in between",
    ),
    ("gettimeofday", "tsc", "the realtime clock from the TSC"),
    ("time", "tsc", "the realtime clock from the TSC"),
    (
        "pthread_create",
        "lwk-threads",
        "LWK-native threads: a thread is made once, parks on its vCPU when its function returns and takes the next one (no clone, stack mapping or vCPU creation)",
    ),
    ("pthread_join", "lwk-threads", "joins a pooled thread's job (with pthread_create)"),
    (
        "mmap",
        "prefault",
        "anonymous writable mappings populated when made (MADV_POPULATE_WRITE: Multiverse's Fig. 12 change)",
    ),
    (
        "malloc",
        "lwk-heap",
        "an allocator on 64 MiB chunks of 2 MiB pages from the LWK, never given back: no brk/mmap/munmap/madvise after warm-up",
    ),
    ("free", "lwk-heap", "the lwk-heap allocator (with malloc)"),
    ("calloc", "lwk-heap", "the lwk-heap allocator (with malloc)"),
    ("realloc", "lwk-heap", "the lwk-heap allocator (with malloc)"),
];

/// Functions that are replaced together: naming any one in the file binds them all (a thread
/// made by one implementation must be joined by it; memory from one allocator freed by it).
const FAMILIES: &[(&str, &[&str])] = &[
    (
        "lwk-threads",
        &[
            "pthread_create",
            "pthread_join",
            "pthread_detach",
            "pthread_tryjoin_np",
            "pthread_timedjoin_np",
            "pthread_clockjoin_np",
            "pthread_exit",
        ],
    ),
    (
        "lwk-heap",
        &[
            "malloc",
            "free",
            "calloc",
            "realloc",
            "reallocarray",
            "memalign",
            "aligned_alloc",
            "posix_memalign",
            "valloc",
            "pvalloc",
            "malloc_usable_size",
        ],
    ),
];

/// glibc's exported names (as a trace's frames show them) that lead to a catalogued function.
const ALIASES: &[(&str, &str)] = &[
    ("__clock_gettime", "clock_gettime"),
    ("__gettimeofday", "gettimeofday"),
    ("__libc_malloc", "malloc"),
    ("__libc_calloc", "calloc"),
    ("__libc_realloc", "realloc"),
    ("__libc_free", "free"),
    ("__libc_memalign", "malloc"),
    ("memalign", "malloc"),
    ("posix_memalign", "malloc"),
    ("aligned_alloc", "malloc"),
    ("reallocarray", "realloc"),
    ("pthread_detach", "pthread_create"),
    ("pthread_clockjoin_np", "pthread_join"),
    ("pthread_timedjoin_np", "pthread_join"),
    ("pthread_tryjoin_np", "pthread_join"),
    ("mmap64", "mmap"),
    ("__mmap", "mmap"),
];

/// The implementation of `function` in the catalogue, if any.
pub fn implementation_of(function: &str) -> Option<&'static str> {
    CATALOGUE.iter().find(|c| c.0 == function).map(|c| c.1)
}

/// Every function an overrides file naming `function` binds: its family, or itself.
pub fn bound_with(function: &str) -> Vec<&'static str> {
    let Some(imp) = implementation_of(function) else {
        return Vec::new();
    };
    match FAMILIES.iter().find(|f| f.0 == imp) {
        Some(f) => f.1.to_vec(),
        None => CATALOGUE
            .iter()
            .filter(|c| c.0 == function)
            .map(|c| c.0)
            .collect(),
    }
}

/// The catalogued function a symbol of a trace frame is, or leads to: `name (file)` or a bare
/// name, with `@VERSION` suffixes ignored.
pub fn catalogued(symbol: &str) -> Option<&'static str> {
    let name = symbol.split(" (").next().unwrap_or(symbol);
    let name = name.split('@').next().unwrap_or(name);
    if name.contains('+') {
        return None;
    }
    CATALOGUE
        .iter()
        .map(|c| c.0)
        .find(|f| *f == name)
        .or_else(|| ALIASES.iter().find(|a| a.0 == name).map(|a| a.1))
}

/// Implementations that do not remove the call they override (they change what it does:
/// `prefault` still maps, and populates).
const KEEPS_THE_CALL: &[&str] = &["prefault"];

/// The system calls each implementation's functions make, which the override removes.
const CAUSES: &[(&str, &[&str])] = &[
    ("tsc", &["clock_gettime", "gettimeofday", "time"]),
    (
        "lwk-threads",
        &[
            "clone",
            "clone3",
            "mmap",
            "munmap",
            "mprotect",
            "madvise",
            "futex",
            "set_robust_list",
            "rseq",
            "exit",
            "rt_sigprocmask",
            "sched_getaffinity",
        ],
    ),
    (
        "lwk-heap",
        &["brk", "mmap", "munmap", "mremap", "madvise", "mprotect"],
    ),
];

/// [`catalogued`], for overrides that remove event `call` made under `symbol`: an mmap made under
/// `malloc` goes away with `lwk-heap`, but an mmap under `mmap` stays with `prefault`, and a
/// futex is not a clock read whatever the stack says.
pub fn removing(symbol: &str, call: &str) -> Option<&'static str> {
    catalogued(symbol).filter(|f| {
        implementation_of(f).is_some_and(|i| {
            !KEEPS_THE_CALL.contains(&i)
                && CAUSES
                    .iter()
                    .any(|(imp, calls)| *imp == i && calls.contains(&call))
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_bind_together_and_aliases_lead_to_the_catalogue() {
        assert!(bound_with("pthread_join").contains(&"pthread_exit"));
        assert!(bound_with("calloc").contains(&"posix_memalign"));
        assert_eq!(bound_with("time"), ["time"]);
        assert!(bound_with("fopen").is_empty());
        assert_eq!(catalogued("__libc_malloc (libc.so.6)"), Some("malloc"));
        assert_eq!(catalogued("pthread_create@@GLIBC_2.34"), Some("pthread_create"));
        assert_eq!(catalogued("libc.so.6+0x1234"), None);
        assert_eq!(catalogued("rktio_write (racket)"), None);
        assert_eq!(catalogued("mmap64 (libc.so.6)"), Some("mmap"));
        assert_eq!(removing("mmap64 (libc.so.6)", "mmap"), None);
        assert_eq!(removing("malloc (libc.so.6)", "mmap"), Some("malloc"));
        assert_eq!(removing("malloc (libc.so.6)", "openat"), None);
        assert_eq!(
            removing("__clock_gettime (libc.so.6)", "clock_gettime"),
            Some("clock_gettime")
        );
        assert_eq!(removing("clock_gettime", "futex"), None);
        for (_, to) in ALIASES {
            assert!(implementation_of(to).is_some(), "{to}");
        }
        for (imp, fs) in FAMILIES {
            assert!(fs.iter().any(|f| implementation_of(f) == Some(imp)), "{imp}");
        }
    }
}
