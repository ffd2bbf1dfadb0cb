//! The page's reading order and its glossary: the paper (its regimes,
//! figures and map), this machine (calibration, validation and the
//! forecast), configuring notification (each mechanism's best setting,
//! the controller), the other papers' systems, then the closed forms and
//! kicklab's own targets. What does not live here: the sections
//! themselves (their modules build them) and the findings box above them
//! (`findings`).

use kicklab_report::{html_escape, Layout, Section};

/// Section ids in reading order, grouped by part. A section not named
/// here goes before the closed forms, in the order it was built.
const ORDER: [&[&str]; 5] = [
    &[
        "glossary",
        "regimes",
        "explorer",
        "fig2",
        "fig2-short",
        "fig3",
        "visibility",
        "random",
        "map",
    ],
    &[
        "calibration",
        "validate-futex",
        "kvm-calibration",
        "validate-kvm-tx",
        "validate-kvm-rx",
        "pingpong",
    ],
    &["knobs", "control"],
    &[
        "qos",
        "qos-real",
        "qos-real-kvm",
        "scale-sim",
        "scale",
        "scale-kvm",
        "flags",
        "flags-kvm",
    ],
    &["closed-forms", "targets"],
];

/// Where `id` goes: its part and place in it; an id [`ORDER`] does not
/// name goes at the end of the part before the last (before the closed
/// forms).
fn rank(id: &str) -> (usize, usize) {
    ORDER
        .iter()
        .enumerate()
        .find_map(|(part, ids)| ids.iter().position(|x| *x == id).map(|i| (part, i)))
        .unwrap_or((ORDER.len() - 2, usize::MAX))
}

/// The part of [`ORDER`] a reader may skip (the other papers' systems):
/// its sections show their lead paragraph only.
const SKIMMED_PART: usize = 3;

/// Sections that show their lead paragraph only, wherever they are: the
/// explorer (a tool to open when wanted) and each mechanism's setting
/// (the findings box says what to run).
const LEAD_ONLY: [&str; 2] = ["explorer", "knobs"];

/// `sections` in reading order ([`ORDER`]); a stable sort, so sections
/// the order does not name keep theirs among themselves. The skimmed part
/// and [`LEAD_ONLY`] show their lead paragraph, the rest one click away.
pub(super) fn in_reading_order(mut sections: Vec<Section>) -> Vec<Section> {
    sections.sort_by_key(|s| rank(&s.id));
    sections
        .into_iter()
        .map(|s| {
            let skimmed = rank(&s.id).0 == SKIMMED_PART || LEAD_ONLY.contains(&s.id.as_str());
            if skimmed {
                s.with_layout(Layout::Lead)
            } else {
                s
            }
        })
        .collect()
}

/// Each symbol and term the page uses, defined once.
const TERMS: [(&str, &str); 22] = [
    ("P, C", "the producer (writes messages into the queue) and the consumer (takes them out)"),
    ("L", "the queue's length in slots"),
    ("W_P, W_C", "the work per message of P and of C: the time each spends on one message"),
    ("N_P, N_C", "a notification (a kick) sent by P (to wake C) or by C (to wake P): its cost to the sender"),
    ("S_P, S_C", "a start-up: the time from the notification until the woken P or C works again"),
    ("V_P, V_C", "a kick's visibility: how far into the sender's N the sleeper sees it (V = N unless measured)"),
    ("k_P, k_C", "how many messages (slots) a sleeping party waits for before it is woken"),
    ("m", "messages per notification round: how many a party handles per wake-up"),
    ("T", "time per message at the steady state: 1 / throughput"),
    ("E", "CPU time per message, P and C together (work, kicks, start-ups, spinning)"),
    ("p99", "the 99th percentile of a message's latency, from publish to claim"),
    ("kick", "a notification: the write (eventfd, futex wake, ioeventfd) that wakes a sleeping peer"),
    ("GP", "good polling: both parties spin, never sleep; T = max(W_P, W_C), the best T any strategy reaches"),
    ("FP", "fast producer: P fills the queue and sleeps; C wakes it; T close to W_C"),
    ("FC", "fast consumer: C drains the queue and sleeps; P wakes it; T close to W_P"),
    ("SS, SPS, SCS", "slow start-up (both, producer's, consumer's): start-ups so long that the queue empties (fills) while a party wakes"),
    ("EWC, EWP", "early-woken consumer (producer): a kick seen before it ends wakes the slower party, which drains (fills) the queue and sleeps again, so every k messages cost a kick"),
    ("operating point", "the regime a pair settles in; a bistable pair has two, depending on where it starts"),
    ("regime boundary", "a W_P or W_C where the regime changes; T and E jump there, so small changes in speed matter"),
    ("knife-edge", "a point whose forecast band spans two regimes: the measurement may land in either"),
    ("settle", "messages after a rate step until a controller's T stays within its target band"),
    ("disturbed", "a run during which other work took the machine's CPUs, so its figure is not this pair's alone"),
];

/// The glossary section: a one-line lead, the terms one click away.
pub(super) fn glossary_section() -> Section {
    let mut h = String::from(
        "<p>Every symbol on this page is defined once here: P and C, their costs (W, N, S, V), the regimes (GP, FP, \
         FC, SS, EWC, ...) and the words the sections use (kick, m, operating point, knife-edge, settle).</p>\n<dl>",
    );
    for (term, meaning) in TERMS {
        h.push_str(&format!(
            "<dt><b>{}</b></dt><dd>{}</dd>",
            html_escape(term),
            html_escape(meaning)
        ));
    }
    h.push_str("</dl>\n");
    Section {
        id: "glossary".into(),
        heading: "Glossary".into(),
        html: h,
        figures: vec![],
        layout: Layout::Summary,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_follow_the_reading_order_and_unnamed_ones_precede_the_closed_forms() {
        let ids = [
            "targets",
            "closed-forms",
            "control",
            "new",
            "validate-futex",
            "fig2",
            "regimes",
        ];
        let sections = ids.iter().map(|id| Section::new(id, id)).collect();
        let got: Vec<String> = in_reading_order(sections)
            .into_iter()
            .map(|s| s.id)
            .collect();
        assert_eq!(
            got,
            [
                "regimes",
                "fig2",
                "validate-futex",
                "control",
                "new",
                "closed-forms",
                "targets"
            ]
        );
    }

    #[test]
    fn the_other_papers_and_the_tools_show_their_lead_only() {
        let ids = ["qos", "flags-kvm", "explorer", "knobs", "fig2", "new"];
        let sections = ids.iter().map(|id| Section::new(id, id)).collect();
        let lead: Vec<String> = in_reading_order(sections)
            .into_iter()
            .filter(|s| s.layout == Layout::Lead)
            .map(|s| s.id)
            .collect();
        assert_eq!(lead, ["explorer", "knobs", "qos", "flags-kvm", "new"]);
    }

    #[test]
    fn every_term_is_defined_once() {
        let mut seen = std::collections::HashSet::new();
        for (term, meaning) in TERMS {
            assert!(seen.insert(term), "{term} twice");
            assert!(!meaning.is_empty());
        }
    }
}
