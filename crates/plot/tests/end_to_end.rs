//! Writes each kind of figure to a temporary directory and checks the three files:
//! PNG signature and pixels, SVG text, exact CSV. Needs a system font
//! (Debian package fonts-dejavu-core); without one these tests fail, by design.

use std::path::{Path, PathBuf};

use multios_plot::{write, Figure, Heatmap, LineChart, Panels, Series, Style};

#[path = "../../../testsupport/scratch.rs"]
mod scratch;

/// A path that does not exist yet, inside a directory removed when the test ends (issue #16).
fn scratch(name: &str) -> PathBuf {
    scratch::until_test_ends("multios-plot-e2e", name).join("out")
}

/// Decodes the PNG and returns (width, height, number of distinct colours).
fn png_summary(path: &Path) -> (u32, u32, usize) {
    let bytes = std::fs::read(path).expect("png readable");
    assert_eq!(
        &bytes[..8],
        b"\x89PNG\r\n\x1a\n",
        "{} has no PNG signature",
        path.display()
    );
    assert!(
        bytes.len() > 5_000,
        "{} is only {} bytes",
        path.display(),
        bytes.len()
    );
    let decoder = png::Decoder::new(std::io::Cursor::new(bytes));
    let mut reader = decoder.read_info().expect("png header");
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).expect("png frame");
    let px = info.color_type.samples();
    let mut colours: Vec<&[u8]> = buf[..info.buffer_size()].chunks(px).collect();
    colours.sort_unstable();
    colours.dedup();
    (info.width, info.height, colours.len())
}

fn check_files(fig: &Figure, stem: &Path, title: &str) -> String {
    let w = write(fig, stem).unwrap_or_else(|e| panic!("write {}: {e}", stem.display()));
    for p in [&w.png, &w.svg, &w.csv] {
        assert!(p.is_file(), "{} missing", p.display());
    }
    let (width, height, colours) = png_summary(&w.png);
    assert!(width >= 400 && height >= 300, "{width}x{height}");
    assert!(colours > 10, "PNG looks blank: {colours} colours");
    let svg = std::fs::read_to_string(&w.svg).expect("svg readable");
    assert!(
        svg.contains("<svg") && svg.trim_end().ends_with("</svg>"),
        "not an SVG document"
    );
    assert!(svg.contains(title), "SVG lacks the title {title:?}");
    std::fs::read_to_string(&w.csv).expect("csv readable")
}

#[test]
fn line_chart_writes_png_svg_and_exact_csv() {
    let dir = scratch("line");
    let fig = Figure::Line(LineChart {
        title: "Naive speedup".into(),
        x_label: "x".into(),
        y_label: "y".into(),
        x_log: false,
        y_log: false,
        series: vec![
            Series::line("p=0.5", vec![(1.0, 1.0), (2.0, 4.0 / 3.0), (4.0, 1.6)]),
            Series {
                label: "measured".into(),
                points: vec![(0.1, 1e-7)],
                style: Style::Points,
            },
        ],
    });
    // The directory does not exist yet: write must create it.
    let csv = check_files(&fig, &dir.join("sub/naive"), "Naive speedup");
    assert_eq!(
        csv,
        "series,x,y\np=0.5,1,1\np=0.5,2,1.3333333333333333\np=0.5,4,1.6\nmeasured,0.1,1e-7\n"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn heatmap_writes_png_svg_and_exact_csv() {
    let dir = scratch("heat");
    let fig = Figure::Heatmap(Heatmap {
        title: "Speedup over gamma and fc".into(),
        x_label: "x".into(),
        y_label: "y".into(),
        z_label: "z".into(),
        x: vec![1.0, 10.0, 100.0],
        y: vec![0.5, 1.5],
        z: vec![vec![1.0, 2.0, 3.0], vec![4.0, 5.0, 0.25]],
        x_log: true,
        y_log: false,
    });
    let csv = check_files(&fig, &dir.join("heat"), "Speedup over gamma and fc");
    assert_eq!(
        csv,
        "x,y,z\n1,0.5,1\n10,0.5,2\n100,0.5,3\n1,1.5,4\n10,1.5,5\n100,1.5,0.25\n"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn panels_write_png_svg_and_exact_csv() {
    let dir = scratch("panels");
    let panel = |t: &str, k: f64| LineChart {
        title: t.into(),
        x_label: "x".into(),
        y_label: "y".into(),
        series: vec![Series::line("a", vec![(1.0, k), (2.0, 2.0 * k)])],
        ..Default::default()
    };
    let fig = Figure::Panels(Panels {
        title: "Policies side by side".into(),
        panels: vec![panel("all", 1.0), panel("none", 0.5), panel("mckernel", 3.0)],
    });
    let csv = check_files(&fig, &dir.join("panels"), "Policies side by side");
    assert_eq!(
        csv,
        "panel,series,x,y\nall,a,1,1\nall,a,2,2\nnone,a,1,0.5\nnone,a,2,1\nmckernel,a,1,3\nmckernel,a,2,6\n"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn log_axes_with_zero_negative_and_non_finite_values_do_not_panic() {
    let dir = scratch("log");
    let bad = vec![
        (0.0, 1.0),
        (-1.0, 2.0),
        (1.0, 0.0),
        (2.0, -5.0),
        (f64::NAN, 1.0),
        (3.0, f64::INFINITY),
        (10.0, 100.0),
        (100.0, 1000.0),
    ];
    let fig = Figure::Line(LineChart {
        title: "log with bad values".into(),
        x_log: true,
        y_log: true,
        series: vec![Series::line("s", bad), Series::line("empty", vec![])],
        ..Default::default()
    });
    // Whatever the outcome, no panic; the points that can be drawn are drawn.
    let out = std::panic::catch_unwind(|| write(&fig, &dir.join("log")));
    match out {
        Ok(Ok(w)) => assert!(w.png.is_file()),
        Ok(Err(e)) => panic!("drawable points exist, yet write failed: {e}"),
        Err(_) => panic!("write panicked on non-positive values on a log axis"),
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn empty_series_beside_a_full_one_is_fine() {
    let dir = scratch("empty");
    let fig = Figure::Line(LineChart {
        title: "one empty series".into(),
        series: vec![
            Series::line("none", vec![]),
            Series::line("some", vec![(1.0, 2.0), (2.0, 3.0)]),
        ],
        ..Default::default()
    });
    write(&fig, &dir.join("e")).unwrap_or_else(|e| panic!("{e}"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn charts_without_any_drawable_point_are_still_drawn() {
    let dir = scratch("nothing");
    let nothing = Figure::Line(LineChart {
        title: "nothing yet".into(),
        y_log: true,
        series: vec![
            Series::line("gap", vec![(1.0, f64::NAN), (2.0, -1.0)]),
            Series::line("none", vec![]),
        ],
        ..Default::default()
    });
    let csv = check_files(&nothing, &dir.join("nothing"), "nothing yet");
    // Every point stays in the CSV; a non-finite value is an empty field.
    assert_eq!(csv, "series,x,y\ngap,1,\ngap,2,-1\n");
    let no_panels = Figure::Panels(Panels {
        title: "no panels".into(),
        panels: vec![],
    });
    let w = write(&no_panels, &dir.join("no-panels")).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(std::fs::read_to_string(w.csv).expect("csv"), "panel,series,x,y\n");
    let grey = Figure::Heatmap(Heatmap {
        title: "all grey".into(),
        x: vec![1.0, 2.0],
        y: vec![1.0],
        z: vec![vec![f64::NAN, f64::INFINITY]],
        ..Default::default()
    });
    let csv = check_files(&grey, &dir.join("grey"), "all grey");
    assert_eq!(csv, "x,y,z\n1,1,\n2,1,\n");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn labels_with_commas_and_quotes_are_quoted_in_the_csv() {
    let dir = scratch("quote");
    let fig = Figure::Line(LineChart {
        title: "quoting".into(),
        series: vec![Series::line("a, \"b\"", vec![(0.5, 2.0)])],
        ..Default::default()
    });
    let csv = check_files(&fig, &dir.join("q"), "quoting");
    assert_eq!(csv, "series,x,y\n\"a, \"\"b\"\"\",0.5,2\n");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_ragged_heatmap_is_an_error_naming_the_row() {
    let dir = scratch("ragged");
    let fig = Figure::Heatmap(Heatmap {
        title: "ragged".into(),
        x: vec![1.0, 2.0],
        y: vec![1.0, 2.0],
        z: vec![vec![1.0, 2.0], vec![3.0]],
        ..Default::default()
    });
    let err = write(&fig, &dir.join("r"))
        .expect_err("z[1] is short")
        .to_string();
    assert!(err.contains("z[1]"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_unwritable_directory_is_an_error_naming_it() {
    let dir = scratch("unwritable");
    std::fs::create_dir_all(&dir).expect("scratch dir");
    let file = dir.join("a-file");
    std::fs::write(&file, b"not a directory").expect("write file");
    let fig = Figure::Line(LineChart {
        title: "t".into(),
        ..Default::default()
    });
    let err = write(&fig, &file.join("fig"))
        .expect_err("parent is a file")
        .to_string();
    assert!(err.contains("a-file"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}
