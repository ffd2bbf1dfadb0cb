//! Command-line arguments shared by the subcommands: the pair's parameters
//! and wait modes.

use clap::Args;
use kicklab_model::Cost;

/// The pair's parameters. Defaults: the paper's Fig. 4 set-up.
#[derive(Debug, Clone, Args)]
pub struct ParamArgs {
    /// Queue length L [slots].
    #[arg(
        long,
        value_parser = kicklab_model::typed::whole::<u32>,
        default_value_t = 256,
        allow_hyphen_values = true,
        help_heading = "Parameters"
    )]
    pub len: u32,
    /// k_P: P wakes a sleeping C once this many messages are queued.
    #[arg(
        long,
        value_parser = kicklab_model::typed::whole::<u32>,
        default_value_t = 1,
        allow_hyphen_values = true,
        help_heading = "Parameters"
    )]
    pub kp: u32,
    /// k_C: C wakes a sleeping P once this many slots are free.
    #[arg(
        long,
        value_parser = kicklab_model::typed::whole::<u32>,
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
    #[arg(long, default_value = "1us", value_parser = kicklab_model::typed::cost, allow_hyphen_values = true, help_heading = "Parameters")]
    pub wp: Cost,
    /// W_C: consumer work per message (duration or distribution).
    #[arg(long, default_value = "1.1us", value_parser = kicklab_model::typed::cost, allow_hyphen_values = true, help_heading = "Parameters")]
    pub wc: Cost,
    /// N_P: P's cost of notifying C (a kick). [default: 2.4us, or the --profile's]
    #[arg(long, value_parser = kicklab_model::typed::cost, allow_hyphen_values = true, help_heading = "Parameters")]
    pub np: Option<Cost>,
    /// N_C: C's cost of notifying P (an interrupt). [default: 0.2us, or the --profile's]
    #[arg(long, value_parser = kicklab_model::typed::cost, allow_hyphen_values = true, help_heading = "Parameters")]
    pub nc: Option<Cost>,
    /// S_P: P's cost of starting after a notification (wake-up). [default: 3.9us, or the --profile's]
    #[arg(long, value_parser = kicklab_model::typed::cost, allow_hyphen_values = true, help_heading = "Parameters")]
    pub sp: Option<Cost>,
    /// S_C: C's cost of starting after a notification (wake-up). [default: 0.2us, or the --profile's]
    #[arg(long, value_parser = kicklab_model::typed::cost, allow_hyphen_values = true, help_heading = "Parameters")]
    pub sc: Option<Cost>,
    /// V_P: when C sees P's kick, from the kick's start (at most N_P). A
    /// KVM kick is seen by the host about half-way through it.
    /// [default: N_P, or the --profile's]
    #[arg(long, value_parser = kicklab_model::typed::cost, allow_hyphen_values = true, help_heading = "Parameters")]
    pub vp: Option<Cost>,
    /// V_C: when P sees C's notification, from its start (at most N_C).
    /// [default: N_C, or the --profile's]
    #[arg(long, value_parser = kicklab_model::typed::cost, allow_hyphen_values = true, help_heading = "Parameters")]
    pub vc: Option<Cost>,
    /// A calibration profile (`kicklab calibrate --save FILE`): its N_P,
    /// N_C, S_P, S_C (and V_P, V_C) replace the defaults, and `model` and
    /// `sim` add its ring cost per message to W_P and W_C; flags
    /// given explicitly still win (a profile's V above a given N is cut
    /// to it).
    #[arg(long, allow_hyphen_values = true, help_heading = "Parameters")]
    pub profile: Option<std::path::PathBuf>,
}

/// Parses `--backend`: `futex`, `eventfd`, `pipe`, or `kvm` (refused, with
/// the reason, where this machine has no usable KVM).
pub fn backend(s: &str) -> Result<kicklab_testbed::Backend, String> {
    let be: kicklab_testbed::Backend = s.parse()?;
    if let kicklab_testbed::Backend::Kvm(_) = be {
        kicklab_lab::backend_input::kvm_unusable().map_or(Ok(()), Err)?;
    }
    Ok(be)
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
    /// [default: tx]
    #[arg(long, allow_hyphen_values = true)]
    pub direction: Option<kicklab_testbed::kvm::Direction>,
    /// kvm: host halt polling: a halted guest's vCPU thread polls this long
    /// for a wake-up before it sleeps (0: sleep at once). [default: 0]
    #[arg(long, value_parser = kicklab_model::typed::duration, allow_hyphen_values = true)]
    pub halt_poll: Option<std::time::Duration>,
    /// kvm: how the guest runs: user (a native 64-bit user-mode loop; the
    /// host wakes it through a doorbell eventfd) or emulated (real mode,
    /// woken by irqfd interrupts, halting inside KVM; every guest
    /// instruction is emulated on PVM, about 1 us each). [default: user]
    #[arg(long, allow_hyphen_values = true)]
    pub guest: Option<kicklab_testbed::kvm::guest::GuestMode>,
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
    /// for a wake-up before it sleeps (0: sleep at once). [default: 0]
    #[arg(long, value_parser = kicklab_model::typed::duration, allow_hyphen_values = true)]
    pub halt_poll: Option<std::time::Duration>,
    /// kvm: how the guest runs: user (a native 64-bit user-mode loop) or
    /// emulated (real mode, woken by irqfd interrupts, halting inside KVM).
    /// [default: user]
    #[arg(long, allow_hyphen_values = true)]
    pub guest: Option<kicklab_testbed::kvm::guest::GuestMode>,
}

impl PingPongBackendArgs {
    /// The backend and its options as given (the guest responds: tx).
    pub fn input(&self) -> kicklab_lab::backend_input::BackendInput {
        kicklab_lab::backend_input::BackendInput {
            backend: self.backend,
            direction: None,
            halt_poll: self.halt_poll,
            guest: self.guest,
        }
    }
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
