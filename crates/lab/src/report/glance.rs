//! kicklab's own targets, per part of the report, judged: the collapsed
//! section at the page's end. What does not live here: the targets
//! themselves (each part's module judges its own).

use kicklab_report::html_escape;

/// A part's targets, judged.
pub(super) enum Verdict {
    /// Every target holds.
    Met,
    /// Some missed, in words.
    Missed(String),
}

impl Verdict {
    /// From a part's list of missed targets.
    pub(super) fn of(failures: &[String]) -> Verdict {
        match failures.len() {
            0 => Verdict::Met,
            1 => Verdict::Missed("1 target missed".into()),
            n => Verdict::Missed(format!("{n} targets missed")),
        }
    }

    /// `held` of `of` items meet every target.
    pub(super) fn count(held: usize, of: usize, items: &str) -> Verdict {
        if held == of {
            Verdict::Met
        } else {
            Verdict::Missed(format!("{held} of {of} {items} meet every target"))
        }
    }

    /// Idle-with-timeout over spinning at 8 guests against
    /// [`crate::scale::TARGET_AT_8`].
    pub(super) fn scale(runs: &[kicklab_testbed::scale::ScaleResult]) -> Verdict {
        match crate::scale::ratio_at(runs, 8) {
            Some(x) if x >= crate::scale::TARGET_AT_8 => Verdict::Met,
            Some(x) => Verdict::Missed(format!("{x:.2}x against {}x", crate::scale::TARGET_AT_8)),
            None => Verdict::Missed("8 guests not run".into()),
        }
    }

    /// The bit vector's wake-up cost, largest over smallest across the
    /// sources, against [`crate::flags::BITMAP_SPREAD_TARGET`].
    pub(super) fn spread(runs: &[kicklab_testbed::flags::FlagsResult]) -> Verdict {
        match crate::flags::bitmap_within_target(runs) {
            Some((_, true)) => Verdict::Met,
            Some((x, false)) => Verdict::Missed(format!(
                "{}x against {}x",
                kicklab_model::sig(x, kicklab_model::SHORT_DIGITS),
                crate::flags::BITMAP_SPREAD_TARGET
            )),
            None => Verdict::Missed("not measured".into()),
        }
    }
}

/// The list at the top of the page: each part's own targets, met or not,
/// linked to its section.
pub(super) fn glance_html(parts: &[(&str, &str, Verdict)]) -> String {
    if parts.is_empty() {
        return String::new();
    }
    let items: String = parts
        .iter()
        .map(|(id, what, v)| {
            let verdict = match v {
                Verdict::Met => "met".to_string(),
                Verdict::Missed(why) => format!("<b>missed</b>: {}", html_escape(why)),
            };
            format!(
                "<li><a href=\"#{id}\">{}</a>: {verdict}</li>",
                html_escape(what)
            )
        })
        .collect();
    format!(
        "<p>The targets kicklab sets itself, per part (each section says what they are and which missed; the \
         Fig. 4 validations give their errors in their own summary lines):</p><ul>{items}</ul>"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_glance_links_each_part_and_says_what_missed() {
        let html = glance_html(&[
            ("qos", "several VMs", Verdict::of(&[])),
            ("control", "controller", Verdict::count(40, 46, "points")),
            ("flags", "a <b>", Verdict::of(&["x".into(), "y".into()])),
        ]);
        assert!(
            html.contains("<li><a href=\"#qos\">several VMs</a>: met</li>"),
            "{html}"
        );
        assert!(
            html.contains("<b>missed</b>: 40 of 46 points meet every target"),
            "{html}"
        );
        assert!(
            html.contains("a &lt;b&gt;</a>: <b>missed</b>: 2 targets missed"),
            "{html}"
        );
        assert_eq!(glance_html(&[]), "");
    }
}
