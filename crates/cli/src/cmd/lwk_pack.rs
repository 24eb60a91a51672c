//! `multios lwk pack PROG -o OUT` (issue #13): a fat binary that runs PROG in the LWK when started
//! as an ordinary program; the format is multios_lwk::pack. A packed executable is multios itself:
//! `main` asks [`packed_argv`] first, and a packed run is `multios lwk run` with the stored options.

use crate::output::Out;
use multios_lwk::pack::{self, Settings};
use std::ffi::OsString;
use std::path::PathBuf;

#[derive(clap::Args, Debug, Clone)]
pub struct Args {
    /// The program to pack (searched in PATH when it has no '/')
    #[arg(value_name = "PROG")]
    program: String,
    /// The executable to write
    #[arg(short, long, value_name = "OUT")]
    output: PathBuf,
    /// Function overrides to embed (the file's text goes into OUT)
    #[arg(long, value_name = "FILE")]
    overrides: Option<PathBuf>,
    /// Delegation policy of the packed runs (as `lwk run --policy`)
    #[arg(long)]
    policy: Option<String>,
    /// LWK CPUs of the packed runs (as `lwk run --cpus`)
    #[arg(long, value_name = "LIST")]
    cpus: Option<String>,
    /// Guest memory of the packed runs in MiB (as `lwk run --mem-mib`: even, 2 to 65532; checked
    /// now, not on every run of the packed file)
    #[arg(long, value_parser = clap::value_parser!(u64).range(2..=65532))]
    mem_mib: Option<u64>,
}

pub fn run(a: Args, _out: &Out) -> crate::cmd::Exit {
    let program = multios_lwk::loader::resolve(&a.program)?;
    let overrides = match &a.overrides {
        Some(f) => {
            // Checked now: a packed file must not fail on its first run.
            multios_lwk::overrides::Overrides::load(f)?;
            Some(
                std::fs::read_to_string(f)
                    .map_err(|e| anyhow::anyhow!("--overrides {}: {e}", f.display()))?,
            )
        }
        None => None,
    };
    let mut flags = Vec::new();
    if let Some(p) = &a.policy {
        multios_model::Policy::parse(p).map_err(|e| anyhow::anyhow!("--policy {p}: {e}"))?;
        flags.extend(["--policy".to_string(), p.clone()]);
    }
    if let Some(c) = &a.cpus {
        flags.extend(["--cpus".to_string(), c.clone()]);
    }
    if let Some(m) = a.mem_mib {
        if m % 2 != 0 {
            anyhow::bail!("--mem-mib {m}: give an even number of MiB (the guest's memory is 2 MiB pages)");
        }
        flags.extend(["--mem-mib".to_string(), m.to_string()]);
    }
    if let Some(c) = &a.cpus {
        // Parsed now as a packed run would parse it (a bad list failed on every run).
        multios_lwk::Partition::choose(&multios_lwk::available_cpus(), Some(c), None)
            .map_err(|e| anyhow::anyhow!("{e}"))?;
    }
    let name = program
        .file_name()
        .map_or_else(|| a.program.clone(), |n| n.to_string_lossy().into_owned());
    let settings = Settings {
        name,
        flags,
        overrides,
    };
    let runner =
        std::env::current_exe().map_err(|e| anyhow::anyhow!("finding the multios executable: {e}"))?;
    pack::write(&runner, &program, &settings, &a.output)?;
    eprintln!(
        "multios lwk pack: {} runs {} in the LWK{}; it needs /dev/kvm, and a dynamically linked program's libraries on \
         the machine it runs on",
        a.output.display(),
        program.display(),
        if settings.flags.is_empty() {
            String::new()
        } else {
            format!(" with {}", settings.flags.join(" "))
        }
    );
    Ok(std::process::ExitCode::SUCCESS)
}

/// When this executable is a packed one: the `multios lwk run …` command line it stands for, with
/// the process's own arguments after the program. None for plain multios.
pub fn packed_argv() -> Result<Option<Vec<OsString>>, anyhow::Error> {
    let exe = std::path::Path::new("/proc/self/exe");
    let Some((bytes, s)) = pack::read(exe)? else {
        return Ok(None);
    };
    let prog = multios_host::embed::materialize(&format!("lwkpack-{}", s.name), "", &bytes, 0o755)?;
    let mut argv: Vec<OsString> = ["multios", "lwk", "run"].map(OsString::from).to_vec();
    argv.extend(s.flags.iter().map(OsString::from));
    // The program sees its own name when the packed file is started by its own name (`bb.lwk echo
    // hi` runs busybox's echo, as `busybox echo hi` does), and the name it was started by when
    // that is another one — a link: a multi-call program dispatches on it (a symlink `echo` to
    // the packed busybox ran "hi: applet not found" while the program always saw its own name).
    let invoked = std::env::args_os().next().unwrap_or_default();
    let own = std::env::current_exe()
        .ok()
        .and_then(|p| p.file_name().map(OsString::from));
    let by_link = std::path::Path::new(&invoked).file_name().map(OsString::from) != own;
    let argv0 = if by_link && !invoked.is_empty() {
        invoked
    } else {
        OsString::from(&s.name)
    };
    argv.extend([OsString::from("--argv0"), argv0]);
    if let Some(text) = &s.overrides {
        let f = multios_host::embed::materialize("lwkpack-overrides", ".yaml", text.as_bytes(), 0o644)?;
        argv.extend([OsString::from("--overrides"), f.into_os_string()]);
    }
    argv.push(OsString::from("--"));
    argv.push(prog.into_os_string());
    argv.extend(std::env::args_os().skip(1));
    Ok(Some(argv))
}
