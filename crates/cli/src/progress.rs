//! The CLI's [`Progress`]: an indicatif bar on stderr when it is a terminal (table output), with no
//! colour when `NO_COLOR` is set; otherwise only the experiment's notes, as plain lines on stderr.

use crate::output::Out;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use multios_experiment::Progress;

/// A progress bar, or nothing.
pub struct Bar {
    enabled: bool,
    color: bool,
    bar: Option<ProgressBar>,
}

impl Bar {
    pub fn new(out: &Out) -> Bar {
        Bar {
            enabled: out.progress,
            color: std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()),
            bar: None,
        }
    }

    fn style(&self) -> ProgressStyle {
        let template = if self.color {
            "{msg} [{bar:30.cyan/blue}] {pos}/{len} {elapsed_precise}"
        } else {
            "{msg} [{bar:30}] {pos}/{len} {elapsed_precise}"
        };
        ProgressStyle::with_template(template)
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> ")
    }
}

impl Progress for Bar {
    fn start(&mut self, total: u64, label: &str) {
        if !self.enabled {
            return;
        }
        if let Some(b) = self.bar.take() {
            b.finish_and_clear();
        }
        // An unknown number of steps (0) gets a spinner-like bar without a length.
        let len = (total > 0).then_some(total);
        let b = ProgressBar::with_draw_target(len, ProgressDrawTarget::stderr());
        b.set_style(self.style());
        b.set_message(label.to_string());
        self.bar = Some(b);
    }

    fn advance(&mut self, done: &str) {
        if let Some(b) = &self.bar {
            b.println(done);
            b.inc(1);
        } else if self.enabled {
            eprintln!("{done}");
        }
    }

    fn finish(&mut self) {
        if let Some(b) = self.bar.take() {
            b.finish_and_clear();
        }
    }

    fn note(&mut self, text: &str) {
        match &self.bar {
            Some(b) => b.println(text),
            None => eprintln!("{text}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::Format;

    #[test]
    fn off_a_terminal_no_bar_is_drawn() {
        let out = Out {
            format: Format::Json,
            color: false,
            progress: false,
        };
        let mut b = Bar::new(&out);
        b.start(3, "x");
        b.advance("one");
        assert!(b.bar.is_none());
        b.finish();
    }
}
