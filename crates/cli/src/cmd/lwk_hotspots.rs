//! `multios lwk hotspots FILE` (issue #13): a forwarded-event trace written by `lwk run --trace`,
//! ranked by total cost with the function behind each call; the ranking is multios_lwk::trace.

use crate::output::{Format, Out, Table};
use multios_lwk::trace::{hotspots, Trace};
use std::path::PathBuf;

#[derive(clap::Args, Debug, Clone)]
pub struct Args {
    /// The trace (`multios lwk run --trace FILE`); a forked child's is FILE.PID
    #[arg(value_name = "FILE")]
    trace: PathBuf,
    /// Rows shown (0: all)
    #[arg(long, default_value_t = 20)]
    top: usize,
    /// Write the overrides file (`lwk run --overrides`) that removes the ranked events an LWK
    /// implementation exists for: of the call itself (clock_gettime) or of the function it was
    /// made under (the `via` column: malloc, pthread_create…)
    #[arg(long, value_name = "FILE")]
    write_overrides: Option<PathBuf>,
}

pub fn run(a: Args, out: &Out) -> crate::cmd::Exit {
    let trace = Trace::load(&a.trace)?;
    if let Some(line) = trace.truncated_line {
        eprintln!(
            "warning: {}:{line}: the last event is cut off (the run was killed while writing it): left out",
            a.trace.display()
        );
    }
    let h = hotspots(&trace, a.top);
    let mut t = Table::new([
        "rank", "event", "count", "total", "mean", "share_%", "caller", "site", "via",
    ]);
    for (i, r) in h.rows.iter().enumerate() {
        let kind = match r.kind {
            multios_lwk::trace::Kind::Call => "",
            multios_lwk::trace::Kind::Fault => "fault ",
            multios_lwk::trace::Kind::Local => "local ",
        };
        t.row([
            (i + 1).to_string(),
            format!("{kind}{}", r.name),
            r.count.to_string(),
            out.secs(r.total_ns as f64 * 1e-9),
            out.secs(r.mean_ns * 1e-9),
            out.num(100.0 * r.share, 1),
            r.caller.clone(),
            r.site.clone(),
            r.via.clone().unwrap_or_default(),
        ]);
    }
    if let Some(path) = &a.write_overrides {
        let names = multios_lwk::trace::overrides_for(&h);
        std::fs::write(path, multios_lwk::overrides::Overrides::file_text(&names))
            .map_err(|e| anyhow::anyhow!("--write-overrides {}: {e}", path.display()))?;
        eprintln!(
            "multios lwk: {} written: {} (of the ranked calls, those with an LWK implementation)",
            path.display(),
            if names.is_empty() {
                "no override applies".to_string()
            } else {
                names.join(", ")
            }
        );
    }
    match out.format {
        Format::Json => out.json(&h)?,
        Format::Csv => out!("{}", t.to_csv()),
        Format::Table => {
            outln!(
                "{}: {} forwarded events, {} in the VMM; callers named for {} of them",
                h.program,
                h.events,
                out.secs(h.total_ns as f64 * 1e-9),
                h.named_callers
            );
            out!("{}", t.render(out));
        }
    }
    Ok(std::process::ExitCode::SUCCESS)
}
