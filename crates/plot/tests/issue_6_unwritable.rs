//! Issue #6 (and every plot: `multios plot`, `noise --out`): a plot that cannot be written is an
//! error naming the file. The SVG was written by plotters' backend on drop, through a BufWriter
//! it never flushed, so a small SVG on a full disk was lost and `write` returned Ok.

use multios_plot::{write, LineChart, Series};

#[path = "../../../testsupport/scratch.rs"]
mod scratch;

#[test]
fn issue_6_a_plot_on_a_full_disk_is_an_error_naming_the_file() {
    let dir = scratch::Scratch::new("multios-plot-full", "fig");
    let fig = LineChart::new("full disk", "x", "y")
        .series(Series::line("s", vec![(1.0, 1.0), (2.0, 3.0)]))
        .into();
    for ext in ["svg", "png"] {
        let stem = dir.join(ext);
        std::os::unix::fs::symlink("/dev/full", dir.join(format!("{ext}.{ext}"))).expect("symlink");
        let e = write(&fig, &stem).expect_err("/dev/full takes nothing");
        let msg = e.to_string();
        assert!(
            msg.contains(&format!("{ext}.{ext}")) && msg.contains("No space left"),
            "{ext}: {msg}"
        );
    }
}
