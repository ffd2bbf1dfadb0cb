//! Which of `qos`'s flags a request leaves unused ([`QosRequest::unused`]).

use kicklab_model::qos::Arrivals;
use kicklab_model::Flag;

use super::{QosBackend, QosRequest};
use crate::unused::{say, Unused};

impl QosRequest {
    /// The flags given (`given(flag)`) that this request would not use,
    /// each with the reason: the systems' flags beside `--figures` (which
    /// runs the paper's own), the kick and wake-up on a real backend (its
    /// stages pay their own), the scale and VM core without one, the
    /// window and the seed beside the model, a seed with even arrivals,
    /// policing without a limit, an output folder without `--figures`.
    pub fn unused(&self, given: &dyn Fn(Flag) -> bool) -> Vec<Unused> {
        let real = self.backend.is_real();
        let model = self.backend == QosBackend::Model && !self.figures;
        let mut notes = Vec::new();
        if self.figures {
            notes.extend(say(
                &[
                    Flag::Vms,
                    Flag::Offered,
                    Flag::Rate,
                    Flag::Path,
                    Flag::Limit,
                    Flag::Police,
                    Flag::Shared,
                    Flag::VmService,
                    Flag::Buffer,
                    Flag::Arrivals,
                ],
                given,
                &format!(
                    "{} runs the paper's own systems (its Figs. 2.10-2.12)",
                    Flag::Figures
                ),
            ));
        }
        if real {
            notes.extend(say(
                &[Flag::Kick, Flag::Wake],
                given,
                "the real stages pay their own kicks and wake-ups",
            ));
        } else {
            notes.extend(say(
                &[Flag::Scale, Flag::VmCore],
                given,
                &format!("only a real run ({} futex or kvm) has one", Flag::Backend),
            ));
            if self.figures {
                notes.extend(say(
                    &[Flag::Kick, Flag::Wake],
                    given,
                    &format!("{} runs the paper's own systems", Flag::Figures),
                ));
            }
        }
        if model {
            notes.extend(say(&[Flag::Seconds], given, "the model measures no window"));
            notes.extend(say(&[Flag::Seed], given, "the model draws nothing"));
            notes.extend(say(
                &[Flag::Arrivals, Flag::Buffer],
                given,
                "the model is of rates alone (no arrival process, no queues)",
            ));
        } else if self.figures {
            notes.extend(say(
                &[Flag::Seed],
                given,
                "the figures' arrivals are evenly spaced",
            ));
        } else if self.arrivals != Arrivals::Poisson {
            notes.extend(say(
                &[Flag::Seed],
                given,
                &format!(
                    "arrivals are evenly spaced ({} poisson draws them)",
                    Flag::Arrivals
                ),
            ));
        }
        if !self.figures {
            if self.limits.is_empty() {
                notes.extend(say(
                    &[Flag::Police],
                    given,
                    &format!("no VM has a {} to police", Flag::Limit),
                ));
            }
            notes.extend(say(
                &[Flag::Out],
                given,
                &format!("only {} writes files", Flag::Figures),
            ));
        }
        notes
    }
}
