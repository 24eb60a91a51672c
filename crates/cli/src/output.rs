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
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        Out {
            format,
            color: !no_color && std::io::stdout().is_terminal(),
            progress: format == Format::Table && std::io::stderr().is_terminal(),
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
        println!("{}", serde_json::to_string_pretty(value)?);
        Ok(())
    }
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
        let n = self.header.len();
        let mut w = vec![0usize; n];
        for r in std::iter::once(&self.header).chain(self.rows.iter()) {
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
        let mut s = out.bold(&line(&self.header));
        s.push('\n');
        for r in &self.rows {
            s.push_str(line(r).trim_end());
            s.push('\n');
        }
        s
    }

    /// Prints in the selected format (JSON: an array of objects keyed by the header).
    pub fn print(&self, out: &Out) {
        match out.format {
            Format::Table => print!("{}", self.render(out)),
            Format::Csv => print!("{}", self.to_csv()),
            Format::Json => {
                let rows: Vec<serde_json::Map<String, serde_json::Value>> = self
                    .rows
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
                    .collect();
                println!("{}", serde_json::to_string_pretty(&rows).unwrap_or_default());
            }
        }
    }
}
