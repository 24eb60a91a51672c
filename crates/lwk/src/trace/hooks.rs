//! Where the kernel feeds its tracer: delegated calls (`syscall/mod.rs`), faults turned into
//! signals (`signal/deliver.rs`), program images replaced by execve (`syscall/maps.rs`), fork, and
//! the end of the run.

use super::caller::{caller_of, frames_of};
use super::format::{Event, Kind};
use super::writer::Tracer;
use crate::kernel::Kernel;
use multios_lwk_abi::offset;

impl Kernel {
    /// Traces this run into `t` (before the kernel is shared).
    pub fn set_trace(&mut self, t: Tracer) {
        self.trace = Some(t);
    }

    /// Records call `nr` of vCPU `cpu` that took `ns` in the VMM and returned `ret`: delegated
    /// (`local` false) or served by the LWK itself.
    pub(crate) fn trace_call(&self, cpu: usize, nr: u64, ns: u64, ret: i64, local: bool) {
        let Some(t) = &self.trace else { return };
        let slot = crate::stub::slot_addr(cpu as u64);
        let rip = self.mem.read_u64(slot + offset::RIP as u64);
        let rsp = self.mem.read_u64(slot + offset::RSP as u64);
        let name = multios_syscalls::by_number(nr as u32).unwrap_or("?");
        let frames = frames_of(&self.mem, rsp);
        t.record(&Event {
            t_ns: t.now_ns().saturating_sub(ns),
            cpu: cpu as u32,
            kind: if local { Kind::Local } else { Kind::Call },
            name: name.to_string(),
            nr,
            dur_ns: ns,
            ret,
            rip,
            caller: caller_of(&self.mem, rsp),
            frames,
        });
    }

    /// Records a CPU exception (`vector`) at `rip` that became signal `sig` for the guest's
    /// handler; `addr` is the fault address (0 when none), `rsp` the guest's stack pointer.
    pub(crate) fn trace_fault(&self, cpu: usize, f: TracedFault) {
        let Some(t) = &self.trace else { return };
        t.record(&Event {
            t_ns: t.now_ns().saturating_sub(f.ns),
            cpu: cpu as u32,
            kind: Kind::Fault,
            name: signal_name(f.sig),
            nr: f.vector,
            dur_ns: f.ns,
            ret: f.addr as i64,
            rip: f.rip,
            caller: caller_of(&self.mem, f.rsp),
            frames: frames_of(&self.mem, f.rsp),
        });
    }

    /// Writes the current memory map into the trace (before execve replaces the image).
    pub(crate) fn trace_maps(&self) {
        if let Some(t) = &self.trace {
            let text = self.maps_text();
            if !text.is_empty() {
                t.maps(&text);
            }
        }
    }

    /// Ends the trace with the final memory map.
    pub fn finish_trace(&self) {
        if let Some(t) = &self.trace {
            t.finish(&self.maps_text());
        }
    }

    /// Flushes the trace and holds it across fork(2) (see `Tracer::hold_flushed`).
    pub(crate) fn hold_trace(&self) -> Option<impl Drop + '_> {
        self.trace.as_ref().map(Tracer::hold_flushed)
    }

    /// In a forked child: the trace goes on in `FILE.PID`.
    pub(crate) fn trace_child(&self) {
        if let Some(t) = &self.trace {
            let exe = crate::kernel::lock(&self.program.exe).clone();
            t.become_child(&String::from_utf8_lossy(&exe));
        }
    }
}

/// A fault as the tracer records it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TracedFault {
    pub sig: u64,
    pub vector: u64,
    pub rip: u64,
    pub rsp: u64,
    pub addr: u64,
    pub ns: u64,
}

fn signal_name(sig: u64) -> String {
    match sig as i32 {
        libc::SIGSEGV => "SIGSEGV".into(),
        libc::SIGBUS => "SIGBUS".into(),
        libc::SIGFPE => "SIGFPE".into(),
        libc::SIGILL => "SIGILL".into(),
        libc::SIGTRAP => "SIGTRAP".into(),
        s => format!("signal {s}"),
    }
}
