//! Command-line arguments shared by the subcommands: the pair's parameters
//! and wait modes.

use clap::Args;
use kicklab_model::{parse_duration_ns, Cost, WaitMode};

use kicklab_term::Usage;

/// The pair's parameters. Defaults: the paper's Fig. 4 set-up.
#[derive(Debug, Clone, Args)]
pub struct ParamArgs {
    /// Queue length L [slots].
    #[arg(
        long,
        value_parser = crate::args::whole::<u32>,
        default_value_t = 256,
        allow_hyphen_values = true,
        help_heading = "Parameters"
    )]
    pub len: u32,
    /// k_P: P wakes a sleeping C once this many messages are queued.
    #[arg(
        long,
        value_parser = crate::args::whole::<u32>,
        default_value_t = 1,
        allow_hyphen_values = true,
        help_heading = "Parameters"
    )]
    pub kp: u32,
    /// k_C: C wakes a sleeping P once this many slots are free.
    #[arg(
        long,
        value_parser = crate::args::whole::<u32>,
        default_value_t = 1,
        allow_hyphen_values = true,
        help_heading = "Parameters"
    )]
    pub kc: u32,
    /// W_P: producer work per message. A duration (1us, 250ns; bare = ns) or
    /// a distribution: const:1us, uniform:0.8us,1.2us, exp:1us (mean),
    /// normal:1us,0.1us (truncated at 0), lognormal:1us,0.2 (mean, sigma);
    /// phases:0.5us@5000+3us@5000 (2 to 4 of those in turn, each for its
    /// count of draws, then over again); mix:0.01:1us+50us (the second with
    /// probability 0.01, else the first).
    #[arg(long, default_value = "1us", value_parser = cost, allow_hyphen_values = true, help_heading = "Parameters")]
    pub wp: Cost,
    /// W_C: consumer work per message (duration or distribution).
    #[arg(long, default_value = "1.1us", value_parser = cost, allow_hyphen_values = true, help_heading = "Parameters")]
    pub wc: Cost,
    /// N_P: P's cost of notifying C (a kick). [default: 2.4us, or the --profile's]
    #[arg(long, value_parser = cost, allow_hyphen_values = true, help_heading = "Parameters")]
    pub np: Option<Cost>,
    /// N_C: C's cost of notifying P (an interrupt). [default: 0.2us, or the --profile's]
    #[arg(long, value_parser = cost, allow_hyphen_values = true, help_heading = "Parameters")]
    pub nc: Option<Cost>,
    /// S_P: P's cost of starting after a notification (wake-up). [default: 3.9us, or the --profile's]
    #[arg(long, value_parser = cost, allow_hyphen_values = true, help_heading = "Parameters")]
    pub sp: Option<Cost>,
    /// S_C: C's cost of starting after a notification (wake-up). [default: 0.2us, or the --profile's]
    #[arg(long, value_parser = cost, allow_hyphen_values = true, help_heading = "Parameters")]
    pub sc: Option<Cost>,
    /// V_P: when C sees P's kick, from the kick's start (at most N_P). A
    /// KVM kick is seen by the host about half-way through it.
    /// [default: N_P, or the --profile's]
    #[arg(long, value_parser = cost, allow_hyphen_values = true, help_heading = "Parameters")]
    pub vp: Option<Cost>,
    /// V_C: when P sees C's notification, from its start (at most N_C).
    /// [default: N_C, or the --profile's]
    #[arg(long, value_parser = cost, allow_hyphen_values = true, help_heading = "Parameters")]
    pub vc: Option<Cost>,
    /// A calibration profile (`kicklab calibrate --save FILE`): its N_P,
    /// N_C, S_P, S_C (and V_P, V_C) replace the defaults, and `model` and
    /// `sim` add its ring cost per message to W_P and W_C; flags
    /// given explicitly still win (a profile's V above a given N is cut
    /// to it).
    #[arg(long, allow_hyphen_values = true, help_heading = "Parameters")]
    pub profile: Option<std::path::PathBuf>,
}

fn cost(s: &str) -> Result<Cost, String> {
    Cost::parse(s).map_err(|e| e.to_string())
}

/// A whole-number flag's type: what [`whole`] parses to.
pub trait Whole: Sized + Clone + Send + Sync + 'static {
    /// The largest value the flag's type holds.
    const MAX: u64;
    /// The value (at most [`Whole::MAX`]).
    fn of(v: u64) -> Self;
}

macro_rules! whole_type {
    ($($t:ty),*) => {$(
        impl Whole for $t {
            const MAX: u64 = <$t>::MAX as u64;
            #[allow(clippy::cast_possible_truncation)]
            fn of(v: u64) -> Self {
                v as $t
            }
        }
    )*};
}
whole_type!(u32, u64, usize);

/// Parses a whole-number flag (a count, a length, a seed): digits only.
/// clap's own parser repeats Rust's error and the type's range (`-1 is not
/// in 0..=4294967295` for `--kp`, whose range is 1 to L), which says
/// nothing about the flag; the flag's own range is checked where it is
/// known.
///
/// # Errors
///
/// Not digits only, or above the type's largest value.
pub fn whole<T: Whole>(s: &str) -> Result<T, String> {
    kicklab_model::parse_whole(s, T::MAX).map(T::of)
}

/// Parses a plain number >= 0 (a rate, seconds, a scale): finite, with no
/// sign (so `-0` is refused as `--wp -0` is) and no unit. clap's own float
/// parser takes `-0`, `nan` and `inf`, and says `invalid float literal`
/// of `1s`.
///
/// # Errors
///
/// Not such a number.
pub fn number(s: &str) -> Result<f64, String> {
    let t = s.trim();
    match t.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 && !t.starts_with(['-', '+']) => Ok(v),
        _ => Err(format!(
            "`{}` is not a number >= 0 (e.g. 800 or 0.5: digits, no sign, no unit)",
            kicklab_model::shown(s)
        )),
    }
}

/// Parses `--backend`: `futex`, `eventfd`, `pipe`, or `kvm` (refused, with
/// the reason, where this machine has no usable KVM).
pub fn backend(s: &str) -> Result<kicklab_testbed::Backend, String> {
    let be: kicklab_testbed::Backend = s.parse()?;
    if let kicklab_testbed::Backend::Kvm(_) = be {
        kvm_usable().map_err(|why| why.to_string())?;
    }
    Ok(be)
}

/// Whether this machine's KVM can run kicklab's guests; the refusal is
/// the same line in every command (`--backend`, why), whether clap's
/// parser or the command's own check finds it.
///
/// # Errors
///
/// The reason, as one line.
pub fn kvm_usable() -> Result<(), KvmUnusable> {
    kicklab_testbed::kvm::available().map_err(KvmUnusable)
}

/// `--backend kvm` where KVM cannot run kicklab's guests.
#[derive(Debug)]
pub struct KvmUnusable(String);

impl std::fmt::Display for KvmUnusable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "kvm is not usable here: {}", self.0)
    }
}

impl From<KvmUnusable> for anyhow::Error {
    fn from(k: KvmUnusable) -> anyhow::Error {
        Usage(format!(
            "invalid value 'kvm' for '--backend <BACKEND>': {k}"
        ))
        .into()
    }
}

/// Parses a latency bound to nanoseconds: a duration > 0 (`100us`).
pub fn latency_ns(s: &str) -> Result<f64, String> {
    match duration_ns(s)? {
        ns if ns > 0.0 => Ok(ns),
        _ => Err("a latency bound must be > 0".into()),
    }
}

/// Parses a duration to nanoseconds (`100us`).
pub fn duration_ns(s: &str) -> Result<f64, String> {
    parse_duration_ns(s).map_err(|e| e.to_string())
}

/// `--flush`: `full`, `timer:<duration>` or `on-interrupt`.
pub fn flush(s: &str) -> Result<kicklab_sim::Flush, String> {
    s.parse()
}

pub fn duration(s: &str) -> Result<std::time::Duration, String> {
    parse_duration_ns(s)
        .map(|ns| std::time::Duration::from_secs_f64(ns / 1e9))
        .map_err(|e| e.to_string())
}

/// `--backend` and the options of the kvm backend.
#[derive(Debug, Clone, Args)]
pub struct BackendArgs {
    /// Where the parties run: futex, eventfd or pipe (two host threads with
    /// that notifier) or kvm (one party inside a tiny KVM guest).
    #[arg(long, value_parser = backend, allow_hyphen_values = true)]
    pub backend: kicklab_testbed::Backend,
    /// kvm: which side the guest is: tx (the guest produces, a host thread
    /// consumes: the paper's set-up) or rx (the host produces).
    #[arg(long, default_value = "tx", allow_hyphen_values = true)]
    pub direction: kicklab_testbed::kvm::Direction,
    /// kvm: host halt polling: a halted guest's vCPU thread polls this long
    /// for a wake-up before it sleeps (0: sleep at once).
    #[arg(long, default_value = "0", value_parser = duration, allow_hyphen_values = true)]
    pub halt_poll: std::time::Duration,
    /// kvm: how the guest runs: user (a native 64-bit user-mode loop; the
    /// host wakes it through a doorbell eventfd) or emulated (real mode,
    /// woken by irqfd interrupts, halting inside KVM; every guest
    /// instruction is emulated on PVM, about 1 us each).
    #[arg(long, default_value = "user", allow_hyphen_values = true)]
    pub guest: kicklab_testbed::kvm::guest::GuestMode,
}

impl BackendArgs {
    /// The backend and its options as given.
    pub fn input(&self) -> kicklab_lab::backend_input::BackendInput {
        kicklab_lab::backend_input::BackendInput {
            backend: self.backend,
            direction: self.direction,
            halt_poll: self.halt_poll,
            guest: self.guest,
        }
    }
}

/// `--backend` and the kvm options of `kicklab pingpong`, where the guest
/// is always the responder (so there is no `--direction`).
#[derive(Debug, Clone, Args)]
pub struct PingPongBackendArgs {
    /// Where the responder runs: futex, eventfd or pipe (a host thread with
    /// that notifier) or kvm (a tiny KVM guest).
    #[arg(long, value_parser = backend, allow_hyphen_values = true)]
    pub backend: kicklab_testbed::Backend,
    /// kvm: host halt polling: a halted guest's vCPU thread polls this long
    /// for a wake-up before it sleeps (0: sleep at once).
    #[arg(long, default_value = "0", value_parser = duration, allow_hyphen_values = true)]
    pub halt_poll: std::time::Duration,
    /// kvm: how the guest runs: user (a native 64-bit user-mode loop) or
    /// emulated (real mode, woken by irqfd interrupts, halting inside KVM).
    #[arg(long, default_value = "user", allow_hyphen_values = true)]
    pub guest: kicklab_testbed::kvm::guest::GuestMode,
}

impl PingPongBackendArgs {
    /// The backend and its options as given (the guest responds: tx).
    pub fn input(&self) -> kicklab_lab::backend_input::BackendInput {
        kicklab_lab::backend_input::BackendInput {
            backend: self.backend,
            direction: kicklab_testbed::kvm::Direction::Tx,
            halt_poll: self.halt_poll,
            guest: self.guest,
        }
    }
}

/// Parses `--vary`: `NAME=FROM..TO:POINTS`. A count (L, k) takes at most
/// one point per whole number in the range: more would repeat rows.
pub fn vary(s: &str) -> Result<kicklab_sim::Vary, String> {
    let v = kicklab_sim::Vary::parse(s).map_err(|e| e.0)?;
    if let Some(values) = v.distinct_values().filter(|&n| f64::from(v.points) > n) {
        return Err(format!(
            "{} takes whole numbers: {} points over {}..{} would repeat values; use at most {values}",
            v.param.name(),
            v.points,
            v.from,
            v.to
        ));
    }
    Ok(v)
}

/// Parses a strategy (`WaitMode::parse`: notify, poll, spin:<B>, sleep:<Y>,
/// halt-poll, haltpoll, hybrid, defer, coalesce:<n>,<t>, adaptive).
pub fn mode(s: &str) -> Result<WaitMode, String> {
    WaitMode::parse(s)
}

impl ParamArgs {
    /// The pair as given: the values and the profile named.
    pub fn input(&self) -> kicklab_lab::pair_input::PairInput {
        kicklab_lab::pair_input::PairInput {
            given: kicklab_model::GivenParams {
                len: self.len,
                k_p: self.kp,
                k_c: self.kc,
                w_p: self.wp,
                w_c: self.wc,
                costs: kicklab_model::CostOverrides {
                    n_p: self.np,
                    n_c: self.nc,
                    s_p: self.sp,
                    s_c: self.sc,
                    v_p: self.vp,
                    v_c: self.vc,
                },
            },
            profile: self.profile.clone(),
        }
    }
}
