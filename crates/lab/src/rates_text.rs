//! Rates and predictions as the commands show them: time per message as
//! messages per second, a run's four rate lines (T, E, notifications,
//! sleeps), a model prediction as its JSON object. What does not live here:
//! the rates themselves (`kicklab_model::Rates`), the runs.

use kicklab_model::{fmt_ns, Prediction};
use serde_json::json;

/// Messages per second at `t_ns` a message, as the text output shows it
/// (no number where T is 0: zero work and zero costs, or a window that
/// freed a burst at one instant).
pub fn rate_text(t_ns: f64) -> String {
    let rate = 1e9 / t_ns;
    if t_ns > 0.0 && rate >= 10.0 {
        format!("{rate:.0} messages/s")
    } else if t_ns > 0.0 && rate >= 0.001 {
        // Three significant digits: 1.25, 0.0417.
        #[allow(clippy::cast_possible_truncation)]
        let digits = usize::try_from((2 - rate.log10().floor() as i64).max(0)).unwrap_or(0);
        format!("{rate:.digits$} messages/s")
    } else if t_ns > 0.0 {
        format!("{rate:.3e} messages/s")
    } else {
        "no rate: T is 0".into()
    }
}

/// What `sim` and `run` both print: the T, E, notifications and sleeps
/// lines (times in ns, counts over `messages`).
#[derive(Debug, Clone, Copy)]
pub struct RateLines {
    /// Time per message [ns].
    pub t_ns: f64,
    /// CPU per message, P and C [ns].
    pub e_ns: [f64; 2],
    /// Notifications sent by P and C.
    pub notifications: [u64; 2],
    /// Sleeps of P and C.
    pub sleeps: [u64; 2],
    /// Messages these count over.
    pub messages: u64,
}

impl RateLines {
    /// The lines of a run's or a simulation's `rates`.
    #[must_use]
    pub fn of(r: &kicklab_model::Rates) -> RateLines {
        RateLines {
            t_ns: r.t_ns,
            e_ns: [r.e_p_ns, r.e_c_ns],
            notifications: [r.notifications_p, r.notifications_c],
            sleeps: [r.sleeps_p, r.sleeps_c],
            messages: r.messages,
        }
    }

    /// The four lines.
    #[allow(clippy::cast_precision_loss)]
    pub fn lines(&self) -> Vec<String> {
        let per = |n: u64| n as f64 / self.messages.max(1) as f64;
        let [np, nc] = self.notifications;
        vec![
            format!(
                "T              {}/message  ({})",
                fmt_ns(self.t_ns),
                rate_text(self.t_ns)
            ),
            format!(
                "E              {} of CPU/message  (P {}, C {})",
                fmt_ns(self.e_ns[0] + self.e_ns[1]),
                fmt_ns(self.e_ns[0]),
                fmt_ns(self.e_ns[1])
            ),
            format!(
                "notifications  P->C {np} ({:.4}/message), C->P {nc} ({:.4}/message)",
                per(np),
                per(nc)
            ),
            format!("sleeps         P {}, C {}", self.sleeps[0], self.sleeps[1]),
        ]
    }
}

/// The prediction as the JSON object of the contract: the serialized
/// [`Prediction`] (regime, T, E, per-party E, the counts over one round, m,
/// the round, the predicates) plus the throughput.
pub fn prediction_json(p: &Prediction) -> serde_json::Value {
    let mut v = serde_json::to_value(p).unwrap_or_default();
    v["throughput_per_s"] = json!(p.rates.per_second());
    v
}
