//! Keeping the guest's view of its address space (`vmas.rs`) in step with its memory calls, and
//! answering its /proc/self/maps from it.

use crate::kernel::{lock, Kernel};
use crate::loader::elf::Image;
use crate::vmas::Vma;

/// (st_dev, st_ino) of a path.
fn file_id(path: &std::path::Path) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).map_or((0, 0), |m| (m.dev(), m.ino()))
}

impl Kernel {
    /// The text of the guest's /proc/self/maps.
    pub(crate) fn maps_text(&self) -> String {
        let mm = lock(&self.space.mm);
        let text = lock(&self.space.vmas).render(&mm);
        text
    }

    /// Starts the view over with a freshly loaded program and its interpreter (start-up, execve).
    pub(crate) fn note_images(&self, main: &Image, interp: Option<&Image>) {
        self.vm_peak.store(0, std::sync::atomic::Ordering::Release);
        let mut v = lock(&self.space.vmas);
        v.clear();
        for img in std::iter::once(main).chain(interp) {
            let path = std::fs::canonicalize(&img.path).unwrap_or_else(|_| img.path.clone());
            let (dev, ino) = file_id(&path);
            for &(start, end, offset, prot) in &img.segments {
                let name = path.to_string_lossy().into_owned();
                v.insert(
                    start,
                    Vma {
                        end,
                        prot,
                        shared: false,
                        offset,
                        dev,
                        ino,
                        name,
                    },
                );
            }
        }
    }

    /// Records a successful mmap of `[addr, addr+len)` (of file `fd` at `off` unless anonymous).
    pub(super) fn note_map(&self, addr: u64, len: u64, prot: i32, shared: bool, fd: Option<i32>, off: u64) {
        let end = addr + len.div_ceil(crate::mm::PAGE) * crate::mm::PAGE;
        let (dev, ino, name) = match fd {
            Some(fd) => {
                let id = crate::sys::fd_file_id(fd).unwrap_or((0, 0));
                let name = crate::procfs::fd_path(fd).unwrap_or_default();
                (id.0, id.1, name)
            }
            None => (0, 0, String::new()),
        };
        let offset = if fd.is_some() { off } else { 0 };
        lock(&self.space.vmas).insert(
            addr,
            Vma {
                end,
                prot,
                shared,
                offset,
                dev,
                ino,
                name,
            },
        );
    }

    /// Forgets `[addr, addr+len)` (munmap).
    pub(super) fn note_unmap(&self, addr: u64, len: u64) {
        let end = addr.saturating_add(len.div_ceil(crate::mm::PAGE) * crate::mm::PAGE);
        lock(&self.space.vmas).remove(addr, end);
    }

    /// mprotect of `[addr, addr+len)`.
    pub(super) fn note_protect(&self, addr: u64, len: u64, prot: i32) {
        let end = addr.saturating_add(len.div_ceil(crate::mm::PAGE) * crate::mm::PAGE);
        let mm = lock(&self.space.mm);
        lock(&self.space.vmas).protect(addr, end, prot, &mm);
    }

    /// mremap that moved `[old, old+old_len)` to `new` with `new_len` bytes.
    pub(super) fn note_remap(&self, old: u64, old_len: u64, new: u64, new_len: u64) {
        let mut v = lock(&self.space.vmas);
        let first = v.at(old).map(|(s, x)| {
            let offset = if x.name.is_empty() {
                0
            } else {
                x.offset + (old - s)
            };
            Vma { offset, ..x.clone() }
        });
        let page = crate::mm::PAGE;
        v.remove(old, old + old_len.div_ceil(page) * page);
        if let Some(x) = first {
            v.insert(
                new,
                Vma {
                    end: new + new_len.div_ceil(page) * page,
                    ..x
                },
            );
        }
    }
}
