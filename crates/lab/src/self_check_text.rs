//! `adaptive`'s self-check account ([`CheckStats`]) as `run`, `sim` and
//! `control` print it: one line for both parties. What does not live here: the
//! check and its account (`kicklab_model::control`).

use kicklab_model::control::{CheckStats, FALLBACK};

/// The `self-check` line of the parties that ran the check (P's, C's),
/// `None` where neither did.
pub fn line(p: Option<CheckStats>, c: Option<CheckStats>) -> Option<String> {
    parties(p, c).map(|s| format!("self-check     {s}"))
}

/// What the parties that ran the check did, P's then C's, `None` where
/// neither did.
pub fn parties(p: Option<CheckStats>, c: Option<CheckStats>) -> Option<String> {
    let parts: Vec<String> = [("P", p), ("C", c)]
        .into_iter()
        .filter_map(|(party, c)| c.map(|c| format!("{party} {}", party_text(&c))))
        .collect();
    (!parts.is_empty()).then(|| parts.join("; "))
}

/// One party's account: the epochs the fallback ran, and how the trials
/// ended.
fn party_text(c: &CheckStats) -> String {
    if c.epochs_planner + c.epochs_fallback == 0 {
        return "never consulted its check (it never waited)".to_string();
    }
    let trials = c.kept + c.against + c.undecided + c.dropped;
    format!(
        "ran {FALLBACK} in {} of {} epochs; {trials} trials: {} kept the verdict, {} went against it ({} switched), {} undecided, {} dropped; decided on the pace {}, the latency bound {}, the CPU {}",
        c.epochs_fallback,
        c.epochs_planner + c.epochs_fallback,
        c.kept,
        c.against,
        c.switched,
        c.undecided,
        c.dropped,
        c.on_pace,
        c.on_latency,
        c.on_cpu
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_parties_that_checked_are_named() {
        assert_eq!(line(None, None), None);
        let c = CheckStats {
            epochs_planner: 90,
            epochs_fallback: 19,
            kept: 5,
            against: 2,
            switched: 1,
            undecided: 1,
            on_pace: 4,
            on_latency: 2,
            on_cpu: 1,
            ..CheckStats::default()
        };
        assert_eq!(
            line(None, Some(c)).unwrap(),
            "self-check     C ran defer in 19 of 109 epochs; 8 trials: 5 kept the verdict, 2 went against it (1 switched), 1 undecided, 0 dropped; decided on the pace 4, the latency bound 2, the CPU 1"
        );
        assert!(line(Some(c), Some(c)).unwrap().contains("; C ran defer"));
        assert_eq!(
            parties(Some(CheckStats::default()), None).unwrap(),
            "P never consulted its check (it never waited)"
        );
    }
}
