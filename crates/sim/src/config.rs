//! What a simulation run is asked to do and what it gives back: the run's
//! configuration (the pair, strategies, start, warm-up, send combining and
//! flush), its window and totals, the result, the limits a run is held
//! to, and its errors. What does not live here: the event loops
//! (`engine`, `control`), sweeps (`sweep`).

use kicklab_model::control::CheckStats;
use kicklab_model::{Cost, IdleScale, Params, Party, Rates, WaitMode};
use serde::{Deserialize, Serialize};
use thiserror::Error;

/// Largest simulated time [ps] (the loops' keys shift time left by two
/// bits).
pub(crate) const MAX_TIME_PS: u64 = (u64::MAX >> 2) - 1;

/// What one simulation run is asked to do.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SimConfig {
    /// The pair.
    pub params: Params,
    /// How P waits when the queue is full.
    pub mode_p: WaitMode,
    /// How C waits when the queue is empty.
    pub mode_c: WaitMode,
    /// Messages to measure, after the warm-up.
    pub messages: u64,
    /// Messages consumed before measuring starts.
    pub warmup: u64,
    /// Seed of the cost streams.
    pub seed: u64,
    /// Record per-message latency (publish to end of consumption).
    pub latency: bool,
    /// The state at t = 0.
    #[serde(default)]
    pub start: Start,
    /// How S_P and S_C scale with how long their party slept (from
    /// falling asleep to becoming runnable), from a calibration's idle
    /// curve; `None`: S does not depend on it (the model's rule).
    #[serde(default)]
    pub idle_scale: [Option<IdleScale>; 2],
    /// What a timed sleep's wake-up costs P and C, drawn at every nap,
    /// where a calibration measured it apart from the kicked one (a
    /// profile's `nap_P`, `nap_C`, `Profile::nap_cost`); `None`: S, the
    /// model's rule (`control.md`).
    #[serde(default)]
    pub nap: [Option<Cost>; 2],
    /// Send combining: P holds written messages and publishes them
    /// together (VMware's hosted VMM, `run --batch` on threads).
    #[serde(default)]
    pub combine: Combine,
}

/// Send combining: the producer publishes (and may kick) once per
/// `batch` written messages, earlier by its [`Flush`] rule, and always
/// before it waits or pauses. A message's latency counts from when it was
/// written, so the hold shows. `batch` 1 with the `full` rule is the
/// paper's rule.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Combine {
    /// Messages per publish (>= 1).
    pub batch: u32,
    /// When a partial batch goes out as well.
    #[serde(default)]
    pub flush: Flush,
}

impl Default for Combine {
    fn default() -> Self {
        Combine {
            batch: 1,
            flush: Flush::Full,
        }
    }
}

impl Combine {
    /// Whether it changes anything (else the paper's rule): a batch of
    /// more than one message. With a batch of 1 every message goes out as
    /// it is written, so a flush rule has nothing to hold.
    pub fn is_on(&self) -> bool {
        self.batch > 1
    }

    /// The hold timer [ns], if the rule has one.
    pub fn timer_ns(&self) -> Option<f64> {
        match self.flush {
            Flush::Timer { ns } => Some(ns),
            Flush::Full | Flush::OnInterrupt => None,
        }
    }

    /// Checks it for a ring of `len` slots: a batch of 1 to L, a timer
    /// above 0 and at most an hour. The message names the setting
    /// (`batch: ...`, `flush: ...`).
    ///
    /// # Errors
    ///
    /// The first bad setting, as one line.
    pub fn check(&self, len: u32) -> Result<(), String> {
        if self.batch == 0 || self.batch > len {
            return Err(format!(
                "batch: 1 to L = {len} messages per publish, got {}",
                self.batch
            ));
        }
        if let Some(t) = self.timer_ns() {
            if !(t.is_finite() && t > 0.0 && t <= kicklab_model::MAX_DURATION_NS) {
                return Err(format!(
                    "flush: a timer above 0 and at most 1h, got {}",
                    kicklab_model::fmt_ns(t)
                ));
            }
        }
        Ok(())
    }
}

/// When the producer publishes a partial batch (besides before it waits
/// or pauses, which every rule does, and at the end of the stream):
/// `docs/model.md`, "Send combining".
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Flush {
    /// Only when the batch is full.
    #[default]
    Full,
    /// Also once the first held message is this old [ns] (checked as P
    /// finishes writing one).
    Timer {
        /// The longest hold [ns].
        ns: f64,
    },
    /// Also when a notification from the peer reaches the producer (its
    /// wake-up after C's kick): VMware's rule, the held messages ride on
    /// a switch that happens anyway.
    OnInterrupt,
}

impl std::fmt::Display for Flush {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Flush::Full => f.write_str("full"),
            Flush::Timer { ns } => write!(f, "timer:{}", kicklab_model::fmt_ns(*ns)),
            Flush::OnInterrupt => f.write_str("on-interrupt"),
        }
    }
}

impl std::str::FromStr for Flush {
    type Err = String;

    /// `full`, `timer:<duration>` (`timer:20us`) or `on-interrupt`.
    fn from_str(s: &str) -> Result<Flush, String> {
        match s.trim() {
            "full" => Ok(Flush::Full),
            "on-interrupt" => Ok(Flush::OnInterrupt),
            t => match t.strip_prefix("timer:") {
                Some(d) => kicklab_model::parse_duration_ns(d)
                    .map(|ns| Flush::Timer { ns })
                    .map_err(|e| e.to_string()),
                None => Err(format!(
                    "unknown flush rule `{t}` (use full, timer:<duration> or on-interrupt, e.g. timer:20us)"
                )),
            },
        }
    }
}

/// The state a run starts from. Most pairs end in the same operating point
/// from any start; with kick visibility (V < N) some have two, and the
/// start picks one (`docs/model.md`, "Bistability").
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Start {
    /// An empty queue, both parties attempting at t = 0 (P first): C
    /// sleeps at once. The rules' start and the default.
    #[default]
    Empty,
    /// A full queue of published messages and P asleep; C starts at t = 0.
    /// These L messages count as published (and their latency as starting
    /// at 0); the warm-up discards them.
    Full,
}

impl SimConfig {
    /// Both parties in `mode`, a warm-up of `messages / 10 + 4 L`, seed 1,
    /// latency on.
    pub fn new(params: Params, mode: WaitMode, messages: u64) -> SimConfig {
        SimConfig {
            params,
            mode_p: mode,
            mode_c: mode,
            messages,
            warmup: default_warmup(messages, params.len),
            seed: 1,
            latency: true,
            start: Start::Empty,
            idle_scale: [None, None],
            nap: [None, None],
            combine: Combine::default(),
        }
    }
}

/// The default warm-up: a tenth of the measured messages plus four queues.
pub fn default_warmup(messages: u64, len: u32) -> u64 {
    messages / 10 + 4 * u64::from(len)
}

/// Over which stretch of the run T and E were measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Window {
    /// Between two P->C notifications (whole rounds; exact for constant costs).
    RoundsPc,
    /// Between two C->P notifications (whole rounds; exact for constant costs).
    RoundsCp,
    /// Between two publishes (no notifications after the warm-up: polling or
    /// lockstep).
    Messages,
    /// From the free that ends the warm-up to the last free (strategies
    /// beyond notify, poll and spin, whose rounds need not repeat).
    Consumed,
}

/// Raw totals of a whole run (warm-up included), in picoseconds: what two
/// implementations of the rules must agree on exactly.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Totals {
    /// Simulated time at the last free [ps].
    pub time_ps: u64,
    /// Messages published.
    pub published: u64,
    /// Messages freed.
    pub consumed: u64,
    /// P's busy time [ps] (intervals counted from their start).
    pub busy_p_ps: u64,
    /// C's busy time [ps].
    pub busy_c_ps: u64,
    /// Notifications sent by P.
    pub notifications_p: u64,
    /// Notifications sent by C.
    pub notifications_c: u64,
    /// Times P slept.
    pub sleeps_p: u64,
    /// Times C slept.
    pub sleeps_c: u64,
    /// Sum of the latencies of the messages freed after the warm-up [ps]
    /// (0 when latency recording is off). In JSON an integer up to
    /// 2^64 - 1 ps (213 days), past it the nearest double.
    #[serde(with = "wide_sum")]
    pub latency_sum_ps: u128,
}

/// A `u128` sum as JSON can hold it everywhere: an integer where it fits
/// in 64 bits, else a double (`serde_json::Value` holds no wider
/// integer, and a run of hour-long costs reaches past 2^64 ps).
mod wide_sum {
    use serde::{Deserialize, Deserializer, Serializer};

    #[allow(clippy::trivially_copy_pass_by_ref)] // serde's signature
    pub(super) fn serialize<S: Serializer>(v: &u128, s: S) -> Result<S::Ok, S::Error> {
        match u64::try_from(*v) {
            Ok(v) => s.serialize_u64(v),
            #[allow(clippy::cast_precision_loss)]
            Err(_) => s.serialize_f64(*v as f64),
        }
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<u128, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Wide {
            Int(u128),
            Float(f64),
        }
        match Wide::deserialize(d)? {
            Wide::Int(v) => Ok(v),
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            Wide::Float(v) if v >= 0.0 && v.is_finite() => Ok(v as u128),
            Wide::Float(v) => Err(serde::de::Error::custom(format!(
                "latency_sum_ps: {v} is not a sum of latencies"
            ))),
        }
    }
}

/// What a run measured. Times in nanoseconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SimResult {
    /// T, E (split by party), notifications, sleeps and latency over the
    /// measurement window.
    #[serde(flatten)]
    pub rates: Rates,
    /// The window T and E were measured over.
    pub window: Window,
    /// Events processed in the whole run (warm-up included).
    pub events: u64,
    /// Simulated time of the whole run [ns].
    pub sim_time_ns: f64,
    /// Raw totals of the whole run.
    pub totals: Totals,
    /// The work W_P + W_C actually drawn per message over the window [ns],
    /// where the run kept it (the loop for every strategy does; the fast
    /// loop does not): the base of an excess E - W that random work does
    /// not blur.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub work_ns: Option<f64>,
    /// What `adaptive`'s self-check did over the whole run, P's and C's
    /// (`kicklab_model::control::Controller::check_stats`); absent for
    /// other strategies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub self_check_p: Option<CheckStats>,
    /// See `self_check_p`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub self_check_c: Option<CheckStats>,
}

impl SimResult {
    /// Why the window of a run of `params` may not show the steady state,
    /// in words (the binary prints them as `warning:` lines, Python
    /// raises them as warnings). `round_messages` is the model's round
    /// where it has one for the run's modes. Only for constant costs,
    /// where the steady state is exact: a window of messages shorter than
    /// one round measures a partial round; and no steady pair beats its
    /// slower party, so a T below it is a transient (a queue filling, or a
    /// burst freed at one instant after a long start-up).
    pub fn window_warnings(&self, params: &Params, round_messages: Option<u64>) -> Vec<String> {
        let mut out = Vec::new();
        if !params.all_const() {
            return out;
        }
        if let Some(n) = round_messages.filter(|&n| n > 1) {
            // (A window of consumed messages is whole rounds only by
            // chance: too short a one is a partial round too.)
            let short = match self.window {
                Window::Messages => true,
                Window::Consumed => self.rates.messages < 4 * n,
                Window::RoundsPc | Window::RoundsCp => false,
            };
            if short {
                out.push(format!(
                    "a round is {n} messages, and this run's window held too few whole rounds \
                     (the queue may still have been filling after the warm-up); T and E are \
                     over messages, not whole rounds (raise the messages: at least {}, more \
                     until this warning goes)",
                    4 * n
                ));
            }
        }
        let floor = params.w_p.mean_ns().max(params.w_c.mean_ns());
        if self.rates.t_ns < floor * (1.0 - 1e-6) {
            out.push(format!(
                "T ({}) is below the slower party's work ({}): the {} messages measured are \
                 a transient, not the steady state; raise the messages or the warm-up",
                kicklab_model::fmt_ns(self.rates.t_ns),
                kicklab_model::fmt_ns(floor),
                self.rates.messages
            ));
        }
        out
    }
}

/// The longest queue the simulator takes: it keeps a publish time per slot
/// and warms up over `4 L` messages, so 2^24 slots cost 128 MiB and about a
/// second.
pub const MAX_LEN: u32 = 1 << 24;

/// The most messages (warm-up included) one run simulates: minutes at the
/// simulator's 20-100 million messages per second.
pub const MAX_MESSAGES: u64 = 10_000_000_000;

/// The most messages one study simulates in all, warm-ups included (a
/// sweep, `kicklab control`): the most one run may ([`MAX_MESSAGES`]),
/// tens of minutes on two cores. More would take hours, and is refused
/// before anything runs.
pub const MAX_STUDY_MESSAGES: u64 = MAX_MESSAGES;

/// Why a run could not finish.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum SimError {
    /// Invalid parameters.
    #[error(transparent)]
    Params(#[from] kicklab_model::ParamError),
    /// `messages` was 0.
    #[error("messages: need at least 1 message to measure")]
    NoMessages,
    /// More messages (warm-up included) than a run may simulate.
    #[error("messages: at most {MAX_MESSAGES} with the warm-up (minutes of simulation); got {0}")]
    TooManyMessages(u128),
    /// More messages (warm-ups included) than a study of many runs may
    /// simulate in all ([`MAX_STUDY_MESSAGES`]).
    #[error(
        "messages: {runs} runs of {messages} messages and their warm-ups are {total} simulated \
         messages in all, hours; at most {max} in one study",
        max = MAX_STUDY_MESSAGES
    )]
    StudyTooLarge {
        /// Runs in the study.
        runs: u64,
        /// Messages per run.
        messages: u64,
        /// Messages in all, warm-ups included.
        total: u128,
    },
    /// A party's wait mode is unusable.
    #[error("{party:?}'s wait mode: {reason}")]
    Mode {
        /// Whose mode.
        party: Party,
        /// What is wrong.
        reason: String,
    },
    /// A point of a sweep has invalid parameters.
    #[error("at {at}: {source}")]
    SweepPoint {
        /// The point (`kp=300`).
        at: String,
        /// What is wrong there.
        source: kicklab_model::ParamError,
    },
    /// Stopped from outside ([`crate::stop::request`]): a Ctrl-C in the
    /// Python bindings.
    #[error("stopped: interrupted")]
    Stopped,
    /// Both parties asleep: impossible under the rules; reported, not hung.
    #[error("deadlock at t = {t_ns} ns: both parties asleep (free = {free}, avail = {avail}); this is a bug")]
    Deadlock {
        /// When [ns].
        t_ns: u64,
        /// Free slots then.
        free: u64,
        /// Available messages then.
        avail: u64,
    },
    /// Send combining that makes no sense (a batch of 0 or above L).
    #[error("{0}")]
    Combine(String),
    /// A nap's wake-up cost that is not a valid cost, or whose mean is
    /// over 1 s.
    #[error("{party:?}'s nap wake-up cost: {ns} (give 0 to 1 s)")]
    Nap {
        /// Whose.
        party: Party,
        /// The value, as given [ns].
        ns: String,
    },
    /// Simulated time ran past the clock's range ([`MAX_TIME_PS`], 53
    /// days: the keys spend two bits of the picosecond clock on the tie
    /// class).
    #[error(
        "simulated time ran past the clock's {} days (costs, sleep periods or timeouts too long for this many messages)",
        MAX_TIME_PS / 86_400_000_000_000_000
    )]
    TimeOverflow,
    /// More than [`MAX_EVENTS_PER_MESSAGE`] events a message on average:
    /// timed sleeps or spins far shorter than the waits they fill.
    #[error(
        "stopped after {events} events, more than {MAX_EVENTS_PER_MESSAGE} a message consumed: a strategy's \
         sleeps or spins are far shorter than the waits they fill (e.g. sleep:1ns against 100ms \
         of work), and the simulation would run for hours; use longer ones or fewer messages"
    )]
    TooManyEvents {
        /// Events simulated when it stopped.
        events: u64,
    },
}

/// The most events a run simulates per message consumed so far (beyond an
/// allowance of 100 messages' worth as it starts) before it stops
/// ([`SimError::TooManyEvents`]): runs of the strategies in `control.md`
/// take a few to a few dozen a message; only a timed sleep or spin a
/// hundred thousand times shorter than its wait takes more.
pub const MAX_EVENTS_PER_MESSAGE: u64 = 100_000;
