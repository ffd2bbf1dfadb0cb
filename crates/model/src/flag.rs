//! The command line's flags as the libraries name them: [`Flag`], one
//! table of every `kicklab` flag, and [`CommandLine`], the one way a
//! library writes a `kicklab` command (the "reproduce" lines of the report,
//! the advice's commands, an error's hint). A library never spells a flag
//! itself: renaming one here renames it everywhere, and the binary's tests
//! hold this table and its `clap` definitions to the same set of names
//! (every flag of every subcommand is here, and every name here is a flag).
//! What does not live here: what a flag does (the binary's `clap`
//! definitions and their help), which flag an error names (the binary).

use std::fmt;

use crate::Param;

macro_rules! flags {
    ($($(#[$doc:meta])* $variant:ident = $name:literal,)*) => {
        /// A `kicklab` flag other than a pair's parameter (those are
        /// [`Flag::Param`], named by [`Param::name`]). Shown with its dashes:
        /// `Flag::VmService` is `--vm-service`.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum Flag {
            /// A parameter of the pair (`--wp`, `--len`, ...).
            Param(Param),
            $($(#[$doc])* $variant,)*
        }

        impl Flag {
            /// Every flag but the parameters, in the table's order.
            pub const OTHERS: &'static [Flag] = &[$(Flag::$variant,)*];

            /// The flag's name without its dashes (`vm-service`).
            #[must_use]
            pub const fn name(self) -> &'static str {
                match self {
                    Flag::Param(p) => p.name(),
                    $(Flag::$variant => $name,)*
                }
            }
        }
    };
}

flags! {
    /// Poisson or evenly spaced arrivals (`qos`).
    Arrivals = "arrivals",
    /// Where the pair runs: a notifier or a KVM guest.
    Backend = "backend",
    /// Send combining: messages per kick.
    Batch = "batch",
    /// The simulator's speed (`sim`).
    Bench = "bench",
    /// A stage's queue (`qos`).
    Buffer = "buffer",
    /// The forecasts checked (`replay`).
    Check = "check",
    /// The client's own work (`scale`).
    ClientCost = "client-cost",
    /// Requests in flight (`scale`).
    Concurrency = "concurrency",
    /// The consumer's thread in a trace.
    Consumer = "consumer",
    /// The controller's knob (`control`).
    Control = "control",
    /// CPUs of the simulated machine (`scale`).
    Cpus = "cpus",
    /// Which side the guest is (kvm).
    Direction = "direction",
    /// Every strategy tried (`advise`).
    Exhaustive = "exhaustive",
    /// The paper's figures (`qos`).
    Figures = "figures",
    /// When a combined batch goes out.
    Flush = "flush",
    /// What the advice is for.
    For = "for",
    /// Replace an earlier run's files.
    Force = "force",
    /// The report at full depth.
    Full = "full",
    /// The gap between rounds (`calibrate`).
    Gap = "gap",
    /// The gaps measured (`calibrate`).
    Gaps = "gaps",
    /// How the guest runs (kvm).
    Guest = "guest",
    /// KVM's host halt polling.
    HaltPoll = "halt-poll",
    /// The help text.
    Help = "help",
    /// How the idle guests wait (`scale`).
    Idle = "idle",
    /// One JSON object on standard output.
    Json = "json",
    /// A stage's kick (`qos`).
    Kick = "kick",
    /// The latency bound `adaptive` keeps.
    Latency = "latency",
    /// A VM's rate limit (`qos`).
    Limit = "limit",
    /// Messages per run.
    Messages = "messages",
    /// `--strategy`'s old name.
    Mode = "mode",
    /// `--strategy-c`'s old name.
    ModeC = "mode-c",
    /// `--strategy-p`'s old name.
    ModeP = "mode-p",
    /// No latency percentiles (`sim`).
    NoLatency = "no-latency",
    /// The report without real runs.
    NoTestbed = "no-testbed",
    /// Requests offered per second (`qos`).
    Offered = "offered",
    /// The output folder.
    Out = "out",
    /// Runs that measure the ring's overhead (`calibrate`).
    OverheadRuns = "overhead-runs",
    /// Shared or direct path (`qos`).
    Path = "path",
    /// Points per sweep.
    Points = "points",
    /// Where limits are enforced (`qos`).
    Police = "police",
    /// The producer's thread in a trace.
    Producer = "producer",
    /// A calibration profile.
    Profile = "profile",
    /// The work range of `control`.
    Range = "range",
    /// One VM's offered rate (`qos`).
    Rate = "rate",
    /// Messages per real run (`report`).
    RealMessages = "real-messages",
    /// Repetitions per point.
    Repeat = "repeat",
    /// `validate --replay DIR`: `replay DIR` (read before the flags are
    /// parsed, so it has no help line of its own).
    Replay = "replay",
    /// The requester's strategy (`pingpong`).
    Requester = "requester",
    /// Calibration rounds.
    Rounds = "rounds",
    /// Samples per calibration round.
    Samples = "samples",
    /// Where a profile is written.
    Save = "save",
    /// Real time over the paper's (`qos`).
    Scale = "scale",
    /// Seconds measured (`qos`).
    Seconds = "seconds",
    /// The simulator's seed.
    Seed = "seed",
    /// The shared stage's work (`qos`).
    Shared = "shared",
    /// Signals per source (`flags`).
    Signals = "signals",
    /// A time slice (`scale`).
    Slice = "slice",
    /// Sources watched (`flags`).
    Sources = "sources",
    /// Who starts (`sim`).
    Start = "start",
    /// How both parties wait.
    Strategy = "strategy",
    /// How the consumer waits.
    StrategyC = "strategy-c",
    /// How the producer waits.
    StrategyP = "strategy-p",
    /// A context switch's cost (`scale`).
    Switch = "switch",
    /// A drawing of the run (`trace`).
    Timeline = "timeline",
    /// A timer's period.
    Timer = "timer",
    /// What the VMs' own processing runs on (`qos`).
    VmCore = "vm-core",
    /// A VM's own work per request (`qos`).
    VmService = "vm-service",
    /// VMs sharing a device.
    Vms = "vms",
    /// One parameter varied.
    Vary = "vary",
    /// A stage's wake-up (`qos`).
    Wake = "wake",
    /// Messages before the measured window.
    Warmup = "warmup",
    /// The responder's work (`pingpong`).
    Work = "work",
    /// The workload of `control`.
    Workload = "workload",
    /// The map's first axis.
    X = "x",
    /// The map's second axis.
    Y = "y",
}

impl fmt::Display for Flag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "--{}", self.name())
    }
}

impl From<Param> for Flag {
    fn from(p: Param) -> Flag {
        Flag::Param(p)
    }
}

/// A `kicklab` command as a library prints it: `kicklab sub --flag value
/// ...`, its flags from [`Flag`] (and a pair's parameters from
/// [`crate::Params::flags`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommandLine(String);

impl CommandLine {
    /// `kicklab <command>`.
    #[must_use]
    pub fn new(command: &str) -> CommandLine {
        CommandLine(format!("kicklab {command}"))
    }

    /// Adds `--flag value`.
    #[must_use]
    pub fn arg(mut self, flag: impl Into<Flag>, value: impl fmt::Display) -> CommandLine {
        self.0.push_str(&format!(" {} {value}", flag.into()));
        self
    }

    /// Adds `--flag value` where `value` is given.
    #[must_use]
    pub fn arg_some(self, flag: impl Into<Flag>, value: Option<impl fmt::Display>) -> CommandLine {
        match value {
            Some(v) => self.arg(flag, v),
            None => self,
        }
    }

    /// Adds a switch (`--force`) where `on`.
    #[must_use]
    pub fn switch(mut self, flag: Flag, on: bool) -> CommandLine {
        if on {
            self.0.push_str(&format!(" {flag}"));
        }
        self
    }

    /// Adds text as it is: a positional argument, or flags made elsewhere
    /// ([`crate::Params::flags`]); nothing where it is empty.
    #[must_use]
    pub fn raw(mut self, text: &str) -> CommandLine {
        if !text.is_empty() {
            self.0.push(' ');
            self.0.push_str(text);
        }
        self
    }
}

impl fmt::Display for CommandLine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<CommandLine> for String {
    fn from(c: CommandLine) -> String {
        c.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_line_is_its_flags_in_order() {
        let c = CommandLine::new("validate")
            .arg(Flag::Backend, "kvm")
            .arg(Param::Wp, "2us")
            .arg_some(Flag::Seed, None::<u64>)
            .switch(Flag::Json, true)
            .switch(Flag::Force, false)
            .raw("");
        assert_eq!(
            c.to_string(),
            "kicklab validate --backend kvm --wp 2us --json"
        );
    }

    #[test]
    fn names_are_unique_lowercase_words() {
        let mut names: Vec<&str> = Flag::OTHERS.iter().map(|f| f.name()).collect();
        names.extend(Param::ALL.map(Param::name));
        for n in &names {
            assert!(
                n.bytes().all(|b| b.is_ascii_lowercase() || b == b'-') && !n.starts_with('-'),
                "{n}"
            );
        }
        let all = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), all, "a name is in the table twice");
    }
}
