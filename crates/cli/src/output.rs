//! Output modes shared by every subcommand: a human table (default), `--json` or `--csv`.
//! Colour only on a terminal and never when `NO_COLOR` is set (https://no-color.org).

use std::io::IsTerminal;

#[derive(clap::Args, Debug, Clone)]
pub struct OutputArgs {
    /// Print machine-readable JSON on stdout instead of a table
    #[arg(long, global = true, conflicts_with = "csv")]
    pub json: bool,
    /// Print CSV on stdout instead of a table
    #[arg(long, global = true)]
    pub csv: bool,
    /// Write multios's own output (the table, --json or --csv) to FILE instead of stdout, which then
    /// carries only the program's output (profile, emulate, lwk run, map run)
    // Its own id: `report`'s positional RESULTS files share the name `results`, and clap, given the
    // same id twice, handed a report's first input file to this option, which emptied it.
    #[arg(long = "results", id = "results_file", global = true, value_name = "FILE")]
    pub results_file: Option<std::path::PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Table,
    Json,
    Csv,
}

/// How to print: the format, and whether colour and progress bars may be used.
#[derive(Debug, Clone)]
pub struct Out {
    pub format: Format,
    pub color: bool,
    /// Progress bars only on a TTY (stderr) and only in table mode.
    pub progress: bool,
}

impl OutputArgs {
    pub fn resolve(&self) -> Out {
        let format = if self.json {
            Format::Json
        } else if self.csv {
            Format::Csv
        } else {
            Format::Table
        };
        Out::new(
            format,
            no_color(std::env::var_os("NO_COLOR").as_deref()),
            std::io::stdout().is_terminal() && self.results_file.is_none(),
            std::io::stderr().is_terminal(),
        )
    }
}

/// Whether `NO_COLOR`'s value (if set) turns colour off: any non-empty value does.
pub fn no_color(value: Option<&std::ffi::OsStr>) -> bool {
    value.is_some_and(|v| !v.is_empty())
}

impl Out {
    /// Colour when stdout is a terminal and `NO_COLOR` is not set; progress bars when stderr is a
    /// terminal and the output is a table.
    pub fn new(format: Format, no_color: bool, stdout_tty: bool, stderr_tty: bool) -> Out {
        Out {
            format,
            color: !no_color && stdout_tty,
            progress: format == Format::Table && stderr_tty,
        }
    }
}

impl Out {
    pub fn paint_error(&self, s: &str) -> String {
        if self.color {
            format!("\x1b[1;31m{s}\x1b[0m")
        } else {
            s.to_string()
        }
    }

    pub fn bold(&self, s: &str) -> String {
        if self.color {
            format!("\x1b[1m{s}\x1b[0m")
        } else {
            s.to_string()
        }
    }

    /// A number for a table cell: rounded to `prec` decimals for people, full precision for CSV/JSON.
    pub fn num(&self, v: f64, prec: usize) -> String {
        if self.format == Format::Table {
            format!("{v:.prec$}")
        } else {
            format!("{v}")
        }
    }

    /// A duration for a table cell: with a unit for people (`6.300 µs`), exact seconds for CSV/JSON.
    pub fn secs(&self, s: f64) -> String {
        if self.format == Format::Table {
            multios_units::format_secs(s)
        } else {
            format!("{s:e}")
        }
    }

    /// Prints `value` as pretty JSON.
    pub fn json<T: serde::Serialize>(&self, value: &T) -> anyhow::Result<()> {
        outln!("{}", serde_json::to_string_pretty(value)?);
        Ok(())
    }
}

/// `s` safe to print on a terminal: C0 controls and DEL become their Control Pictures (ESC →
/// "␛", a newline → "␊"), C1 controls a `\u{9b}` escape. Text read from files (a profile's
/// command, a thread's name) otherwise reached the terminal raw: an ESC sequence in it could set
/// the window title, clear the screen or recolour everything after it.
pub fn printable(s: &str) -> std::borrow::Cow<'_, str> {
    if !s.chars().any(char::is_control) {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '\u{0}'..='\u{1f}' => out.push(char::from_u32(0x2400 + c as u32).unwrap_or('?')),
            '\u{7f}' => out.push('\u{2421}'),
            c if c.is_control() => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    std::borrow::Cow::Owned(out)
}

/// A simple table: a header and rows of cells, printed aligned, as CSV, or as JSON (array of objects).
#[derive(Debug, Clone, Default)]
pub struct Table {
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

impl Table {
    pub fn new<S: Into<String>>(header: impl IntoIterator<Item = S>) -> Self {
        Table {
            header: header.into_iter().map(Into::into).collect(),
            rows: Vec::new(),
        }
    }

    pub fn row<S: Into<String>>(&mut self, cells: impl IntoIterator<Item = S>) {
        self.rows.push(cells.into_iter().map(Into::into).collect());
    }

    pub fn to_csv(&self) -> String {
        let esc = |c: &String| {
            if c.contains([',', '"', '\n']) {
                format!("\"{}\"", c.replace('"', "\"\""))
            } else {
                c.clone()
            }
        };
        let mut s = String::new();
        for r in std::iter::once(&self.header).chain(self.rows.iter()) {
            s.push_str(&r.iter().map(esc).collect::<Vec<_>>().join(","));
            s.push('\n');
        }
        s
    }

    pub fn render(&self, out: &Out) -> String {
        // Cells from files are shown with their control characters escaped (see `printable`).
        let safe = |r: &Vec<String>| r.iter().map(|c| printable(c).into_owned()).collect::<Vec<_>>();
        let header = safe(&self.header);
        let rows: Vec<Vec<String>> = self.rows.iter().map(safe).collect();
        let n = header.len();
        let mut w = vec![0usize; n];
        for r in std::iter::once(&header).chain(rows.iter()) {
            for (i, c) in r.iter().enumerate().take(n) {
                w[i] = w[i].max(c.chars().count());
            }
        }
        let line = |r: &Vec<String>| {
            r.iter()
                .enumerate()
                .take(n)
                .map(|(i, c)| {
                    let pad = w[i].saturating_sub(c.chars().count());
                    // first column left-aligned (names), the rest right-aligned (numbers)
                    if i == 0 {
                        format!("{c}{}", " ".repeat(pad))
                    } else {
                        format!("{}{c}", " ".repeat(pad))
                    }
                })
                .collect::<Vec<_>>()
                .join("  ")
        };
        let mut s = out.bold(&line(&header));
        s.push('\n');
        for r in &rows {
            s.push_str(line(r).trim_end());
            s.push('\n');
        }
        s
    }

    /// Prints in the selected format (JSON: an array of objects keyed by the header).
    pub fn print(&self, out: &Out) {
        match out.format {
            Format::Table => out!("{}", self.render(out)),
            Format::Csv => out!("{}", self.to_csv()),
            Format::Json => {
                outln!(
                    "{}",
                    serde_json::to_string_pretty(&self.to_json()).unwrap_or_default()
                );
            }
        }
    }

    /// The rows as JSON objects keyed by the header; a cell that parses as a finite number is a
    /// number, any other a string.
    pub fn to_json(&self) -> Vec<serde_json::Map<String, serde_json::Value>> {
        self.rows
            .iter()
            .map(|r| {
                self.header
                    .iter()
                    .zip(r)
                    .map(|(h, c)| {
                        let v = c
                            .parse::<f64>()
                            .ok()
                            .and_then(serde_json::Number::from_f64)
                            .map(serde_json::Value::Number)
                            .unwrap_or_else(|| serde_json::Value::String(c.clone()));
                        (h.clone(), v)
                    })
                    .collect()
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsStr;

    fn out(format: Format, color: bool) -> Out {
        Out {
            format,
            color,
            progress: false,
        }
    }

    fn table() -> Table {
        let mut t = Table::new(["name", "n", "time"]);
        t.row(["read", "8195", "1.404 µs"]);
        t.row(["write, \"big\"", "7", "NaN"]);
        t
    }

    #[test]
    fn issue_17_tables_align_names_left_and_numbers_right() {
        let s = table().render(&out(Format::Table, false));
        assert_eq!(
            s,
            "name             n      time\nread          8195  1.404 µs\nwrite, \"big\"     7       NaN\n"
        );
    }

    #[test]
    fn issue_17_only_a_coloured_table_has_a_bold_header() {
        let s = table().render(&out(Format::Table, true));
        assert!(s.starts_with("\x1b[1mname"), "{s:?}");
        assert!(!table().render(&out(Format::Table, false)).contains('\x1b'));
        // A cell read from a file cannot reach the terminal with its escape sequences.
        let mut t = Table::new(["command", "n"]);
        t.row(["\x1b]0;PWNED\x07\x1b[2Jx\u{9b}y\n", "1"]);
        let s = t.render(&out(Format::Table, false));
        assert!(!s.chars().any(|c| c.is_control() && c != '\n'), "{s:?}");
        assert!(
            s.contains("\u{241b}]0;PWNED\u{2407}\u{241b}[2Jx\\u{9b}y\u{240a}"),
            "{s}"
        );
        assert_eq!(
            out(Format::Table, true).paint_error("error"),
            "\x1b[1;31merror\x1b[0m"
        );
        assert_eq!(out(Format::Table, false).paint_error("error"), "error");
    }

    #[test]
    fn issue_17_csv_quotes_commas_and_quotes() {
        assert_eq!(
            table().to_csv(),
            "name,n,time\nread,8195,1.404 µs\n\"write, \"\"big\"\"\",7,NaN\n"
        );
    }

    #[test]
    fn issue_17_json_rows_keep_numbers_as_numbers() {
        let rows = table().to_json();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0]["n"], serde_json::json!(8195.0));
        assert_eq!(rows[0]["time"], serde_json::json!("1.404 µs"));
        // NaN is not a JSON number: it stays a string.
        assert_eq!(rows[1]["time"], serde_json::json!("NaN"));
    }

    #[test]
    fn issue_17_numbers_and_times_are_exact_off_the_table() {
        let (t, j) = (out(Format::Table, false), out(Format::Json, false));
        assert_eq!(t.num(0.123456789, 4), "0.1235");
        assert_eq!(j.num(0.123456789, 4), "0.123456789");
        assert_eq!(j.secs(6.3e-6), "6.3e-6");
        assert_eq!(t.secs(6.3e-6), multios_units::format_secs(6.3e-6));
    }

    #[test]
    fn issue_17_no_color_turns_colour_off_when_set_and_not_empty() {
        assert!(!no_color(None));
        assert!(!no_color(Some(OsStr::new(""))));
        assert!(no_color(Some(OsStr::new("1"))));
        assert!(Out::new(Format::Table, false, true, true).color);
        assert!(!Out::new(Format::Table, true, true, true).color);
        assert!(!Out::new(Format::Table, false, false, true).color);
    }

    #[test]
    fn issue_17_progress_only_for_tables_on_a_terminal() {
        assert!(Out::new(Format::Table, true, false, true).progress);
        assert!(!Out::new(Format::Json, false, true, true).progress);
        assert!(!Out::new(Format::Table, false, true, false).progress);
    }
}
