//! [`Progress`]: how a long experiment tells its caller where it is.

/// Receives progress from a long experiment. The binary draws bars; a
/// library caller may ignore it ([`Silent`]).
pub trait Progress: Sync {
    /// A stage of `len` steps named `what` begins.
    fn start(&self, what: &str, len: u64);
    /// One step of the current stage is done (may be called from any thread).
    fn step(&self);
    /// The current stage is over.
    fn finish(&self);
    /// A line worth telling the user (a calibration starting, a warning).
    fn note(&self, line: &str);
}

/// Progress that goes nowhere.
#[derive(Debug, Clone, Copy, Default)]
pub struct Silent;

impl Progress for Silent {
    fn start(&self, _: &str, _: u64) {}
    fn step(&self) {}
    fn finish(&self) {}
    fn note(&self, _: &str) {}
}
