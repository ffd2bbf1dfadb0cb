//! Progress on stderr: [`Bars`], the lab's [`kicklab_lab::Progress`] as a
//! bar per stage, and [`bar`]. Drawn only where stderr is a terminal; a
//! bar can never fail a command. What does not live here: the notes'
//! words (the lab's).

use crate::out;

/// The binary's [`kicklab_lab::Progress`]: a bar per stage on stderr
/// (hidden when stderr is not a terminal) and notes as lines.
#[derive(Default)]
pub struct Bars(std::sync::Mutex<Option<indicatif::ProgressBar>>);

impl Bars {
    fn bar(&self) -> std::sync::MutexGuard<'_, Option<indicatif::ProgressBar>> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl kicklab_lab::Progress for Bars {
    fn start(&self, what: &str, len: u64) {
        *self.bar() = Some(bar(len, what));
    }
    fn step(&self) {
        if let Some(b) = &*self.bar() {
            b.inc(1);
        }
    }
    fn finish(&self) {
        if let Some(b) = self.bar().take() {
            b.finish_and_clear();
        }
    }
    fn note(&self, line: &str) {
        match &*self.bar() {
            Some(b) => b.suspend(|| errln!("{line}")),
            None => errln!("{line}"),
        }
    }
}

/// A progress bar of `len` points on stderr (hidden when stderr is not a
/// terminal).
pub fn bar(len: u64, what: &str) -> indicatif::ProgressBar {
    let bar = if out::stderr_is_terminal() {
        indicatif::ProgressBar::new(len)
    } else {
        indicatif::ProgressBar::hidden()
    };
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{msg:>12} [{bar:40}] {pos}/{len} points, {elapsed} elapsed, ~{eta} left",
        )
        .expect("valid template")
        .progress_chars("=> "),
    );
    bar.set_message(what.to_string());
    bar
}
