//! A small chart description and its SVG rendering (hand-written SVG, so
//! that the layout is ours: labels in a strip above the plot, the legend
//! below it, neither covering the other nor the data).
//!
//! What does not live here: what a chart shows (`sweep`, the callers).

use std::fmt::Write as _;

use crate::page::html_escape;
use crate::ReportError;

mod axis;
mod glyphs;
#[cfg(test)]
mod tests;
mod text;

use axis::{fmt_short, log_ticks, nice_ticks, sig6, tick_label};
use glyphs::{clip_runs, line_attrs, marker};
use kicklab_model::median;
use text::{text_w, wrap};

/// How a series is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Style {
    /// A solid line.
    #[default]
    Line,
    /// A thick solid line.
    Thick,
    /// A dashed line.
    Dashed,
    /// Markers only.
    Points,
    /// A solid line with a marker at each point: measurements joined
    /// (each marker is one run).
    LinePoints,
    /// Hollow rings around points: marks points of another series (a
    /// measurement flagged as disturbed, say).
    Ring,
}

/// A vertical error bar at `x`, from `lo` to `hi` (a range of repeated
/// measurements, say), drawn with caps in its series' colour.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ErrorBar {
    /// Where, on the x axis.
    pub x: f64,
    /// Bottom of the bar.
    pub lo: f64,
    /// Top of the bar.
    pub hi: f64,
}

/// One named series of `(x, y)` points.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Series {
    /// Legend text.
    pub name: String,
    /// The points.
    pub points: Vec<(f64, f64)>,
    /// Line or markers.
    pub style: Style,
    /// Error bars (none for most series); they count in the y range.
    pub error_bars: Vec<ErrorBar>,
}

/// A labelled vertical line (a regime boundary); the label is shown just
/// right of the line.
#[derive(Debug, Clone, PartialEq)]
pub struct Mark {
    /// Where, on the x axis.
    pub x: f64,
    /// Text at the top of the line.
    pub label: String,
}

/// A labelled x interval (a regime): the label is centred over it, dashed
/// lines at its inner edges.
#[derive(Debug, Clone, PartialEq)]
pub struct Band {
    /// Left end (smaller x).
    pub x0: f64,
    /// Right end (larger x).
    pub x1: f64,
    /// Text above the interval.
    pub label: String,
}

/// The y axis scale.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum YScale {
    /// Linear (from 0 unless data are negative).
    #[default]
    Linear,
    /// Logarithmic, decades; values <= 0 are left out.
    Log,
    /// Logarithmic where the data are positive and span at least
    /// [`DECADES_RATIO`] (one curve's plateau would squash the others into
    /// the bottom of a linear axis), else linear.
    Auto,
}

/// The largest over the smallest positive value from which
/// [`YScale::Auto`] draws a log axis.
pub const DECADES_RATIO: f64 = 20.0;

/// Clipping of the y axis when one series dwarfs the others.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum Clip {
    /// Cut the axis when some series reach above 3x the median of all the
    /// series' maxima (one curve dwarfing the others): the axis covers the
    /// other series, the large ones are drawn clipped, with a note.
    #[default]
    Auto,
    /// Never clip: the axis covers every value.
    Off,
    /// Cut the axis at this value (with a note if anything is above).
    Above(f64),
}

/// A line chart.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Chart {
    /// Title.
    pub title: String,
    /// X axis label.
    pub x_label: String,
    /// Y axis label.
    pub y_label: String,
    /// The series.
    pub series: Vec<Series>,
    /// Vertical marks.
    pub marks: Vec<Mark>,
    /// Optional fixed y range (else from the data, from 0).
    pub y_range: Option<(f64, f64)>,
    /// Labelled x intervals (regimes).
    pub bands: Vec<Band>,
    /// Linear or log y axis.
    pub y_scale: YScale,
    /// Clipping of outliers on the y axis (ignored with a `y_range`).
    pub clip: Clip,
    /// A logarithmic x axis (for counts that double: guests 1, 2, 4 ..
    /// 64), ticked at powers of 2 where the data span at most three
    /// decades, else at decades; x values <= 0 are left out.
    pub x_log: bool,
}

/// Lines whose every y is within this share of another's are drawn on
/// one another, and the chart's note says so.
const COINCIDENT: f64 = 0.01;

/// Series colours: Okabe and Ito's, which readers with any common
/// colour-vision deficiency tell apart (no red beside green).
pub(crate) const PALETTE: [&str; 8] = [
    "#0072b2", "#e69f00", "#009e73", "#cc79a7", "#56b4e9", "#d55e00", "#000000", "#999999",
];

/// The report's figure size [px]: drawn at this size, a figure scales
/// down with a narrower window, and at 720 px its tick labels still show
/// at 13 px in a 700 px window.
pub const FIG_W: u32 = 720;
/// See [`FIG_W`].
pub const FIG_H: u32 = 480;

/// Font sizes [px].
const TITLE_PX: f64 = 17.0;
const TICK_PX: f64 = 14.0;
const AXIS_PX: f64 = 14.0;
const LABEL_PX: f64 = 13.0;
const LEGEND_PX: f64 = 13.0;
/// Height of one row of regime labels, of legend entries.
const LABEL_ROW: f64 = 17.0;
const LEGEND_ROW: f64 = 20.0;
/// Width of a legend glyph.
const GLYPH_W: f64 = 28.0;

/// An axis-aligned rectangle in pixels.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Rect {
    pub x: f64,
    pub y: f64,
    pub w: f64,
    pub h: f64,
}

impl Rect {
    #[cfg(test)]
    pub(crate) fn intersects(&self, o: &Rect) -> bool {
        self.x < o.x + o.w && o.x < self.x + self.w && self.y < o.y + o.h && o.y < self.y + self.h
    }
}

/// Where everything goes, in pixels.
#[derive(Debug, Clone)]
pub(crate) struct Layout {
    /// The plot area (inside the axes).
    pub plot: Rect,
    /// Data ranges: x, then y (in log10 for a log axis).
    pub x: (f64, f64),
    pub y: (f64, f64),
    pub log: bool,
    /// A log x axis: `x` is in log10 units.
    pub xlog: bool,
    /// Labels of bands and marks: text, box, anchor x.
    pub labels: Vec<(String, Rect)>,
    /// The legend box, and each entry's `(series index, x, y)`.
    pub legend: Rect,
    pub entries: Vec<(usize, f64, f64)>,
    /// The note about clipped series, if any.
    pub note: Option<String>,
}

impl Layout {
    fn px(&self, x: f64) -> f64 {
        let (a, b) = self.x;
        let x = if self.xlog { x.log10() } else { x };
        self.plot.x + (x - a) / (b - a) * self.plot.w
    }

    /// Pixel row of a y value already in axis units (log10 for log).
    fn py_axis(&self, v: f64) -> f64 {
        let (a, b) = self.y;
        self.plot.y + self.plot.h - (v - a) / (b - a) * self.plot.h
    }

    fn to_axis(&self, y: f64) -> Option<f64> {
        if self.log {
            (y > 0.0).then(|| y.log10())
        } else {
            Some(y)
        }
    }
}

impl Series {
    /// The points and the ends of the error bars, as `(x, y)`.
    fn extent(&self) -> impl Iterator<Item = (f64, f64)> + '_ {
        self.points.iter().copied().chain(
            self.error_bars
                .iter()
                .flat_map(|b| [(b.x, b.lo), (b.x, b.hi)]),
        )
    }
}

impl Chart {
    /// The same chart with a linear y axis fitted to its data (a tenth of
    /// their range above and below) instead of starting at 0: for curves
    /// that differ by a little at a level far from 0, which an axis from 0
    /// would squash into a sliver. The tick labels show where it starts.
    #[must_use]
    pub fn with_fitted_y(self) -> Self {
        let (lo, hi) = self
            .finite()
            .map(|p| p.1)
            .fold((f64::MAX, f64::MIN), |(a, b), y| (a.min(y), b.max(y)));
        if lo > hi {
            return self;
        }
        let pad = if hi > lo {
            0.1 * (hi - lo)
        } else {
            0.05 * hi.abs().max(1e-9)
        };
        Chart {
            y_range: Some((lo - pad, hi + pad)),
            y_scale: YScale::Linear,
            ..self
        }
    }

    /// The figure caption: the title (which names the metric) and the axes,
    /// e.g. `Fig. 3: CPU cost per message E (E [us of busy CPU/message]
    /// vs W_C [us])`.
    pub fn caption(&self) -> String {
        format!("{} ({} vs {})", self.title, self.y_label, self.x_label)
    }

    /// Every finite `(x, y)` drawn: the points and the error bars' ends.
    fn finite(&self) -> impl Iterator<Item = (f64, f64)> + '_ {
        self.series
            .iter()
            .flat_map(Series::extent)
            .filter(|(x, y)| x.is_finite() && y.is_finite())
    }

    /// Whether every finite y is positive and the largest is at least
    /// [`DECADES_RATIO`] times the smallest.
    fn spans_decades(&self) -> bool {
        let (lo, hi) = self
            .finite()
            .map(|p| p.1)
            .fold((f64::MAX, f64::MIN), |(a, b), y| (a.min(y), b.max(y)));
        lo > 0.0 && hi >= DECADES_RATIO * lo
    }

    /// The lines that lie on one another (the same x values, every y
    /// within [`COINCIDENT`] of the first line's), as a note naming each
    /// group; `None` where every line shows.
    fn coincident_note(&self) -> Option<String> {
        let line = |s: &Series| !matches!(s.style, Style::Points | Style::Ring);
        let same = |a: &Series, b: &Series| {
            a.points.len() == b.points.len()
                && a.points.iter().zip(&b.points).all(|(p, q)| {
                    let scale = p.1.abs().max(q.1.abs());
                    p.0 == q.0
                        && p.1.is_finite()
                        && q.1.is_finite()
                        && (p.1 - q.1).abs() <= COINCIDENT * scale
                })
        };
        let mut groups: Vec<Vec<usize>> = Vec::new();
        for (i, ser) in self.series.iter().enumerate() {
            if !line(ser) || ser.points.is_empty() {
                continue;
            }
            match groups.iter_mut().find(|g| same(&self.series[g[0]], ser)) {
                Some(g) => g.push(i),
                None => groups.push(vec![i]),
            }
        }
        let names: Vec<String> = groups
            .iter()
            .filter(|g| g.len() > 1)
            .map(|g| {
                g.iter()
                    .map(|&i| self.series[i].name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            })
            .collect();
        (!names.is_empty()).then(|| {
            format!(
                "On one line (within {}% at every point): {}.",
                COINCIDENT * 100.0,
                names.join("; ")
            )
        })
    }

    /// The top of the y axis after clipping, and the note, if it clips.
    fn clip_top(&self) -> Option<(f64, String)> {
        let maxima: Vec<(usize, f64)> = self
            .series
            .iter()
            .enumerate()
            .filter_map(|(i, s)| {
                s.extent()
                    .map(|p| p.1)
                    .filter(|y| y.is_finite())
                    .reduce(f64::max)
                    .map(|m| (i, m))
            })
            .collect();
        let top = match self.clip {
            Clip::Off => return None,
            Clip::Above(v) => v,
            Clip::Auto => {
                let all: Vec<f64> = maxima.iter().map(|m| m.1).collect();
                let bound = 3.0 * median(all.clone());
                if bound.is_nan() || bound <= 0.0 || all.iter().all(|m| *m <= bound) {
                    return None;
                }
                // Cover every series within the bound, with some headroom.
                all.iter()
                    .copied()
                    .filter(|m| *m <= bound)
                    .fold(0.0, f64::max)
                    * 1.1
            }
        };
        let over: Vec<String> = maxima
            .iter()
            .filter(|(_, m)| *m > top)
            .map(|(i, m)| format!("{} (up to {})", self.series[*i].name, fmt_short(*m)))
            .collect();
        (!over.is_empty()).then(|| {
            (
                top,
                format!(
                    "Clipped at {}: {}; values above are drawn at the top edge (▲).",
                    fmt_short(top),
                    over.join(", ")
                ),
            )
        })
    }

    pub(crate) fn layout(&self, width: u32, height: u32) -> Layout {
        let (w, h) = (f64::from(width), f64::from(height));
        // X range: the data's (or the bands' if there are no data).
        let (mut x0, mut x1) = self
            .finite()
            .map(|p| p.0)
            .chain(self.bands.iter().flat_map(|b| [b.x0, b.x1]))
            .filter(|x| !self.x_log || *x > 0.0)
            .map(|x| if self.x_log { x.log10() } else { x })
            .fold((f64::MAX, f64::MIN), |(a, b), x| (a.min(x), b.max(x)));
        if x0 > x1 {
            (x0, x1) = (0.0, 1.0);
        }
        if x0 == x1 {
            (x0, x1) = (x0 - 0.5, x1 + 0.5);
        }
        // Y range.
        let log = match self.y_scale {
            YScale::Log => true,
            YScale::Linear => false,
            YScale::Auto => self.spans_decades(),
        };
        let mut note = None;
        let (y0, y1) = if let Some(r) = self.y_range {
            if log {
                (r.0.max(f64::MIN_POSITIVE).log10(), r.1.log10())
            } else {
                r
            }
        } else {
            let clip = self.clip_top();
            let ys = || {
                self.finite()
                    .map(|p| p.1)
                    .filter(|y| !log || *y > 0.0)
                    .filter(|y| clip.as_ref().is_none_or(|(t, _)| y <= t))
            };
            let lo = ys().fold(f64::MAX, f64::min);
            let hi = ys().fold(f64::MIN, f64::max);
            let cut = clip.as_ref().map(|c| c.0);
            let hi = cut.unwrap_or(hi);
            note = clip.map(|c| c.1);
            if log {
                if lo > hi {
                    (0.0, 1.0)
                } else {
                    let (a, b) = (lo.log10().floor(), hi.log10().ceil());
                    (a, if b > a { b } else { a + 1.0 })
                }
            } else {
                let lo = if lo > hi { 0.0 } else { lo.min(0.0) };
                let hi = if hi > lo { hi } else { lo + 1.0 };
                if cut.is_some() {
                    (lo, hi)
                } else {
                    // Round the top up to a tick, with a little headroom.
                    let (_, step) = nice_ticks(lo, hi * 1.04, 6);
                    (lo, (hi * 1.04 / step).ceil() * step)
                }
            }
        };
        let (y0, y1) = if y1 > y0 { (y0, y1) } else { (y0, y0 + 1.0) };

        // Horizontal extent of the plot.
        let left = 78.0;
        let right = w - 24.0;
        let pw = (right - left).max(10.0);
        let px = |x: f64| {
            let x = if self.x_log { x.log10() } else { x };
            left + (x - x0) / (x1 - x0) * pw
        };

        // Labels, in rows above the plot: a label goes in the first row
        // where it overlaps no other.
        let mut wanted: Vec<(String, f64, bool)> = Vec::new(); // text, x, centred
        for b in &self.bands {
            wanted.push((b.label.clone(), (px(b.x0) + px(b.x1)) / 2.0, true));
        }
        for m in &self.marks {
            wanted.push((m.label.clone(), px(m.x) + 3.0, false));
        }
        let mut rows: Vec<Vec<(f64, f64)>> = Vec::new();
        let mut placed = Vec::new();
        for (text, x, centred) in wanted {
            let tw = text_w(&text, LABEL_PX);
            let mut lx = if centred { x - tw / 2.0 } else { x };
            lx = lx.clamp(left, (right - tw).max(left));
            let row = rows
                .iter()
                .position(|r| r.iter().all(|(a, b)| lx + tw + 4.0 <= *a || lx >= *b + 4.0))
                .unwrap_or_else(|| {
                    rows.push(Vec::new());
                    rows.len() - 1
                });
            rows[row].push((lx, lx + tw));
            placed.push((text, lx, tw, row));
        }
        #[allow(clippy::cast_precision_loss)]
        let strip = rows.len() as f64 * LABEL_ROW;
        let top = 34.0 + strip + if rows.is_empty() { 0.0 } else { 4.0 };

        // Legend rows below the axis label, wrapped to the plot's width.
        let mut entries = Vec::new();
        let (mut ex, mut ey) = (0.0, 0.0);
        let mut legend_w: f64 = 0.0;
        for (i, s) in self.series.iter().enumerate() {
            let ew = GLYPH_W + 6.0 + text_w(&s.name, LEGEND_PX) + 16.0;
            if ex > 0.0 && ex + ew > pw - 16.0 {
                ex = 0.0;
                ey += LEGEND_ROW;
            }
            entries.push((i, ex, ey));
            ex += ew;
            legend_w = legend_w.max(ex);
        }
        let legend_h = if entries.is_empty() {
            0.0
        } else {
            ey + LEGEND_ROW + 8.0
        };
        // Lines drawn on top of each other: the legend lists colours the
        // plot cannot show, so the note names them.
        if let Some(one_line) = self.coincident_note() {
            note = Some(match note {
                Some(n) => format!("{n} {one_line}"),
                None => one_line,
            });
        }
        #[allow(clippy::cast_precision_loss)]
        let note_h = note.as_ref().map_or(0.0, |n| {
            18.0 * wrap(n, w - left - 8.0, LEGEND_PX).len() as f64
        });
        // Below the plot: tick labels, axis label, legend, note.
        let below = 22.0 + 22.0 + 8.0 + legend_h + note_h + 6.0;
        let ph = (h - top - below).max(20.0);
        let legend = Rect {
            x: left,
            y: top + ph + 52.0,
            w: (legend_w - 8.0).max(0.0) + 8.0,
            h: legend_h,
        };
        let entries = entries
            .into_iter()
            .map(|(i, x, y)| (i, legend.x + 8.0 + x, legend.y + 4.0 + y + LEGEND_ROW / 2.0))
            .collect();
        let labels = placed
            .into_iter()
            .map(|(text, lx, tw, row)| {
                #[allow(clippy::cast_precision_loss)]
                let y = 34.0 + row as f64 * LABEL_ROW;
                (
                    text,
                    Rect {
                        x: lx,
                        y,
                        w: tw,
                        h: LABEL_ROW,
                    },
                )
            })
            .collect();
        Layout {
            plot: Rect {
                x: left,
                y: top,
                w: pw,
                h: ph,
            },
            x: (x0, x1),
            y: (y0, y1),
            log,
            xlog: self.x_log,
            labels,
            legend,
            entries,
            note,
        }
    }

    /// Renders the chart as an SVG document of `width` x `height` pixels
    /// (it scales down with its container: `max-width:100%`).
    ///
    /// # Errors
    ///
    /// None today; the `Result` is kept for callers.
    pub fn to_svg(&self, width: u32, height: u32) -> Result<String, ReportError> {
        let l = self.layout(width, height);
        let mut s = String::new();
        let p = l.plot;
        // class, data-plot and the metadata are for the page's script
        // (values on hover, zoom); the SVG draws the same without it.
        let _ = write!(
            s,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" \
             viewBox=\"0 0 {width} {height}\" style=\"max-width:100%;height:auto\" \
             font-family=\"sans-serif\" class=\"kl-chart\" data-plot=\"{:.1} {:.1} {:.1} {:.1}\">\n\
             <metadata class=\"kl-data\">{}</metadata>\n\
             <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n",
            p.x,
            p.y,
            p.w,
            p.h,
            html_escape(&self.metadata(&l))
        );
        let _ = writeln!(
            s,
            "<text x=\"{:.1}\" y=\"22\" font-size=\"{TITLE_PX}\" text-anchor=\"middle\">{}</text>",
            f64::from(width) / 2.0,
            html_escape(&self.title)
        );
        self.axes(&mut s, &l);
        // Everything drawn at data positions inside the plot, which a zoom
        // moves.
        s.push_str("<g class=\"kl-zoom\">\n");
        self.bands_and_marks(&mut s, &l);
        self.data(&mut s, &l);
        s.push_str("</g>\n");
        Self::labels(&mut s, &l);
        self.legend(&mut s, &l);
        s.push_str("</svg>\n");
        Ok(s)
    }

    /// The data behind the drawing, as JSON for the page's script: the
    /// axes' ranges (y in log10 on a log axis), their labels, and each
    /// series' name, colour and finite points (6 significant digits).
    fn metadata(&self, l: &Layout) -> String {
        let series: Vec<serde_json::Value> = self
            .series
            .iter()
            .enumerate()
            .map(|(i, ser)| {
                let pts: Vec<[f64; 2]> = ser
                    .points
                    .iter()
                    .filter(|(x, y)| x.is_finite() && y.is_finite())
                    .map(|&(x, y)| [sig6(x), sig6(y)])
                    .collect();
                serde_json::json!({
                    "n": ser.name,
                    "c": PALETTE[i % PALETTE.len()],
                    "p": pts,
                })
            })
            .collect();
        serde_json::json!({
            "x": [l.x.0, l.x.1],
            "y": [l.y.0, l.y.1],
            "log": l.log,
            "xlog": l.xlog,
            "xl": self.x_label,
            "yl": self.y_label,
            "s": series,
        })
        .to_string()
    }

    fn axes(&self, s: &mut String, l: &Layout) {
        let p = l.plot;
        let bottom = p.y + p.h;
        // Grid and tick labels: the page's script draws its own when zoomed.
        s.push_str("<g class=\"kl-ticks\">\n");
        // Y ticks and grid.
        let yt: Vec<(f64, String)> = if l.log {
            #[allow(clippy::cast_possible_truncation)]
            let (a, b) = (l.y.0.floor() as i32, l.y.1.ceil() as i32);
            (a..=b)
                .map(|e| (f64::from(e), fmt_short(10f64.powi(e))))
                .collect()
        } else {
            let (t, step) = nice_ticks(l.y.0, l.y.1, 6);
            t.into_iter().map(|v| (v, tick_label(v, step))).collect()
        };
        for (v, text) in yt {
            let y = l.py_axis(v);
            if y < p.y - 0.5 || y > bottom + 0.5 {
                continue;
            }
            let _ = writeln!(
                s,
                "<line x1=\"{:.1}\" y1=\"{y:.1}\" x2=\"{:.1}\" y2=\"{y:.1}\" stroke=\"#e4e4e4\"/>\
                 <text class=\"tick\" x=\"{:.1}\" y=\"{:.1}\" font-size=\"{TICK_PX}\" text-anchor=\"end\">{text}</text>",
                p.x,
                p.x + p.w,
                p.x - 6.0,
                y + TICK_PX * 0.35
            );
        }
        let xt: Vec<(f64, String)> = if l.xlog {
            log_ticks(10f64.powf(l.x.0), 10f64.powf(l.x.1))
                .into_iter()
                .map(|v| (v, fmt_short(v)))
                .collect()
        } else {
            let (xt, step) = nice_ticks(l.x.0, l.x.1, ((p.w / 90.0) as usize).clamp(2, 10));
            xt.into_iter().map(|v| (v, tick_label(v, step))).collect()
        };
        for (v, text) in xt {
            let x = l.px(v);
            let _ = writeln!(
                s,
                "<line x1=\"{x:.1}\" y1=\"{:.1}\" x2=\"{x:.1}\" y2=\"{bottom:.1}\" stroke=\"#e4e4e4\"/>\
                 <text class=\"tick\" x=\"{x:.1}\" y=\"{:.1}\" font-size=\"{TICK_PX}\" text-anchor=\"middle\">{}</text>",
                p.y,
                bottom + 18.0,
                text
            );
        }
        s.push_str("</g>\n");
        let _ = writeln!(
            s,
            "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"none\" stroke=\"#555\"/>",
            p.x, p.y, p.w, p.h
        );
        let _ = writeln!(
            s,
            "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"{AXIS_PX}\" text-anchor=\"middle\">{}{}</text>",
            p.x + p.w / 2.0,
            bottom + 40.0,
            html_escape(&self.x_label),
            if l.xlog { " (log scale)" } else { "" }
        );
        let (cx, cy) = (18.0, p.y + p.h / 2.0);
        let _ = writeln!(
            s,
            "<text x=\"{cx}\" y=\"{cy:.1}\" font-size=\"{AXIS_PX}\" text-anchor=\"middle\" \
             transform=\"rotate(-90 {cx} {cy:.1})\">{}{}</text>",
            html_escape(&self.y_label),
            if l.log { " (log scale)" } else { "" }
        );
    }

    fn bands_and_marks(&self, s: &mut String, l: &Layout) {
        let p = l.plot;
        let vline = |s: &mut String, x: f64| {
            let _ = writeln!(
                s,
                "<line x1=\"{x:.1}\" y1=\"{:.1}\" x2=\"{x:.1}\" y2=\"{:.1}\" stroke=\"#999\" stroke-dasharray=\"4 4\"/>",
                p.y,
                p.y + p.h
            );
        };
        for (i, b) in self.bands.iter().enumerate() {
            let (a, c) = (l.px(b.x0).max(p.x), l.px(b.x1).min(p.x + p.w));
            if i % 2 == 1 && c > a {
                let _ = writeln!(
                    s,
                    "<rect x=\"{a:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"#f3f3f8\"/>",
                    p.y,
                    c - a,
                    p.h
                );
            }
            if a > p.x + 0.5 {
                vline(s, a);
            }
        }
        for m in &self.marks {
            vline(s, l.px(m.x));
        }
    }

    /// The labels of bands and marks, in rows above the plot (hidden while
    /// zoomed).
    fn labels(s: &mut String, l: &Layout) {
        s.push_str("<g class=\"kl-labels\">\n");
        for (text, r) in &l.labels {
            let _ = writeln!(
                s,
                "<text class=\"regime\" x=\"{:.1}\" y=\"{:.1}\" font-size=\"{LABEL_PX}\" fill=\"#444\">{}</text>",
                r.x,
                r.y + LABEL_PX,
                html_escape(text)
            );
        }
        s.push_str("</g>\n");
    }

    fn data(&self, s: &mut String, l: &Layout) {
        let p = l.plot;
        let (lo, hi) = l.y;
        // Thick lines at the bottom, then markers, then thin and dashed
        // lines (the reference curves) on top, so none is hidden; rings
        // around flagged points last.
        let rank = |st: Style| match st {
            Style::Thick => 0,
            Style::Points => 1,
            Style::Line | Style::LinePoints => 2,
            Style::Dashed => 3,
            Style::Ring => 4,
        };
        let mut order: Vec<usize> = (0..self.series.len()).collect();
        order.sort_by_key(|i| rank(self.series[*i].style));
        for i in order {
            let ser = &self.series[i];
            let color = PALETTE[i % PALETTE.len()];
            Self::error_bars(s, l, &ser.error_bars, color);
            let pts: Vec<(f64, f64)> = ser
                .points
                .iter()
                .filter(|(x, y)| x.is_finite() && y.is_finite())
                .filter_map(|&(x, y)| l.to_axis(y).map(|v| (x, v)))
                .collect();
            if matches!(ser.style, Style::Points | Style::Ring) {
                for (x, v) in pts {
                    let cx = l.px(x);
                    if v > hi {
                        let _ = writeln!(
                            s,
                            "<path d=\"M{:.1} {:.1}l4 7h-8z\" fill=\"none\" stroke=\"{color}\"/>",
                            cx,
                            p.y + 1.0
                        );
                    } else if v >= lo {
                        let _ =
                            writeln!(s, "{}", marker(ser.style, cx, l.py_axis(v), color, false));
                    }
                }
                continue;
            }
            let attrs = line_attrs(ser.style);
            for run in clip_runs(&pts, lo, hi) {
                if run.len() < 2 {
                    continue;
                }
                let d: Vec<String> = run
                    .iter()
                    .map(|(x, v)| format!("{:.1},{:.1}", l.px(*x), l.py_axis(*v)))
                    .collect();
                let _ = writeln!(
                    s,
                    "<polyline points=\"{}\" fill=\"none\" stroke=\"{color}\" {attrs}/>",
                    d.join(" ")
                );
            }
            if ser.style == Style::LinePoints {
                for &(x, v) in pts.iter().filter(|(_, v)| (lo..=hi).contains(v)) {
                    let _ = writeln!(
                        s,
                        "{}",
                        marker(ser.style, l.px(x), l.py_axis(v), color, false)
                    );
                }
            }
            // Points above the axis: a marker at the top edge.
            for w in pts.windows(1).filter(|w| w[0].1 > hi) {
                let _ = writeln!(
                    s,
                    "<path d=\"M{:.1} {:.1}l4 7h-8z\" fill=\"none\" stroke=\"{color}\"/>",
                    l.px(w[0].0),
                    p.y + 1.0
                );
            }
        }
    }

    /// Vertical bars from `lo` to `hi`, cut at the axis bounds; a cap at
    /// each end that is inside the plot.
    fn error_bars(s: &mut String, l: &Layout, bars: &[ErrorBar], color: &str) {
        let (lo, hi) = l.y;
        for b in bars {
            if !(b.x.is_finite() && b.lo.is_finite() && b.hi.is_finite()) {
                continue;
            }
            let (a, c) = (b.lo.min(b.hi), b.lo.max(b.hi));
            // On a log axis a bar reaching 0 or below runs to the bottom.
            let a = l.to_axis(a).unwrap_or(f64::NEG_INFINITY);
            let Some(c) = l.to_axis(c) else { continue };
            if c < lo || a > hi {
                continue;
            }
            let x = l.px(b.x);
            let (y0, y1) = (l.py_axis(a.max(lo)), l.py_axis(c.min(hi)));
            let _ = write!(
                s,
                "<g class=\"errbar\" stroke=\"{color}\" stroke-width=\"1.2\">\
                 <line x1=\"{x:.1}\" y1=\"{y0:.1}\" x2=\"{x:.1}\" y2=\"{y1:.1}\"/>"
            );
            for (end, y) in [(a, y0), (c, y1)] {
                if (lo..=hi).contains(&end) {
                    let _ = write!(
                        s,
                        "<line x1=\"{:.1}\" y1=\"{y:.1}\" x2=\"{:.1}\" y2=\"{y:.1}\"/>",
                        x - 4.0,
                        x + 4.0
                    );
                }
            }
            let _ = writeln!(s, "</g>");
        }
    }

    fn legend(&self, s: &mut String, l: &Layout) {
        if l.entries.is_empty() && l.note.is_none() {
            return;
        }
        let r = l.legend;
        if !l.entries.is_empty() {
            let _ = writeln!(
                s,
                "<rect class=\"legend\" x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"white\" stroke=\"#ccc\"/>",
                r.x, r.y, r.w, r.h
            );
        }
        for &(i, x, y) in &l.entries {
            let ser = &self.series[i];
            let color = PALETTE[i % PALETTE.len()];
            let _ = write!(s, "<g class=\"entry\">");
            if matches!(ser.style, Style::Points | Style::Ring) {
                let _ = write!(
                    s,
                    "{}",
                    marker(ser.style, x + GLYPH_W / 2.0, y, color, true)
                );
            } else {
                let _ = write!(
                    s,
                    "<line x1=\"{x:.1}\" y1=\"{y:.1}\" x2=\"{:.1}\" y2=\"{y:.1}\" stroke=\"{color}\" {}/>",
                    x + GLYPH_W,
                    line_attrs(ser.style)
                );
                if ser.style == Style::LinePoints {
                    let _ = write!(
                        s,
                        "{}",
                        marker(ser.style, x + GLYPH_W / 2.0, y, color, true)
                    );
                }
            }
            let _ = writeln!(
                s,
                "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"{LEGEND_PX}\">{}</text></g>",
                x + GLYPH_W + 6.0,
                y + LEGEND_PX * 0.35,
                html_escape(&ser.name)
            );
        }
        if let Some(note) = &l.note {
            // Wrapped to the figure's width (the layout counted the lines).
            let width = r.x + l.plot.w + 24.0;
            for (i, line) in wrap(note, width - r.x - 8.0, LEGEND_PX).iter().enumerate() {
                #[allow(clippy::cast_precision_loss)]
                let y = r.y + r.h + 15.0 + 18.0 * i as f64;
                let _ = writeln!(
                    s,
                    "<text class=\"note\" x=\"{:.1}\" y=\"{y:.1}\" font-size=\"{LEGEND_PX}\" fill=\"#333\">{}</text>",
                    r.x,
                    html_escape(line)
                );
            }
        }
    }
}
