//! [`Rates`]: what a pair does per message, the one shape shared by the
//! model's prediction (over one round), the simulator's result and a real
//! run's measurement (over their measurement windows). What does not live
//! here: how each of them obtains it.

use serde::{Deserialize, Serialize};

/// Message latency percentiles [ns]: from a message's publish to the end
/// of its consumption.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Latency {
    /// Median.
    pub p50: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Largest.
    pub max: f64,
    /// Mean.
    pub mean: f64,
}

/// Time and CPU per message, and the counts they were measured over.
///
/// The JSON field names (`T_ns`, `E_ns`, ...) are the command-line
/// contract's.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Rates {
    /// Time per message [ns] (1 / throughput).
    #[serde(rename = "T_ns")]
    pub t_ns: f64,
    /// Busy (CPU) time of P and C per message [ns].
    #[serde(rename = "E_ns")]
    pub e_ns: f64,
    /// P's share of E [ns].
    #[serde(rename = "E_p_ns")]
    pub e_p_ns: f64,
    /// C's share of E [ns].
    #[serde(rename = "E_c_ns")]
    pub e_c_ns: f64,
    /// Messages these counts are over (a prediction: one round).
    pub messages: u64,
    /// Notifications P sent to C.
    pub notifications_p: u64,
    /// Notifications C sent to P.
    pub notifications_c: u64,
    /// Times P went to sleep.
    pub sleeps_p: u64,
    /// Times C went to sleep.
    pub sleeps_c: u64,
    /// Message latency, where it was measured.
    pub latency_ns: Option<Latency>,
}

impl Rates {
    /// Messages per second.
    pub fn per_second(&self) -> f64 {
        1e9 / self.t_ns
    }

    /// Notifications per message, P->C and C->P.
    #[allow(clippy::cast_precision_loss)]
    pub fn notifications_per_message(&self) -> [f64; 2] {
        let m = self.messages.max(1) as f64;
        [
            self.notifications_p as f64 / m,
            self.notifications_c as f64 / m,
        ]
    }

    /// Who slept in steady state: `"none"`, `"P"`, `"C"` or `"both"`. A side
    /// counts as sleeping if it did so at least once per 1000 messages (a
    /// stray sleep in a long run is not a regime).
    #[allow(clippy::cast_precision_loss)]
    pub fn sleeper(&self) -> &'static str {
        let m = self.messages.max(1) as f64;
        let rate = |n: u64| n as f64 / m;
        match (rate(self.sleeps_p) > 1e-3, rate(self.sleeps_c) > 1e-3) {
            (false, false) => "none",
            (true, false) => "P",
            (false, true) => "C",
            (true, true) => "both",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_names_are_the_contract() {
        let r = Rates {
            t_ns: 2.0,
            messages: 10,
            sleeps_c: 1,
            ..Rates::default()
        };
        let v = serde_json::to_value(r).unwrap();
        for k in [
            "T_ns",
            "E_ns",
            "E_p_ns",
            "E_c_ns",
            "messages",
            "notifications_p",
            "notifications_c",
            "sleeps_p",
            "sleeps_c",
            "latency_ns",
        ] {
            assert!(v.get(k).is_some(), "{k}");
        }
        assert_eq!(r.sleeper(), "C");
        assert_eq!(r.per_second(), 5e8);
    }
}
