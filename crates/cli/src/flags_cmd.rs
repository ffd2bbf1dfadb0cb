//! `kicklab flags`: one consumer watching many sources, through a system
//! call over one eventfd each or a shared-memory bit vector (VMware), with
//! threads or with a KVM guest signalling.

use clap::Args;
use kicklab_lab::flags::FlagsRequest;
use kicklab_testbed::flags::{FlagPath, FlagsBackend};

/// Arguments of `kicklab flags`.
#[derive(Debug, Args)]
pub struct FlagsArgs {
    /// Sources watched, or a comma-separated list.
    #[arg(
        long,
        default_value = "1,2,4,8,16,32,64",
        value_delimiter = ',',
        allow_hyphen_values = true
    )]
    sources: Vec<usize>,
    /// poll (the select family, one eventfd per source), epoll, or bitmap
    /// (shared bit vector, one futex); a comma-separated list runs each.
    #[arg(long, default_value = "poll,epoll,bitmap", value_delimiter = ',')]
    path: Vec<FlagPath>,
    /// Signals per run.
    #[arg(long, value_parser = kicklab_model::typed::whole::<u64>, default_value_t = 20_000, allow_hyphen_values = true)]
    signals: u64,
    /// Time between two signals (the consumer sleeps in between) [default:
    /// 20us with threads, 100us with kvm, whose signals through a port
    /// exit].
    #[arg(long, value_parser = kicklab_model::typed::duration, allow_hyphen_values = true)]
    gap: Option<std::time::Duration>,
    /// threads (a producer and a consumer thread) or kvm (a guest
    /// signals: its bit vector and one kick ioeventfd, or a port and an
    /// ioeventfd per source; a host thread watches).
    #[arg(long, default_value = "threads")]
    backend: FlagsBackend,
    /// Runs per point; the one of median wake-up cost is reported (the
    /// machine may be shared).
    #[arg(long, value_parser = kicklab_model::typed::whole::<usize>, default_value_t = 3, allow_hyphen_values = true)]
    repeat: usize,
    /// Print JSON: {"runs": [{"backend", "sources", "path", "notify_ns",
    /// "wake_ns", ..., "pair_model": {"wp_ns", "T_ns", "E_ns"}}]}: each
    /// run's costs fed to the model as N_P and S_C of Fig. 4's pair with
    /// W_P = 2 us.
    #[arg(long)]
    json: bool,
}

pub fn run(a: &FlagsArgs) -> anyhow::Result<()> {
    let req = FlagsRequest {
        backend: a.backend,
        sources: a.sources.clone(),
        paths: a.path.clone(),
        signals: a.signals,
        gap: a
            .gap
            .unwrap_or_else(|| kicklab_lab::flags::default_gap(a.backend)),
        repeat: a.repeat,
    };
    req.check()?;
    if a.backend == FlagsBackend::Kvm {
        kicklab_lab::backend_input::kvm_usable()?;
    }
    if !a.json {
        outln!("{}", kicklab_lab::flags::text_header());
    }
    let runs = req.run(&|r| {
        if !a.json {
            outln!("{}", kicklab_lab::flags::text_line(r));
        }
    })?;
    if a.json {
        return kicklab_term::show::print_json(&kicklab_lab::flags::runs_json(&runs)?);
    }
    Ok(())
}
