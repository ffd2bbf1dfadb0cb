//! A measured pair's picture: the first kicks and sleeps of its window as
//! the testbed recorded them ([`kicklab_testbed::Record`], on the host's
//! TSC: a KVM guest's own stamps placed on it by the clock exchanges),
//! drawn as the simulator's regime timelines and a traced pair's are
//! ([`crate::trace::traced_timeline`]): the time between them the party
//! ran (its work, and its polling or spinning). What does not live here:
//! recording them (`kicklab_testbed`), the drawing
//! (`kicklab_report::timeline_svg`).

use kicklab_testbed::Record;
use kicklab_trace::{Span, SpanKind};

/// Kicks and sleeps recorded per party: enough for the drawing's
/// [`crate::trace::TIMELINE_MARKS`] marks however they split between the
/// two parties.
pub const RECORD: usize = 64;

/// The records as SVG, a panel each with its title; `None` where none
/// holds as many kicks and sleeps as the drawing needs (a polling pair
/// has none); a record short of them is left out.
#[must_use]
pub fn svg(runs: &[(&Record, String)]) -> Option<String> {
    let timelines: Vec<(crate::trace::TracedTimeline, &String)> = runs
        .iter()
        .filter_map(|(record, title)| Some((crate::trace::traced_timeline(&spans(record))?, title)))
        .collect();
    if timelines.is_empty() {
        return None;
    }
    let panels: Vec<kicklab_report::TimelinePanel> = timelines
        .iter()
        .map(|(t, title)| kicklab_report::TimelinePanel {
            title: (*title).clone(),
            timeline: &t.timeline,
            from_ps: t.from_ps,
            to_ps: t.to_ps,
        })
        .collect();
    Some(kicklab_report::timeline_svg(&panels))
}

/// The record as the trace's spans (whole nanoseconds).
fn spans(record: &Record) -> [Vec<Span>; 2] {
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    record.spans.clone().map(|side| {
        side.iter()
            .map(|s| Span {
                kind: if s.kick {
                    SpanKind::Kick
                } else {
                    SpanKind::Sleep
                },
                from_ns: s.from_ns.max(0.0).round() as u64,
                to_ns: s.to_ns.max(0.0).round() as u64,
            })
            .collect()
    })
}
