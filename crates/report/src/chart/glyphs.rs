//! What a series looks like: its line's dash pattern, its markers, and
//! its points cut into the runs that stay inside the plot.

use super::Style;

/// Stroke attributes of a line style (the legend draws the same).
pub(super) fn line_attrs(st: Style) -> &'static str {
    match st {
        Style::Thick => "stroke-width=\"3.5\"",
        Style::Dashed => "stroke-width=\"2\" stroke-dasharray=\"7 4\"",
        Style::Line | Style::LinePoints | Style::Points | Style::Ring => "stroke-width=\"1.6\"",
    }
}

/// The marker of a point of a marker style at `(cx, cy)`, a little larger
/// in the legend: a dot ([`Style::Points`]) or a hollow ring
/// ([`Style::Ring`]).
pub(super) fn marker(st: Style, cx: f64, cy: f64, color: &str, legend: bool) -> String {
    let grow = if legend { 1.0 } else { 0.0 };
    if st == Style::Ring {
        format!(
            "<circle class=\"ring\" cx=\"{cx:.1}\" cy=\"{cy:.1}\" r=\"{}\" fill=\"none\" stroke=\"{color}\" stroke-width=\"2\"/>",
            6.0 + grow
        )
    } else {
        format!(
            "<circle cx=\"{cx:.1}\" cy=\"{cy:.1}\" r=\"{}\" fill=\"{color}\"/>",
            2.5 + grow
        )
    }
}

/// Splits a polyline into the runs inside `lo..=hi`, cutting segments at
/// the bounds.
pub(super) fn clip_runs(pts: &[(f64, f64)], lo: f64, hi: f64) -> Vec<Vec<(f64, f64)>> {
    let inside = |v: f64| (lo..=hi).contains(&v);
    let cut = |a: (f64, f64), b: (f64, f64), at: f64| {
        let t = (at - a.1) / (b.1 - a.1);
        (a.0 + t * (b.0 - a.0), at)
    };
    let mut runs = Vec::new();
    let mut cur: Vec<(f64, f64)> = Vec::new();
    for (k, &b) in pts.iter().enumerate() {
        if k == 0 {
            if inside(b.1) {
                cur.push(b);
            }
            continue;
        }
        let a = pts[k - 1];
        match (inside(a.1), inside(b.1)) {
            (true, true) => cur.push(b),
            (true, false) => {
                cur.push(cut(a, b, if b.1 > hi { hi } else { lo }));
                runs.push(std::mem::take(&mut cur));
            }
            (false, true) => {
                cur.push(cut(a, b, if a.1 > hi { hi } else { lo }));
                cur.push(b);
            }
            (false, false) => {
                // Crossing the whole range.
                if (a.1 > hi && b.1 < lo) || (a.1 < lo && b.1 > hi) {
                    let (e1, e2) = if a.1 > hi { (hi, lo) } else { (lo, hi) };
                    runs.push(vec![cut(a, b, e1), cut(a, b, e2)]);
                }
            }
        }
    }
    if !cur.is_empty() {
        runs.push(cur);
    }
    runs
}
