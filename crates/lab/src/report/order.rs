//! The page's reading order: the paper (its regimes,
//! figures and map), this machine (calibration, validation and the
//! forecast), configuring notification (each mechanism's best setting,
//! the controller), the other papers' systems, then the closed forms and
//! kicklab's own targets. What does not live here: the sections
//! themselves (their modules build them), the glossary and its links
//! (`glossary`) and the findings box above them (`findings`).

use kicklab_report::{Layout, Section};

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
        "measured-rounds",
        "measured-rounds-kvm-tx",
    ],
    &["knobs", "control"],
    &[
        "pingpong",
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
}
