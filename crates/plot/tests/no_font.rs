//! Without a usable font, the PNG cannot carry text: `write` must say which package to
//! install, and still leave the SVG (whose text the viewer renders) and the CSV.
//! This is its own test binary because the font is registered once per process.

#[path = "../../../testsupport/scratch.rs"]
mod scratch;

#[test]
fn missing_font_names_the_package_and_still_writes_svg_and_csv() {
    let dir = scratch::Scratch::new("multios-plot-nofont", "fig");
    // Only this path is tried when the variable is set.
    std::env::set_var(multios_plot::FONT_ENV, dir.join("no-such-font.ttf"));
    let fig = multios_plot::Figure::Line(multios_plot::LineChart {
        title: "no font here".into(),
        series: vec![multios_plot::Series::line("s", vec![(1.0, 1.0), (2.0, 3.0)])],
        ..Default::default()
    });
    let stem = dir.join("fig");
    let err = multios_plot::write(&fig, &stem).expect_err("no font: the PNG cannot be written");
    let msg = err.to_string();
    assert!(msg.contains("fonts-dejavu-core"), "{msg}");
    assert!(msg.contains("no-such-font.ttf"), "{msg}");
    let svg = std::fs::read_to_string(dir.join("fig.svg")).expect("the SVG is written without a font");
    assert!(svg.contains("no font here"));
    let csv = std::fs::read_to_string(dir.join("fig.csv")).expect("the CSV is written without a font");
    assert_eq!(csv, "series,x,y\ns,1,1\ns,2,3\n");
}
