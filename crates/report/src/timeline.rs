//! A picture of a run: for each panel, what P and C did over a window of
//! time (work, kick, start-up, spin, sleep, as coloured bars on one lane
//! each) and the queue's fill below them, drawn from the simulator's own
//! intervals ([`kicklab_sim::timeline`]). Plain SVG rectangles and one
//! path: plotters draws axes and series, not Gantt lanes, and the bars
//! need no more than this.
//!
//! What does not live here: running the pair (`kicklab_sim`), choosing
//! the windows (the callers).

use std::fmt::Write as _;

use kicklab_model::{fmt_ns_short, Party};
use kicklab_sim::{Activity, Timeline};

use crate::page::html_escape;

/// One panel: a title, a run's timeline and the window shown [ps].
#[derive(Debug, Clone)]
pub struct TimelinePanel<'a> {
    /// Above the lanes, e.g. `FP: P fills the queue and sleeps`.
    pub title: String,
    /// The run.
    pub timeline: &'a Timeline,
    /// The window shown, from and to [ps].
    pub from_ps: u64,
    /// See `from_ps`.
    pub to_ps: u64,
}

/// The activities in legend order, with their colours.
const COLOURS: [(Activity, &str); 5] = [
    (Activity::Work, "#4e79a7"),
    (Activity::Kick, "#e15759"),
    (Activity::StartUp, "#f28e2b"),
    (Activity::Spin, "#9c9c9c"),
    (Activity::Sleep, "#e8e8e8"),
];

/// As wide as the report's charts ([`crate::FIG_W`]), so its text reads
/// the same size.
const WIDTH: f64 = 720.0;
const LEFT: f64 = 40.0;
const RIGHT: f64 = 20.0;
const LANE: f64 = 16.0;
const FILL_H: f64 = 26.0;
/// Title, two lanes, fill, the time axis and a gap.
const PANEL_H: f64 = 18.0 + 2.0 * (LANE + 3.0) + FILL_H + 18.0 + 8.0;
const LEGEND_H: f64 = 28.0;

fn colour(a: Activity) -> &'static str {
    COLOURS
        .iter()
        .find(|(x, _)| *x == a)
        .map_or("#000", |(_, c)| c)
}

/// The panels as one SVG, `WIDTH` user units (and pixels) wide, scaling
/// down with its container. Each bar carries a `<title>` (what, from, how long).
pub fn timeline_svg(panels: &[TimelinePanel]) -> String {
    #[allow(clippy::cast_precision_loss)]
    let height = LEGEND_H + PANEL_H * panels.len() as f64;
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"kl-timeline\" viewBox=\"0 0 {WIDTH} {height}\" \
         width=\"{WIDTH}\" height=\"{height}\" style=\"max-width:100%;height:auto\" font-family=\"sans-serif\">\n"
    );
    let mut x = LEFT;
    for (a, c) in COLOURS {
        let _ = write!(
            s,
            "<rect x=\"{x}\" y=\"6\" width=\"14\" height=\"12\" fill=\"{c}\" stroke=\"#888\" stroke-width=\"0.5\"/>\
             <text x=\"{}\" y=\"16\" font-size=\"13\">{}</text>",
            x + 18.0,
            a.name()
        );
        x += 112.0;
    }
    s.push('\n');
    for (i, p) in panels.iter().enumerate() {
        #[allow(clippy::cast_precision_loss)]
        panel(&mut s, p, LEGEND_H + PANEL_H * i as f64);
    }
    s.push_str("</svg>\n");
    s
}

#[allow(clippy::cast_precision_loss)]
fn panel(s: &mut String, p: &TimelinePanel, top: f64) {
    let span = p.to_ps.saturating_sub(p.from_ps).max(1) as f64;
    let xs = |t: u64| {
        LEFT + (WIDTH - LEFT - RIGHT) * (t.clamp(p.from_ps, p.to_ps) - p.from_ps) as f64 / span
    };
    let _ = writeln!(
        s,
        "<text x=\"{LEFT}\" y=\"{}\" font-size=\"14\" font-weight=\"600\">{}</text>",
        top + 13.0,
        html_escape(&p.title)
    );
    let lanes = [(Party::P, top + 18.0), (Party::C, top + 18.0 + LANE + 3.0)];
    for (party, y) in lanes {
        let _ = write!(
            s,
            "<text x=\"{}\" y=\"{}\" font-size=\"13\" text-anchor=\"end\">{}</text>",
            LEFT - 8.0,
            y + LANE - 3.0,
            if party == Party::P { "P" } else { "C" }
        );
        for iv in p
            .timeline
            .intervals
            .iter()
            .filter(|iv| iv.party == party && iv.to_ps > p.from_ps && iv.from_ps < p.to_ps)
        {
            let (x0, x1) = (xs(iv.from_ps), xs(iv.to_ps));
            let _ = write!(
                s,
                "<rect x=\"{x0:.2}\" y=\"{y}\" width=\"{:.2}\" height=\"{LANE}\" fill=\"{}\" stroke=\"#fff\" \
                 stroke-width=\"0.4\"><title>{}: {} for {}</title></rect>",
                (x1 - x0).max(0.5),
                colour(iv.activity),
                iv.activity.name(),
                fmt_ns_short((iv.from_ps - p.from_ps.min(iv.from_ps)) as f64 / 1000.0),
                fmt_ns_short((iv.to_ps - iv.from_ps) as f64 / 1000.0)
            );
        }
        s.push('\n');
    }
    // The fill: a step line over the window, scaled to its own range
    // (a traced pair's is not known: said instead).
    let fill_top = top + 18.0 + 2.0 * (LANE + 3.0);
    if p.timeline.fill.is_empty() {
        let _ = writeln!(
            s,
            "<text x=\"{}\" y=\"{}\" font-size=\"12\" fill=\"#777\">messages in the queue: not recorded</text>",
            LEFT + 4.0,
            fill_top + 15.0
        );
    } else {
        let before = p
            .timeline
            .fill
            .iter()
            .rev()
            .find(|(t, _)| *t <= p.from_ps)
            .map_or(0, |(_, n)| *n);
        let inside: Vec<(u64, u64)> = std::iter::once((p.from_ps, before))
            .chain(
                p.timeline
                    .fill
                    .iter()
                    .copied()
                    .filter(|(t, _)| *t > p.from_ps && *t < p.to_ps),
            )
            .collect();
        let lo = inside.iter().map(|(_, n)| *n).min().unwrap_or(0);
        let hi = inside
            .iter()
            .map(|(_, n)| *n)
            .max()
            .unwrap_or(0)
            .max(lo + 1);
        let ys = |n: u64| fill_top + FILL_H - FILL_H * (n - lo) as f64 / (hi - lo) as f64;
        let mut d = String::new();
        for (j, (t, n)) in inside.iter().enumerate() {
            if j == 0 {
                let _ = write!(d, "M{:.2} {:.2}", xs(*t), ys(*n));
            } else {
                let _ = write!(d, " H{:.2} V{:.2}", xs(*t), ys(*n));
            }
        }
        let _ = write!(d, " H{:.2}", xs(p.to_ps));
        let _ = writeln!(
        s,
        "<rect x=\"{LEFT}\" y=\"{fill_top}\" width=\"{}\" height=\"{FILL_H}\" fill=\"#fafafa\" stroke=\"#ddd\"/>\
         <text x=\"{}\" y=\"{}\" font-size=\"12\" fill=\"#777\">messages in the queue</text>\
         <path d=\"{d}\" fill=\"none\" stroke=\"#333\" stroke-width=\"1.2\"/>\
         <text x=\"{}\" y=\"{}\" font-size=\"12\" text-anchor=\"end\">{hi}</text>\
         <text x=\"{}\" y=\"{}\" font-size=\"12\" text-anchor=\"end\">{lo}</text>",
        WIDTH - LEFT - RIGHT,
        LEFT + 4.0,
        fill_top + 11.0,
        LEFT - 8.0,
        fill_top + 10.0,
        LEFT - 8.0,
        fill_top + FILL_H,
    );
    }
    // The time axis: 0 at the window's start, its length at the end.
    let axis = fill_top + FILL_H + 14.0;
    let _ = writeln!(
        s,
        "<text x=\"{LEFT}\" y=\"{axis}\" font-size=\"12\">0</text>\
         <text x=\"{}\" y=\"{axis}\" font-size=\"12\" text-anchor=\"middle\">{}</text>\
         <text x=\"{}\" y=\"{axis}\" font-size=\"12\" text-anchor=\"end\">{}</text>",
        (LEFT + WIDTH - RIGHT) / 2.0,
        fmt_ns_short(span / 2000.0),
        WIDTH - RIGHT,
        fmt_ns_short(span / 1000.0)
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use kicklab_model::{Cost, Params, WaitMode};
    use kicklab_sim::SimConfig;

    #[test]
    fn every_interval_in_the_window_is_a_bar_with_its_colour() {
        let p = Params {
            w_p: Cost::Const(2000.0),
            ..Params::default()
        };
        let t = kicklab_sim::timeline(&SimConfig::new(p, WaitMode::Notify, 500)).unwrap();
        let (from, to) = (t.end_ps / 2, t.end_ps / 2 + 100_000_000);
        let want = t
            .intervals
            .iter()
            .filter(|iv| iv.to_ps > from && iv.from_ps < to)
            .count();
        let svg = timeline_svg(&[TimelinePanel {
            title: "FC <here>".into(),
            timeline: &t,
            from_ps: from,
            to_ps: to,
        }]);
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>\n"));
        assert!(svg.contains("FC &lt;here&gt;"));
        assert_eq!(svg.matches("<title>").count(), want);
        assert!(want > 10, "{want} intervals in 100 us of FC");
        // FC: C sleeps and is kicked, P works and kicks.
        for a in [
            Activity::Work,
            Activity::Kick,
            Activity::StartUp,
            Activity::Sleep,
        ] {
            assert!(svg.contains(&format!("<title>{}:", a.name())), "{a:?}");
        }
        assert!(svg.contains("<path d=\"M"));
    }
}
