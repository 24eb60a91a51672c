//! Issue #11: the OS machine performs real file and socket I/O for another machine.

use multios_aam::os::{OsMachine, AT_FDCWD};
use multios_aam::{ConnectOptions, MachineBuilder};
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::time::Duration;

fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("multios-aam-{}-{name}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    dir
}

#[test]
fn issue_11_os_machine_does_real_file_io_for_an_application_machine() {
    let cpus = multios_host::CpuSet::allowed().to_vec();
    let os = OsMachine::start(cpus[0], 2, Duration::from_micros(20), 16).unwrap_or_else(|e| panic!("{e}"));
    let app = MachineBuilder::new("app")
        .cpus(multios_host::CpuSet([*cpus.last().unwrap_or(&0)].into()))
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let dir = scratch("file");
    let path = dir.join("data.bin");
    let os_client = os.client(ConnectOptions { ordered: true });
    let p = path.clone();
    let result = multios_aam::block_on(app.spawn("file-io", async move {
        let flags = libc::O_CREAT | libc::O_RDWR | libc::O_TRUNC | libc::O_CLOEXEC;
        let fd = os_client.openat(AT_FDCWD, p, flags, 0o600).await??;
        // Issued together (asynchronous variant); the ordered queue runs them in this order.
        let w1 = os_client.write(fd, b"hello ".to_vec());
        let w2 = os_client.write(fd, b"machines".to_vec());
        let w3 = os_client.pwrite(fd, b"H".to_vec(), 0);
        let (a, b, c) = (w1.await??, w2.await??, w3.await??);
        os_client.fsync(fd).await??;
        let whole = os_client.pread(fd, 64, 0).await??;
        let tail = os_client.pread(fd, 8, 6).await??;
        os_client.close(fd).await??;
        let bad = os_client.close(fd).await?;
        Ok::<_, Box<dyn std::error::Error + Send + Sync>>((a + b + c, whole, tail, bad.is_err()))
    }));
    let (n, whole, tail, bad_close) = result
        .unwrap_or_else(|e| panic!("{e}"))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(n, 15);
    assert_eq!(whole, b"Hello machines");
    assert_eq!(tail, b"machines");
    assert!(bad_close, "closing a closed descriptor must fail with EBADF");
    let on_disk = std::fs::read(&path).unwrap_or_default();
    assert_eq!(on_disk, b"Hello machines");
    // A worker adds a batch's requests to its counters after the batch, and the batch's replies
    // go out while it runs: the last reply can reach us before its request is counted.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while os.machine.stats().requests < 9 && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
    }
    assert!(os.machine.stats().requests >= 9, "{:?}", os.machine.stats());
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn issue_11_os_machine_accepts_receives_and_sends_on_loopback() {
    let cpus = multios_host::CpuSet::allowed().to_vec();
    let os = OsMachine::start(cpus[0], 2, Duration::from_micros(20), 16).unwrap_or_else(|e| panic!("{e}"));
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("{e}"));
    let addr = listener.local_addr().unwrap_or_else(|e| panic!("{e}"));
    let lfd = listener.as_raw_fd();
    let peer = std::thread::spawn(move || {
        let mut s = std::net::TcpStream::connect(addr).unwrap_or_else(|e| panic!("{e}"));
        let _ = s.write_all(b"ping");
        let mut buf = [0u8; 4];
        let _ = s.read_exact(&mut buf);
        buf
    });
    let c = os.client(ConnectOptions::default());
    let fd = c.accept(lfd).wait().unwrap_or_else(|e| panic!("{e}"));
    let fd = fd.unwrap_or_else(|e| panic!("accept: {e}"));
    let got = c.recv(fd, 4, libc::MSG_WAITALL).wait();
    assert_eq!(got.ok().and_then(|r| r.ok()), Some(b"ping".to_vec()));
    let sent = c.send(fd, b"pong".to_vec(), 0).wait();
    assert_eq!(sent.ok().and_then(|r| r.ok()), Some(4));
    assert_eq!(peer.join().ok(), Some(*b"pong"));
    let _ = c.close(fd).wait();
}
