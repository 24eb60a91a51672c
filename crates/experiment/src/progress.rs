//! How a long experiment reports its progress: the experiment bodies call a [`Progress`]; the CLI
//! draws a bar on a terminal, the tests and libraries pass [`Silent`].

/// The progress of an experiment made of `total` steps.
pub trait Progress {
    /// A new phase of `total` steps begins, described by `label`.
    fn start(&mut self, total: u64, label: &str);
    /// One step is done; `done` says what it measured (a person may want to read it).
    fn advance(&mut self, done: &str);
    /// The phase is over.
    fn finish(&mut self);
    /// A line worth showing whatever the progress display (e.g. a measured model input).
    fn note(&mut self, _text: &str) {}
}

/// Reports nothing.
#[derive(Debug, Default, Clone, Copy)]
pub struct Silent;

impl Progress for Silent {
    fn start(&mut self, _total: u64, _label: &str) {}
    fn advance(&mut self, _done: &str) {}
    fn finish(&mut self) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn silent_accepts_every_call() {
        let mut p = Silent;
        p.start(3, "x");
        p.advance("a");
        p.note("n");
        p.finish();
    }
}
