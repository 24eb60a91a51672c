//! `multios lwk images`: what starting an image costs the LWK more than natively, by its size —
//! the `validate --terms images` microbenchmark on its own (multios_experiment's
//! validate::real::images).

use crate::output::{Format, Out, Table};
use multios_experiment::validate::real::{images, micro, Config};
use std::process::ExitCode;

#[derive(clap::Args, Debug, Clone)]
pub struct Args {}

pub fn run(_a: Args, out: &Out) -> crate::cmd::Exit {
    multios_lwk::check_kvm()?;
    let (compute, control) = multios_experiment::setup::cpu_split(None, None)?;
    let cfg = Config {
        exe: std::env::current_exe()?,
        mechanisms: Vec::new(),
        policies: vec!["all".into()],
        fcs: Vec::new(),
        pairs: images::IMAGE_PAIRS,
        lwk: true,
        compute,
        control,
        terms: Vec::new(),
        realtime: true,
        level_guard: false,
        profile_runs: 1,
    };
    let scratch = micro::scratch()?;
    let cal = images::calibrate(&cfg, &scratch.0)?;
    let mib = |b: f64| b / 1048576.0;
    let mut t = Table::new([
        "image",
        "loaded_MiB",
        "exec_MiB",
        "library_MiB",
        "native_ms",
        "lwk_ms",
        "extra_ms",
        "priced_ms",
        "role",
    ]);
    for r in &cal.runs {
        t.row([
            r.name.clone(),
            out.num(mib(r.bytes.loaded), 2),
            out.num(mib(r.bytes.exec), 2),
            out.num(mib(r.bytes.libraries), 2),
            out.num(r.native_s * 1e3, 2),
            out.num(r.lwk_s * 1e3, 2),
            out.num(r.extra_s * 1e3, 2),
            out.num(r.priced_s * 1e3, 2),
            if r.fitted { "fit" } else { "check" }.to_string(),
        ]);
    }
    let p = &cal.price;
    let per_mib = |s: f64| s * 1048576.0 * 1e3;
    match out.format {
        Format::Json => out.json(&cal)?,
        Format::Csv => out!("{}", t.to_csv()),
        Format::Table => {
            out!("{}", t.render(out));
            outln!(
                "price: {:.2} ms a process + {:.3} ms per loaded MiB + {:.3} ms per executable MiB + {:.3} ms per MiB of library text, + {:.2} ms for a process forked inside the LWK ({} pairs per image, medians of paired differences)",
                p.fixed_s * 1e3,
                per_mib(p.per_loaded_byte_s),
                per_mib(p.per_exec_byte_s),
                per_mib(p.per_library_byte_s),
                p.spawn_s * 1e3,
                images::IMAGE_PAIRS
            );
            for n in &cal.notes {
                outln!("note: {n}");
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
