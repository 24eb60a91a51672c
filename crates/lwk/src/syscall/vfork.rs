//! A vfork child's side (`crate::vfork`): the range of the parent's stack it hands back, kept
//! until its exec's point of no return or its exit, then sent.

use crate::kernel::{lock, Kernel};
use crate::vfork::{Release, SPAN};

impl Kernel {
    /// The range of the parent's memory a vfork child hands back: from the page of `rsp` up to
    /// [`SPAN`] bytes, inside the guest's mapping there (empty when `rsp` is not in one).
    pub(crate) fn vfork_span(&self, rsp: u64) -> (u64, u64) {
        let lo = rsp & !(crate::mm::PAGE - 1);
        let mm = lock(&self.space.mm);
        if !mm.in_window(lo, crate::mm::PAGE) {
            return (lo, lo);
        }
        // The main thread's stack ends where the window does.
        let mut hi = lo.saturating_add(SPAN);
        while hi > lo && !mm.in_window(lo, hi - lo) {
            hi -= crate::mm::PAGE;
        }
        // The mapped run that starts at `lo`, no further.
        let mut end = lo;
        for (a, b) in mm.maps.intersections(lo, hi) {
            if a > end {
                break;
            }
            end = end.max(b);
        }
        (lo, end)
    }

    /// In a vfork child: remember what to hand back (dropping a release inherited from a
    /// parent that was itself a vfork child: it is that parent's to send).
    pub(crate) fn set_vfork_release(&self, release: Option<Release>) {
        if let Some(old) = std::mem::replace(&mut *lock(&self.vfork), release) {
            crate::sys::close(old.fd);
        }
    }

    /// The vfork child execs (at the point of no return) or exits: sends the range to the
    /// parent and lets it go on. Nothing when this process is no vfork child, or already did.
    pub(crate) fn release_vfork_parent(&self) {
        let Some(r) = lock(&self.vfork).take() else {
            return;
        };
        let mut buf = vec![0u8; (r.hi - r.lo) as usize];
        self.mem.read(r.lo, &mut buf);
        // The parent reads it whole or sees the stream end: an error changes nothing for it.
        let _ = crate::sys::send_all(r.fd, &buf);
        crate::sys::close(r.fd);
    }
}
