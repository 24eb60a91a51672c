//! Function overrides (`lwk run --overrides FILE`, issue #13; Multiverse §III-D "function
//! overrides"): library functions of the program replaced by LWK implementations.
//!
//! How they bind: the VMM puts an object of its own (`csrc/overrides.c`, embedded in the binary)
//! first in the guest's `LD_PRELOAD`; the guest's ld.so binds every call of an exported function
//! to it once, at load time (the GOT is the symbol cache: no lookup per call), and exec'd programs
//! inherit it through the environment. The object exports every function it can override; the
//! ones the file does not name call libc's definition, resolved once at start-up
//! (`dlsym(RTLD_NEXT)`). Statically linked programs have no dynamic binding: the overrides cannot
//! apply and a warning says so.
//!
//! The file (YAML, Multiverse's `funcs.yaml` in spirit):
//!
//! ```yaml
//! overrides:
//!   - function: clock_gettime   # the library function
//!     with: tsc                 # its LWK implementation
//! ```
//!
//! What exists ([`CATALOGUE`]): the clock family from the TSC (`tsc`); `pthread_create` and
//! `pthread_join` on LWK-native threads kept on their vCPUs (`lwk-threads`, csrc/threads.c);
//! `mmap` populating anonymous memory when it is made (`prefault`, Multiverse's Fig. 12 change,
//! csrc/prefault.c); the `malloc` family on an allocator of 2 MiB-page chunks the LWK hands out
//! once (`lwk-heap`, csrc/heap.c, a second object preloaded only when it is on). Families are
//! bound together ([`bound_with`]): a thread the pool made is joined by the pool.

mod catalogue;
mod file;

pub use catalogue::{bound_with, catalogued, implementation_of, removing, CATALOGUE};
pub use file::{OverrideError, Overrides};

use std::path::Path;

const OBJECT: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/libmultios_lwk_overrides.so"));
/// The `lwk-heap` allocator (csrc/heap.c): preloaded only when the malloc family is on, so that
/// other runs keep glibc's malloc untouched.
const HEAP_OBJECT: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/libmultios_lwk_heap.so"));

impl Overrides {
    /// The environment entries that apply the overrides to a guest run with `env`: `LD_PRELOAD`
    /// with the override object first, the list of overrides on, the TSC rate.
    pub fn environment(&self, env: &[std::ffi::OsString]) -> Result<Vec<std::ffi::OsString>, OverrideError> {
        use std::ffi::OsString;
        let object = multios_host::embed::materialize("lwk-overrides", ".so", OBJECT, 0o644)
            .map_err(OverrideError::Embed)?;
        let bound = self.bound();
        let mut preload = OsString::from("LD_PRELOAD=");
        preload.push(&object);
        if bound.contains(&"malloc") {
            let heap = multios_host::embed::materialize("lwk-heap", ".so", HEAP_OBJECT, 0o644)
                .map_err(OverrideError::Embed)?;
            preload.push(":");
            preload.push(&heap);
        }
        let mut out: Vec<OsString> = Vec::new();
        for e in env {
            let b = std::os::unix::ffi::OsStrExt::as_bytes(e.as_os_str());
            if let Some(rest) = b.strip_prefix(b"LD_PRELOAD=") {
                if !rest.is_empty() {
                    preload.push(":");
                    preload.push(<std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(
                        rest,
                    ));
                }
            } else if !b.starts_with(b"MULTIOS_LWK_OVERRIDES=") && !b.starts_with(b"MULTIOS_LWK_TSC_HZ=") {
                out.push(e.clone());
            }
        }
        out.push(preload);
        out.push(OsString::from(format!(
            "MULTIOS_LWK_OVERRIDES={}",
            bound.join(",")
        )));
        out.push(OsString::from(format!(
            "MULTIOS_LWK_TSC_HZ={:.0}",
            // A short calibration (3 × 1 ms, ≈ 1e-4): the object refines the rate against the
            // real clock every 50 ms; the process-wide one sleeps 15 ms, paid by every run.
            multios_host::tsc::calibrate(std::time::Duration::from_millis(1)).hz
        )));
        Ok(out)
    }

    /// Every function the file binds: the named ones and their families, in the file's order.
    pub fn bound(&self) -> Vec<&'static str> {
        let mut out: Vec<&'static str> = Vec::new();
        for f in self.functions() {
            for g in bound_with(f) {
                if !out.contains(&g) {
                    out.push(g);
                }
            }
        }
        out
    }

    /// Warnings for `program`: statically linked (nothing can bind), or an overridden function the
    /// program and the libraries it names (DT_NEEDED) do not import.
    pub fn warnings(&self, program: &Path) -> Vec<String> {
        let Some(imports) = imports_of(program) else {
            return vec![format!(
                "--overrides: {} is statically linked (or not an ELF program): function overrides bind through \
                 the dynamic loader and do not apply",
                program.display()
            )];
        };
        // A family is bound together: a program importing realloc only is served by the malloc
        // override. And a program may reach a function without importing it (dlopen, dlsym):
        // the override *may* have no effect.
        self.functions()
            .filter(|f| {
                let mut family = bound_with(f);
                if family.is_empty() {
                    family.push(f);
                }
                !family.iter().any(|g| imports.iter().any(|i| i == g))
            })
            .map(|f| {
                let family = bound_with(f);
                let rest = if family.len() > 1 {
                    format!(" or the functions bound with it ({})", family.join(", "))
                } else {
                    String::new()
                };
                format!(
                    "--overrides: {} and its libraries do not call {f}{rest}: that override may have no effect",
                    program.display()
                )
            })
            .collect()
    }
}

/// The undefined function symbols of `program` and of the libraries it names, or None when it is
/// not a dynamically linked ELF program.
fn imports_of(program: &Path) -> Option<Vec<String>> {
    let mut seen: Vec<String> = Vec::new();
    let needed = undefined(program, true, &mut seen)?;
    for lib in needed {
        if let Some(p) = find_library(&lib) {
            let _ = undefined(&p, false, &mut seen);
        }
    }
    Some(seen)
}

/// Appends the undefined dynamic symbols of `path` to `seen`; returns its DT_NEEDED names (None
/// when it is not an ELF file, or, with `program`, has no interpreter: a static program).
fn undefined(path: &Path, program: bool, seen: &mut Vec<String>) -> Option<Vec<String>> {
    let file = crate::sys::MappedFile::open(path).ok()?;
    let elf = goblin::elf::Elf::parse(file.bytes()).ok()?;
    if program && elf.interpreter.is_none() {
        return None;
    }
    for s in elf.dynsyms.iter().filter(|s| s.st_shndx == 0 && s.st_name != 0) {
        if let Some(n) = elf.dynstrtab.get_at(s.st_name) {
            let n = n.split('@').next().unwrap_or(n).to_string();
            if !seen.contains(&n) {
                seen.push(n);
            }
        }
    }
    Some(elf.libraries.iter().map(|l| l.to_string()).collect())
}

/// A DT_NEEDED name found in the usual library directories.
fn find_library(name: &str) -> Option<std::path::PathBuf> {
    [
        "/lib/x86_64-linux-gnu",
        "/usr/lib/x86_64-linux-gnu",
        "/lib64",
        "/usr/lib",
        "/lib",
    ]
    .iter()
    .map(|d| Path::new(d).join(name))
    .find(|p| p.exists())
}
