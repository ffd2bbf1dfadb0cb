//! Advice held to real runs ([`check`]): each setting advise gives (its
//! pick, and each mechanism's best) run for real with kicklab's own
//! implementation of that mechanism's rule, on a real backend, beside the
//! simulator's T and E for it. What advise says is in `advise`; how a run
//! is made is in `real`.

use kicklab_model::{Direction, Params, WaitMode, Window};
use kicklab_testbed::kvm::guest::GuestMode;
use kicklab_testbed::kvm::KvmOptions;
use kicklab_testbed::Backend;
use serde::Serialize;

use crate::advise::{Advice, Candidate};
use crate::real::RunSpec;
use crate::{LabError, Progress};

/// One setting as advise predicted it and as it ran.
#[derive(Debug, Clone, Serialize)]
pub struct SettingCheck {
    /// Where the setting comes from: `pick`, or the mechanism's name.
    pub from: String,
    /// The strategy (`--strategy` form).
    pub strategy: String,
    /// The simulator's T [ns].
    pub predicted_t_ns: f64,
    /// The simulator's E [ns].
    pub predicted_e_ns: f64,
    /// The real run's T [ns] (null where it could not run).
    pub measured_t_ns: Option<f64>,
    /// The real run's E: both parties' CPU per message [ns].
    pub measured_e_ns: Option<f64>,
    /// (predicted - measured) / measured, T.
    pub t_error: Option<f64>,
    /// The same for E.
    pub e_error: Option<f64>,
    /// Why the backend cannot run it (a guest's side that cannot hold its
    /// kicks, say); null where it ran.
    pub not_run: Option<String>,
    /// Whose implementation of the rule ran: `kicklab` (its own, on both
    /// sides), or `kvm` (KVM's own halt polling on the emulated guest's
    /// halts, kicklab's on the host thread's waits).
    pub ran_by: &'static str,
    /// How it ran where KVM ran it (its halt polling's maximum, and
    /// whether the module's growth and shrinking are the setting's); null
    /// where kicklab ran it.
    pub note: Option<String>,
}

/// Runs advice's settings for real.
#[derive(Debug, Clone)]
pub struct CheckSpec {
    /// The pair as the run takes it: L, k and W (the machine supplies N
    /// and S; `adaptive` reads the profile's means as estimates).
    pub params: Params,
    /// Where it runs.
    pub backend: Backend,
    /// The latency bound of `adaptive` [ns].
    pub latency_ns: f64,
    /// Messages per run.
    pub messages: u64,
    /// Seed of random work.
    pub seed: u64,
}

/// Runs the pick and each mechanism's best setting (each strategy once)
/// and sets them beside their predictions.
///
/// # Errors
///
/// A run that fails (a setting the backend cannot run is reported, not
/// failed).
pub fn check(
    advice: &Advice,
    spec: &CheckSpec,
    progress: &dyn Progress,
) -> Result<Vec<SettingCheck>, LabError> {
    let mut settings: Vec<(String, &Candidate)> = vec![("pick".into(), &advice.predicted)];
    for k in &advice.knobs {
        if let Some((from, _)) = settings
            .iter_mut()
            .find(|(_, c)| c.strategy == k.best.predicted.strategy)
        {
            from.push_str(", ");
            from.push_str(k.mechanism);
        } else {
            settings.push((k.mechanism.to_string(), &k.best.predicted));
        }
    }
    progress.start("real runs of the advised settings", settings.len() as u64);
    let mut out = Vec::new();
    for (from, c) in settings {
        let mut run = RunSpec {
            latency_bound_ns: Some(spec.latency_ns),
            ..RunSpec::new(
                spec.params,
                spec.backend,
                with_latency(c.mode, spec.latency_ns),
                spec.messages,
                spec.seed,
            )
        };
        // KVM's own halt polling runs the kvm-host mechanism's setting
        // (the other families' halt-poll rules are a host thread's).
        let kvm_host = from
            .split(", ")
            .any(|f| f == crate::knobs::Mechanism::KvmHost.name());
        let (ran_by, note) = match kvm_host.then(|| kvm_own_halt_polling(&mut run)).flatten() {
            Some(note) => ("kvm", Some(note)),
            None => ("kicklab", None),
        };
        let mut check = SettingCheck {
            from,
            strategy: c.strategy.clone(),
            predicted_t_ns: c.t_ns,
            predicted_e_ns: c.e_ns,
            measured_t_ns: None,
            measured_e_ns: None,
            t_error: None,
            e_error: None,
            not_run: None,
            ran_by,
            note,
        };
        match crate::real::check(&run) {
            Err(why) => check.not_run = Some(why.to_string()),
            Ok(()) => {
                let rates = crate::real::run(&run)?.rates;
                check.measured_t_ns = Some(rates.t_ns);
                check.measured_e_ns = Some(rates.e_ns);
                check.t_error = Some(c.t_ns / rates.t_ns - 1.0);
                check.e_error = Some(c.e_ns / rates.e_ns - 1.0);
            }
        }
        progress.step();
        out.push(check);
    }
    progress.finish();
    Ok(out)
}

/// Where the guest is emulated and `run` is host halt polling, sets it up
/// as KVM's own: the guest's side halts (`notify`) and KVM polls for up
/// to the window's maximum (`KVM_CAP_HALT_POLL`, this VM only), with the
/// growth and shrinking of the machine's kvm module; the host thread's
/// side keeps kicklab's rule. Returns the note on what differs from the
/// setting, or `None` where `run` is left as it is.
fn kvm_own_halt_polling(run: &mut RunSpec) -> Option<String> {
    let (Backend::Kvm(opts), WaitMode::HostHaltPoll(w)) = (run.backend, run.mode_p) else {
        return None;
    };
    if opts.guest != GuestMode::Emulated || run.mode_c != run.mode_p {
        return None;
    }
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let max_ns = w.max_ns.round().clamp(0.0, f64::from(u32::MAX)) as u32;
    run.backend = Backend::Kvm(KvmOptions {
        halt_poll_ns: max_ns,
        ..opts
    });
    let guest_side = match opts.direction {
        Direction::Tx => &mut run.mode_p,
        Direction::Rx => &mut run.mode_c,
    };
    *guest_side = WaitMode::Notify;
    let how = format!(
        "ran as KVM's own halt polling on the guest's halts (KVM_CAP_HALT_POLL {}), kicklab's rule on the host thread's waits",
        kicklab_model::fmt_ns(f64::from(max_ns))
    );
    let note = match kvm_module_window() {
        Some(m) if (m.grow, m.start_ns, m.shrink) == (w.grow, w.start_ns, w.shrink) => {
            format!("{how}; the kvm module grows and shrinks it as the setting does")
        }
        Some(m) => format!(
            "{how}; the kvm module grew and shrank it by its own parameters (grow {}, grow_start {}, shrink {}), not the setting's",
            m.grow,
            kicklab_model::fmt_ns(m.start_ns),
            m.shrink
        ),
        None => format!(
            "{how}; the kvm module's parameters could not be read ({MODULE_PARAMETERS}): it grew and shrank the window by them"
        ),
    };
    Some(note)
}

/// Where the kvm module's parameters are read.
const MODULE_PARAMETERS: &str = "/sys/module/kvm/parameters";

/// This machine's KVM halt-polling growth and shrinking (its module's
/// parameters; the maximum is the window's own here), `None` where they
/// cannot be read.
fn kvm_module_window() -> Option<Window> {
    let read = |name: &str| -> Option<f64> {
        std::fs::read_to_string(format!("{MODULE_PARAMETERS}/{name}"))
            .ok()?
            .trim()
            .parse()
            .ok()
    };
    Some(Window {
        max_ns: read("halt_poll_ns")?,
        grow: read("halt_poll_ns_grow")?,
        start_ns: read("halt_poll_ns_grow_start")?,
        shrink: read("halt_poll_ns_shrink")?,
    })
}

fn with_latency(mode: WaitMode, latency_ns: f64) -> WaitMode {
    mode.with_latency(Some(latency_ns))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(backend: Backend) -> RunSpec {
        RunSpec::new(
            Params::default(),
            backend,
            WaitMode::HostHaltPoll(Window::HALT_POLL),
            100,
            1,
        )
    }

    #[test]
    fn host_halt_polling_on_the_emulated_guest_is_kvms_own() {
        for (direction, guest_side) in [(Direction::Tx, 0), (Direction::Rx, 1)] {
            let kvm = |guest| {
                Backend::Kvm(KvmOptions {
                    direction,
                    guest,
                    ..KvmOptions::default()
                })
            };
            let mut run = spec(kvm(GuestMode::Emulated));
            let note = kvm_own_halt_polling(&mut run).expect("KVM runs it");
            let Backend::Kvm(o) = run.backend else {
                panic!("still kvm")
            };
            assert_eq!(o.halt_poll_ns, 200_000);
            let modes = [run.mode_p, run.mode_c];
            assert_eq!(modes[guest_side], WaitMode::Notify, "the guest halts");
            assert_eq!(
                modes[1 - guest_side],
                WaitMode::HostHaltPoll(Window::HALT_POLL),
                "the host thread keeps kicklab's rule"
            );
            assert!(note.contains("KVM_CAP_HALT_POLL 200us"), "{note}");
            // The user-mode guest halts through kicklab's VMM: kicklab's
            // rule, untouched.
            let mut user = spec(kvm(GuestMode::User));
            assert!(kvm_own_halt_polling(&mut user).is_none());
            assert_eq!(user.mode_p, WaitMode::HostHaltPoll(Window::HALT_POLL));
        }
        let mut threads = spec(Backend::Threads(kicklab_ring::NotifierKind::Futex));
        assert!(kvm_own_halt_polling(&mut threads).is_none());
        // Another strategy on the emulated guest: left as it is.
        let mut notify = spec(Backend::Kvm(KvmOptions {
            guest: GuestMode::Emulated,
            ..KvmOptions::default()
        }));
        notify.mode_p = WaitMode::Notify;
        notify.mode_c = WaitMode::Notify;
        assert!(kvm_own_halt_polling(&mut notify).is_none());
    }
}
