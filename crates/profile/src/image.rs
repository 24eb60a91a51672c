//! The images a process exec'd and the code it mapped (schema 5; issue #15): what an exec'd
//! process's start-up costs the LWK grows with — its loader copies every loaded segment of the
//! program and of its interpreter into guest memory and reads every executable byte to find the
//! `syscall` sites it rewrites, and every executable file mapping ld.so makes is read the same way.

use serde::{Deserialize, Serialize};

/// One exec of a process: the file the kernel ran and, for a dynamic program, its interpreter.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExecImage {
    /// When it exec'd, seconds from the run's start.
    pub at_s: f64,
    /// The file the kernel ran (for a `#!` script, its interpreter), as the exec named it.
    pub image: ImageFile,
    /// Its PT_INTERP (ld.so), when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interp: Option<ImageFile>,
}

/// An ELF file and the sizes of its PT_LOAD segments, read when the profile was written.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImageFile {
    pub path: String,
    /// The sizes; absent when the file could not be read back as the one exec'd (gone, replaced —
    /// another inode —, named relative to a directory the profiler does not know, not ELF), with
    /// the reason in `unknown`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sizes: Option<ImageSizes>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unknown: Option<String>,
}

/// Σ over an ELF file's PT_LOAD segments.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImageSizes {
    /// Σ p_filesz: the bytes a loader copies.
    pub loaded_bytes: u64,
    /// Σ p_memsz: the memory the segments take (bss included).
    pub memory_bytes: u64,
    /// Σ p_filesz of the executable (PF_X) segments: the bytes a syscall-site rewriter reads.
    pub exec_bytes: u64,
}

/// The executable file mappings a process made (mmap of a file with PROT_EXEC: the text of the
/// libraries ld.so maps, and of dlopen'ed ones).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CodeMappings {
    pub calls: u64,
    /// Σ their lengths.
    pub bytes: u64,
}

impl ExecImage {
    /// The image's and its interpreter's sizes added up; `None` when either is unknown.
    pub fn total(&self) -> Option<ImageSizes> {
        let main = self.image.sizes?;
        let interp = match &self.interp {
            Some(i) => i.sizes?,
            None => ImageSizes::default(),
        };
        Some(ImageSizes {
            loaded_bytes: main.loaded_bytes + interp.loaded_bytes,
            memory_bytes: main.memory_bytes + interp.memory_bytes,
            exec_bytes: main.exec_bytes + interp.exec_bytes,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issue_15_an_image_totals_with_its_interpreter_and_is_unknown_when_either_is() {
        let sz = |l, x| ImageSizes {
            loaded_bytes: l,
            memory_bytes: l + 1,
            exec_bytes: x,
        };
        let mut e = ExecImage {
            at_s: 0.5,
            image: ImageFile {
                path: "/usr/bin/cc1".into(),
                sizes: Some(sz(100, 60)),
                unknown: None,
            },
            interp: Some(ImageFile {
                path: "/lib64/ld-linux-x86-64.so.2".into(),
                sizes: Some(sz(20, 10)),
                unknown: None,
            }),
        };
        assert_eq!(
            e.total(),
            Some(ImageSizes {
                loaded_bytes: 120,
                memory_bytes: 122,
                exec_bytes: 70
            })
        );
        if let Some(i) = e.interp.as_mut() {
            i.sizes = None;
        }
        assert_eq!(e.total(), None);
        e.interp = None;
        assert_eq!(e.total(), Some(sz(100, 60)));
    }
}
