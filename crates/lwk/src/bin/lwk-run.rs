//! `lwk-run PROG ARGS…`: the smallest front end of the library, kept for the lwk crate's own
//! integration tests (`crates/lwk/tests/*`); the user-facing command is `multios lwk run`.
//!
//! Why a second binary instead of `multios lwk run`:
//!
//! * Cargo gives a crate's integration tests only that crate's own binaries
//!   (`env!("CARGO_BIN_EXE_lwk-run")`); running `multios` would make the lwk crate's tests depend
//!   on the CLI crate, which itself depends on lwk.
//! * The tests need a process per run, not a call of [`multios_lwk::run`] inside the test binary:
//!   they send signals to the VMM process, check that a guest killed by a core-dumping signal
//!   kills the VMM the same way (`Outcome::die_if_signaled`) and that the exit status is the
//!   guest's, and two runs in one process would collide (guest-physical == host-virtual, so every
//!   run maps its window at the same addresses; the test harness runs tests in parallel).
//!
//! It exits with the guest's status; LWK errors (guest faults, missing /dev/kvm…) go to stderr
//! with exit status 125, except a program that cannot be found (127) or executed (126), as a shell
//! says. Settings come from the environment, so a test needs no argument parser:
//! `LWK_BACKEND=exit` selects the doorbell-only backend; `LWK_NO_REWRITE=1` turns off the
//! rewriting of syscall sites (on by default); `LWK_CPUS=1,2` sets the LWK partition (a CPU list,
//! e.g. 1-2); `LWK_TRACE=FILE` writes a forwarded-event trace; `LWK_MEM_MIB=N` sizes the window; `LWK_RESERVE=1` reserves the CPUs and memory; `LWK_OVERRIDES=FILE` applies
//! function overrides; `LWK_LINUX_EXEC=LIST` names the programs an execve runs on Linux (`none`); `LWK_VERBOSE=1` prints a summary. `lwk-run --fc N` times N calls per mechanism
//! (the same measurement as `multios lwk fc`, without the CLI).

fn main() {
    // A standard stream closed when lwk-run started stays closed for the guest.
    multios_host::stdio::hide_placeholders();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(program) = args.first() else {
        eprintln!("usage: lwk-run PROG [ARGS…]");
        std::process::exit(2);
    };
    if program == "--fc" {
        let n = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(20_000);
        for m in multios_lwk::fc::Mechanism::ALL {
            match multios_lwk::fc::measure(m, n, true) {
                Ok(s) => println!(
                    "{:34} median {:8.0} ns  min {:8.0}  p99 {:8.0}",
                    m.name(),
                    s.median_ns,
                    s.min_ns,
                    s.p99_ns
                ),
                Err(e) => eprintln!("{}: {e}", m.name()),
            }
        }
        return;
    }
    let rest: Vec<&str> = args[1..].iter().map(String::as_str).collect();
    let mut cfg = multios_lwk::Config::new(program, &rest);
    cfg.rewrite_syscalls = std::env::var_os("LWK_NO_REWRITE").is_none();
    cfg.trace = std::env::var_os("LWK_TRACE").map(std::path::PathBuf::from);
    if let Some(f) = std::env::var_os("LWK_OVERRIDES") {
        match multios_lwk::overrides::Overrides::load(std::path::Path::new(&f)) {
            Ok(o) => cfg.overrides = Some(o),
            Err(e) => {
                eprintln!("lwk-run: {e}");
                std::process::exit(125);
            }
        }
    }
    if let Ok(list) = std::env::var("LWK_CPUS") {
        match multios_host::CpuSet::parse(&list) {
            Ok(cpus) => cfg.cpus = cpus.to_vec(),
            Err(e) => {
                eprintln!("lwk-run: LWK_CPUS={e}");
                std::process::exit(2);
            }
        }
    }
    if let Ok(mib) = std::env::var("LWK_MEM_MIB") {
        match mib.parse::<u64>() {
            Ok(m) if m > 0 => cfg.mem_size = m << 20,
            _ => {
                eprintln!("lwk-run: LWK_MEM_MIB={mib}: a size in MiB");
                std::process::exit(2);
            }
        }
    }
    cfg.reserve = std::env::var_os("LWK_RESERVE").is_some();
    if let Ok(list) = std::env::var("LWK_LINUX_EXEC") {
        // Programs an execve runs on Linux (`multios lwk run --linux-exec`); `none`: none.
        cfg.linux_exec = list
            .split(',')
            .filter(|s| !s.is_empty() && *s != "none")
            .map(str::to_string)
            .collect();
    }
    if std::env::var("LWK_BACKEND").is_ok_and(|b| b == "exit") {
        cfg.backend = multios_lwk::Backend::Exit;
    }
    match multios_lwk::run(&cfg) {
        Ok(o) => {
            if std::env::var_os("LWK_VERBOSE").is_some() {
                eprintln!(
                    "lwk: {:?}, wall {:?}, start-up {:?}, {} calls, {} doorbell exits, {} sites rewritten",
                    o.status,
                    o.wall,
                    o.startup,
                    o.stats.calls(),
                    o.doorbells,
                    o.rewritten
                );
                eprintln!("lwk: {}", o.trap_note());
                eprintln!(
                    "lwk: {} host page faults, {} shadow page faults",
                    o.costs.host_faults,
                    o.costs.kvm.get("pf_fixed").copied().unwrap_or(0)
                );
            }
            o.die_if_signaled();
            std::process::exit(o.code());
        }
        // A program that cannot be found or run exits as a shell's would: 127 or 126.
        Err(multios_lwk::LwkError::Load(e)) => {
            eprintln!("lwk-run: {e}");
            std::process::exit(e.exit_code());
        }
        Err(e) => {
            eprintln!("lwk-run: {e}");
            std::process::exit(125);
        }
    }
}
