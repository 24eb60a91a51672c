//! The OS machine: a machine on the control CPU (the one Linux keeps for itself) that performs
//! system calls for the other machines as machine calls, FlexSC-style: the caller's core never
//! traps, the request waits in the caller's queue, and the OS machine takes everything queued in
//! one visit (up to its batch size) and runs the calls back to back.
//!
//! Calls that may block (`accept`, `recv` on an empty socket, `read` from a pipe) block the
//! worker that runs them; give the OS machine several workers on its CPU
//! ([`OsMachine::start`]'s `workers`) so one blocked call does not stall the rest. While such a
//! call runs, its worker does not count as polling (`worker::blocking`), so new requests signal
//! a sleeping sibling instead of waiting behind it.

use crate::builder::MachineBuilder;
use crate::interface::{ConnectOptions, ServeOptions, Service};
use crate::machine::{Machine, MachineError};
use crate::sys;
use multios_host::CpuSet;
use std::io;
use std::path::PathBuf;
use std::time::Duration;

crate::interface! {
    /// The system calls the OS machine serves. Buffers travel by value (owned `Vec`s), the
    /// machine-call equivalent of the kernel copying from and to user memory.
    pub trait OsCalls as OsClient {
        fn read(&self, fd: i32, len: usize) -> io::Result<Vec<u8>>;
        fn write(&self, fd: i32, data: Vec<u8>) -> io::Result<usize>;
        fn pread(&self, fd: i32, len: usize, offset: i64) -> io::Result<Vec<u8>>;
        fn pwrite(&self, fd: i32, data: Vec<u8>, offset: i64) -> io::Result<usize>;
        fn openat(&self, dirfd: i32, path: PathBuf, flags: i32, mode: u32) -> io::Result<i32>;
        fn close(&self, fd: i32) -> io::Result<()>;
        fn fsync(&self, fd: i32) -> io::Result<()>;
        fn accept(&self, fd: i32) -> io::Result<i32>;
        fn recv(&self, fd: i32, len: usize, flags: i32) -> io::Result<Vec<u8>>;
        fn send(&self, fd: i32, data: Vec<u8>, flags: i32) -> io::Result<usize>;
    }
}

/// The served object: performs each call with the real system call.
pub struct Os;

impl OsCalls for Os {
    async fn read(&self, fd: i32, len: usize) -> io::Result<Vec<u8>> {
        crate::worker::blocking(|| sys::read(fd, len))
    }
    async fn write(&self, fd: i32, data: Vec<u8>) -> io::Result<usize> {
        sys::write(fd, &data)
    }
    async fn pread(&self, fd: i32, len: usize, offset: i64) -> io::Result<Vec<u8>> {
        sys::pread(fd, len, offset)
    }
    async fn pwrite(&self, fd: i32, data: Vec<u8>, offset: i64) -> io::Result<usize> {
        sys::pwrite(fd, &data, offset)
    }
    async fn openat(&self, dirfd: i32, path: PathBuf, flags: i32, mode: u32) -> io::Result<i32> {
        sys::openat(dirfd, &path, flags, mode)
    }
    async fn close(&self, fd: i32) -> io::Result<()> {
        sys::close(fd)
    }
    async fn fsync(&self, fd: i32) -> io::Result<()> {
        sys::fsync(fd)
    }
    async fn accept(&self, fd: i32) -> io::Result<i32> {
        crate::worker::blocking(|| sys::accept(fd))
    }
    async fn recv(&self, fd: i32, len: usize, flags: i32) -> io::Result<Vec<u8>> {
        crate::worker::blocking(|| sys::recv(fd, len, flags))
    }
    async fn send(&self, fd: i32, data: Vec<u8>, flags: i32) -> io::Result<usize> {
        sys::send(fd, &data, flags)
    }
}

/// `AT_FDCWD` for [`OsCalls::openat`].
pub const AT_FDCWD: i32 = libc::AT_FDCWD;

/// A running OS machine and the service clients connect to.
pub struct OsMachine {
    pub machine: Machine,
    pub service: Service<Os>,
}

impl OsMachine {
    /// Starts the OS machine on `control_cpu` with `workers` workers there, polling `spin`
    /// before sleeping, taking up to `batch` queued calls per visit of a client queue.
    pub fn start(
        control_cpu: usize,
        workers: usize,
        spin: Duration,
        batch: usize,
    ) -> Result<OsMachine, MachineError> {
        let machine = MachineBuilder::new("os")
            .cpus(CpuSet([control_cpu].into()))
            .workers_per_cpu(workers)
            .idle_spin(spin)
            .batch(batch)
            .build()?;
        let service = machine.serve(Os, ServeOptions::default());
        Ok(OsMachine { machine, service })
    }

    /// A client with its own request queue.
    pub fn client(&self, options: ConnectOptions) -> OsClient<Os> {
        OsClient::new(self.service.connect(options))
    }
}
