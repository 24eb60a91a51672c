//! The noise benchmarks' guest programs as experiments run them: under mpirun on several ranks
//! ([`GuestDir`]) and natively and in the LWK on each measured CPU ([`LwkGuest`]), for
//! `multios noise … --lwk/--mpi` and `multios bench noise --quanta --lwk`.

use crate::ExperimentError;
use multios_noise::clock::Clock;
use multios_noise::cpus;
use multios_noise::measure::{Kind, Settings};
use multios_noise::session::{self, Case, Outcome};
use std::path::PathBuf;

/// The FWQ program built in a temporary directory (removed on drop).
pub struct GuestDir {
    dir: PathBuf,
    exe: PathBuf,
}

impl GuestDir {
    pub fn build(kind: Kind) -> Result<GuestDir, ExperimentError> {
        let dir = std::env::temp_dir().join(format!("multios-noise-mpi-{}", std::process::id()));
        let exe = multios_noise::guest::build_for(&dir, kind)?;
        Ok(GuestDir { dir, exe })
    }

    /// The benchmark on `n` ranks under mpirun: one outcome per rank (and for FWQ all ranks merged).
    pub fn mpirun(
        &self,
        n: usize,
        case: &Case,
        s: &Settings,
        clock: &Clock,
        cpuset: Option<String>,
    ) -> Result<Vec<Outcome>, ExperimentError> {
        let out_file = self.dir.join("samples.out");
        Ok(session::mpirun_outcomes(
            &self.exe, &out_file, n, case, s, clock, cpuset,
        )?)
    }
}

impl Drop for GuestDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The benchmark's guest program, run natively and in the LWK on each measured CPU in turn.
pub struct LwkGuest {
    kind: Kind,
    dir: PathBuf,
    exe: PathBuf,
    cpus: Vec<usize>,
    online: Vec<usize>,
}

impl LwkGuest {
    /// Builds the guest program of `kind` for the CPUs `cpus` (the proxies go to other `online`
    /// CPUs); needs /dev/kvm.
    pub fn prepare(kind: Kind, cpus: &[usize], online: &[usize]) -> Result<LwkGuest, ExperimentError> {
        multios_lwk::check_kvm().map_err(|e| ExperimentError::Run(format!("--lwk needs KVM: {e}")))?;
        let dir = std::env::temp_dir().join(format!("multios-noise-lwk-{}", std::process::id()));
        let exe = multios_noise::guest::build_for(&dir, kind)?;
        Ok(LwkGuest {
            kind,
            dir,
            exe,
            cpus: cpus.to_vec(),
            online: online.to_vec(),
        })
    }

    /// The same program on Linux (pinned to the CPU) and as an LWK guest (its vCPU on the CPU, the
    /// proxy on another online CPU), for each measured CPU one after the other.
    pub fn run(
        &self,
        case: &Case,
        s: &Settings,
        clock: &Clock,
        cpuset: Option<String>,
    ) -> Result<Vec<Outcome>, ExperimentError> {
        use multios_noise::{cpustat, guest};
        let out_file = self.dir.join("samples.out");
        let args = guest::args_for(s, clock, &out_file);
        let mut native = Vec::new();
        let mut in_lwk = Vec::new();
        for &cpu in &self.cpus {
            native.push(guest::run_native_kind(
                self.kind,
                &self.exe,
                cpu,
                &args,
                clock,
                s.quantum_ns,
            )?);
            let exe = self.exe.display().to_string();
            let argv: Vec<&str> = args.iter().map(String::as_str).collect();
            let mut cfg = multios_lwk::Config::new(&exe, &argv);
            cfg.backend = multios_lwk::Backend::Ring {
                proxy_cpu: cpus::others(&[cpu], &self.online)
                    .ok()
                    .and_then(|o| o.first().copied()),
            };
            cfg.cpus = vec![cpu];
            cfg.quiet = true;
            let before = cpustat::snapshot(cpu);
            let o = multios_lwk::run(&cfg)
                .map_err(|e| ExperimentError::Run(format!("{kind:?} in the LWK: {e}", kind = self.kind)))?;
            let after = cpustat::snapshot(cpu);
            if o.code() != 0 {
                return Err(ExperimentError::Run(format!(
                    "{:?} in the LWK exited with {} ({})",
                    self.kind,
                    o.code(),
                    o.notes.join("; ")
                )));
            }
            let mut g = guest::read_series(self.kind, &out_file, clock, s.quantum_ns, cpu)?;
            g.usage = before.zip(after).and_then(|(b, a)| cpustat::usage_guest(&b, &a));
            let _ = std::fs::remove_file(&out_file);
            in_lwk.push(g);
        }
        let label = |what: &str| Case {
            label: format!("{} · {what}", case.label),
            load: case.load.clone(),
        };
        Ok(vec![
            Outcome {
                case: label("Linux"),
                series: native,
                cpuset_cpus: cpuset.clone(),
            },
            Outcome {
                case: label("LWK"),
                series: in_lwk,
                cpuset_cpus: cpuset,
            },
        ])
    }
}

impl Drop for LwkGuest {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
