//! The `images` term (issue #15): a process's start-up priced by the image it exec'd, instead of an
//! empty program's (`startup`'s `true`).
//!
//! The LWK's loader copies every loaded segment of the program and of its interpreter into guest
//! memory and reads every executable byte to find the `syscall` sites it rewrites (and reads the
//! text of every library ld.so maps the same way), so a process that execs `cc1` (33 MB loaded,
//! 21 MB executable) starts ≈ 50 ms slower than one that execs `true`. The price
//!
//! ```text
//! T_image = a + b·L + c·X + d·X_lib
//! ```
//!
//! (a per process, b per loaded byte and c per executable byte of the program and its
//! interpreter, d per byte of executable file mappings — its libraries' text) is measured by a
//! microbenchmark that starts generated images of several sizes natively and in the target
//! (`multios_experiment::validate::real::images`); L, X and X_lib come from the profile
//! (`processes[].images`, `processes[].code_mappings`, schema 5).
//!
//! A process that a process of the run forks (a pipeline's stages, a build's compilers) does not
//! start the way the microbenchmark's images do, from a fresh `multios lwk run`: the LWK forks its
//! VMM, makes a new VM for the child, starts its threads and tears it all down at its exit, then
//! the child's exec loads the image into that VM. So such a process pays, on top of its image's
//! price, e = the extra of the fork path over a fresh start of the same image — measured by a
//! generated launcher that forks and execs the `dynamic` image N times inside the target, per
//! child, less the `dynamic` image's own fresh-start extra:
//!
//! ```text
//! T_spawned = T_image + e
//! ```

use multios_profile::ProcessStats;

/// The start-up price of an image: seconds more than natively.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub struct ImagePrice {
    /// a: per process that exec'd.
    pub fixed_s: f64,
    /// b: per loaded byte (Σ PT_LOAD file size of the program and its interpreter).
    pub per_loaded_byte_s: f64,
    /// c: per executable byte of the program and its interpreter.
    pub per_exec_byte_s: f64,
    /// d: per byte of executable file mappings (the libraries' text).
    pub per_library_byte_s: f64,
    /// e: per process forked inside the target (not the run's root), beyond a fresh start of its
    /// image (module docs).
    pub spawn_s: f64,
}

/// What one process loads at its start.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub struct ImageBytes {
    /// L: loaded bytes of every image it exec'd and their interpreters.
    pub loaded: f64,
    /// X: their executable bytes.
    pub exec: f64,
    /// X_lib: its executable file mappings' bytes.
    pub libraries: f64,
}

impl ImageBytes {
    /// The bytes of the images `q` exec'd (and their interpreters) and of its executable file
    /// mappings; `None` when it exec'd nothing the profile recorded, or an image's sizes are
    /// unknown (then the empty program's start-up stands for it).
    pub fn of_process(q: &ProcessStats) -> Option<ImageBytes> {
        if q.images.is_empty() {
            return None;
        }
        let mut b = ImageBytes {
            libraries: q.code_mappings.map_or(0.0, |c| c.bytes as f64),
            ..ImageBytes::default()
        };
        for i in &q.images {
            let t = i.total()?;
            b.loaded += t.loaded_bytes as f64;
            b.exec += t.exec_bytes as f64;
        }
        Some(b)
    }
}

/// The `images` term's inputs: the price, and the bytes of the process it is applied to (the
/// run's root for one projection; with `procs`, each process's own).
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub struct Images {
    pub price: ImagePrice,
    pub bytes: Option<ImageBytes>,
    /// The process was forked inside the target (it pays `spawn_s` too).
    pub spawned: bool,
}

impl Images {
    /// T_image = a + b·L + c·X + d·X_lib, at least 0, plus [`Images::spawn_extra`]; `None`
    /// without bytes or for a non-finite result.
    pub fn seconds(&self) -> Option<f64> {
        let b = self.bytes?;
        let p = &self.price;
        let s = p.fixed_s
            + p.per_loaded_byte_s * b.loaded
            + p.per_exec_byte_s * b.exec
            + p.per_library_byte_s * b.libraries;
        s.is_finite().then(|| s.max(0.0) + self.spawn_extra())
    }

    /// e for a process forked inside the target (at least 0), 0 for the run's root.
    pub fn spawn_extra(&self) -> f64 {
        let e = self.price.spawn_s;
        if self.spawned && e.is_finite() {
            e.max(0.0)
        } else {
            0.0
        }
    }

    /// The same price applied to `bytes`.
    pub fn with_bytes(&self, bytes: Option<ImageBytes>) -> Images {
        Images { bytes, ..*self }
    }

    /// The same price for a process forked inside the target (`true`) or the run's root.
    pub fn with_spawned(&self, spawned: bool) -> Images {
        Images { spawned, ..*self }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use multios_profile::{CodeMappings, ExecImage, ImageFile, ImageSizes};

    fn exec(path: &str, loaded: u64, exec: u64, interp: Option<(u64, u64)>) -> ExecImage {
        let file = |path: &str, l: u64, x: u64| ImageFile {
            path: path.into(),
            sizes: Some(ImageSizes {
                loaded_bytes: l,
                memory_bytes: l,
                exec_bytes: x,
            }),
            unknown: None,
        };
        ExecImage {
            at_s: 0.0,
            image: file(path, loaded, exec),
            interp: interp.map(|(l, x)| file("/lib64/ld-linux-x86-64.so.2", l, x)),
        }
    }

    #[test]
    fn issue_15_images_price_is_a_plus_b_loaded_plus_c_exec_plus_d_libraries() {
        // cc1-like: 33 MB loaded, 20 MB executable, ld.so 0.2 / 0.15 MB, 2 MB of libraries' text;
        // a = 5 ms, b = 1 ms/MB, c = 0.9 ms/MB, d = 0.5 ms/MB.
        let mb = 1e6;
        let q = ProcessStats {
            images: vec![exec(
                "/usr/lib/gcc/x86_64-linux-gnu/12/cc1",
                33_000_000,
                20_000_000,
                Some((200_000, 150_000)),
            )],
            code_mappings: Some(CodeMappings {
                calls: 6,
                bytes: 2_000_000,
            }),
            ..ProcessStats::default()
        };
        let bytes = ImageBytes::of_process(&q).expect("known sizes");
        assert_eq!(
            bytes,
            ImageBytes {
                loaded: 33_200_000.0,
                exec: 20_150_000.0,
                libraries: 2_000_000.0
            }
        );
        let price = ImagePrice {
            fixed_s: 5e-3,
            per_loaded_byte_s: 1e-3 / mb,
            per_exec_byte_s: 0.9e-3 / mb,
            per_library_byte_s: 0.5e-3 / mb,
            spawn_s: 40e-3,
        };
        let t = Images {
            price,
            bytes: Some(bytes),
            spawned: false,
        }
        .seconds()
        .expect("priced");
        let want = 5e-3 + 33.2e-3 + 0.9e-3 * 20.15 + 0.5e-3 * 2.0;
        assert!((t - want).abs() < 1e-12, "{t} vs {want}");
        // Forked inside the target: e on top.
        let forked = Images {
            price,
            bytes: Some(bytes),
            spawned: true,
        };
        assert!((forked.seconds().expect("priced") - want - 40e-3).abs() < 1e-12);
        assert_eq!(forked.with_spawned(false).spawn_extra(), 0.0);
        // Two execs in one process (a shell that execs in place): both images load, a once.
        let two = ProcessStats {
            images: vec![
                exec("/bin/sh", 100_000, 60_000, None),
                exec("/bin/busybox", 1_900_000, 1_500_000, None),
            ],
            ..ProcessStats::default()
        };
        let b2 = ImageBytes::of_process(&two).expect("known");
        assert_eq!(
            (b2.loaded, b2.exec, b2.libraries),
            (2_000_000.0, 1_560_000.0, 0.0)
        );
        // No exec recorded, or one image's sizes unknown: no price (the empty program's stands).
        assert_eq!(ImageBytes::of_process(&ProcessStats::default()), None);
        let mut gone = two.clone();
        gone.images[1].image.sizes = None;
        assert_eq!(ImageBytes::of_process(&gone), None);
        assert_eq!(
            Images {
                price,
                bytes: None,
                spawned: false
            }
            .seconds(),
            None
        );
        // A price below native (noise in the fit) adds nothing.
        let below = ImagePrice {
            fixed_s: -1.0,
            ..price
        };
        assert_eq!(
            Images {
                price: below,
                bytes: Some(bytes),
                spawned: false,
            }
            .seconds(),
            Some(0.0)
        );
    }
}
