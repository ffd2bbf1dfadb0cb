//! A 2-D map: one colored cell per (x, y) point, by category (a regime)
//! or by value (T, E), with its legend or color scale; hand-written SVG
//! like the line charts, each cell titled with its values (hover).
//!
//! What does not live here: what a map shows (`kicklab-lab`).

use std::fmt::Write as _;

use crate::page::html_escape;
use crate::ReportError;

/// What a cell holds.
#[derive(Debug, Clone, PartialEq)]
pub enum MapCell {
    /// One of [`Heatmap::categories`].
    Category(usize),
    /// A value on the color scale.
    Value(f64),
    /// Nothing (drawn empty).
    Empty,
}

/// A 2-D map over a grid of `xs` x `ys`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Heatmap {
    /// Title.
    pub title: String,
    /// X axis label.
    pub x_label: String,
    /// Y axis label.
    pub y_label: String,
    /// Column positions (ascending).
    pub xs: Vec<f64>,
    /// Row positions (ascending).
    pub ys: Vec<f64>,
    /// `cells[j][i]` at (`xs[i]`, `ys[j]`).
    pub cells: Vec<Vec<MapCell>>,
    /// Category names, for [`MapCell::Category`].
    pub categories: Vec<String>,
    /// Unit of the values (for the scale and the hover text).
    pub unit: String,
}

/// Okabe and Ito's colours, which readers with any common colour-vision
/// deficiency tell apart (the first three are the regime map's GP, FC, FP:
/// blue, orange, sky blue, never red beside green).
const CATEGORY_COLORS: [&str; 10] = [
    "#0072b2", "#e69f00", "#56b4e9", "#009e73", "#cc79a7", "#d55e00", "#f0e442", "#999999",
    "#000000", "#8c564b",
];

/// A blue-to-yellow scale (viridis-like), `t` in [0, 1].
fn ramp(t: f64) -> String {
    let stops = [
        (0.0, (68.0, 1.0, 84.0)),
        (0.25, (59.0, 82.0, 139.0)),
        (0.5, (33.0, 145.0, 140.0)),
        (0.75, (94.0, 201.0, 98.0)),
        (1.0, (253.0, 231.0, 37.0)),
    ];
    let t = t.clamp(0.0, 1.0);
    let k = stops.iter().position(|s| s.0 >= t).unwrap_or(4).max(1);
    let (a, b) = (stops[k - 1], stops[k]);
    let f = if b.0 > a.0 {
        (t - a.0) / (b.0 - a.0)
    } else {
        0.0
    };
    let c = |x: f64, y: f64| (x + (y - x) * f).round();
    format!(
        "rgb({},{},{})",
        c(a.1 .0, b.1 .0),
        c(a.1 .1, b.1 .1),
        c(a.1 .2, b.1 .2)
    )
}

fn fmt(v: f64) -> String {
    if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else if v.abs() >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

impl Heatmap {
    /// The SVG, `width` x `height` pixels.
    ///
    /// # Errors
    ///
    /// [`ReportError::Draw`] for an empty grid or cells that do not match
    /// it.
    #[allow(clippy::cast_precision_loss, clippy::too_many_lines)]
    pub fn to_svg(&self, width: u32, height: u32) -> Result<String, ReportError> {
        let (nx, ny) = (self.xs.len(), self.ys.len());
        if nx == 0 || ny == 0 || self.cells.len() != ny || self.cells.iter().any(|r| r.len() != nx)
        {
            return Err(ReportError::Draw(
                format!("map `{}`", self.title),
                format!("{nx} x {ny} grid with {} rows of cells", self.cells.len()),
            ));
        }
        let (w, h) = (f64::from(width), f64::from(height));
        let (left, right, top, bottom) = (70.0, 170.0, 40.0, 55.0);
        let (pw, ph) = (w - left - right, h - top - bottom);
        let (cw, ch) = (pw / nx as f64, ph / ny as f64);
        let values: Vec<f64> = self
            .cells
            .iter()
            .flatten()
            .filter_map(|c| match c {
                MapCell::Value(v) if v.is_finite() => Some(*v),
                _ => None,
            })
            .collect();
        let (lo, hi) = values
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
                (a.min(*v), b.max(*v))
            });
        let mut s = String::new();
        let _ = write!(
            s,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {width} {height}\" width=\"{width}\" height=\"{height}\" \
             style=\"max-width:100%;height:auto\" font-family=\"sans-serif\" class=\"kl-map\" data-plot=\"{left} {top} {pw} {ph}\">\
             <metadata class=\"kl-data\">{}</metadata>",
            html_escape(
                &serde_json::json!({
                    "xs": self.xs,
                    "ys": self.ys,
                    "xl": self.x_label,
                    "yl": self.y_label,
                })
                .to_string()
            )
        );
        let _ = write!(
            s,
            "<text x=\"{}\" y=\"22\" text-anchor=\"middle\" font-size=\"17\">{}</text>",
            left + pw / 2.0,
            html_escape(&self.title)
        );
        // The cells move with a zoom (the page's script).
        s.push_str("<g class=\"kl-zoom\">");
        for (j, row) in self.cells.iter().enumerate() {
            for (i, c) in row.iter().enumerate() {
                let (x, y) = (left + i as f64 * cw, top + (ny - 1 - j) as f64 * ch);
                let (fill, what) = match c {
                    MapCell::Category(k) => (
                        CATEGORY_COLORS[k % CATEGORY_COLORS.len()].to_string(),
                        self.categories.get(*k).cloned().unwrap_or_default(),
                    ),
                    MapCell::Value(v) if v.is_finite() => {
                        let t = if hi > lo { (v - lo) / (hi - lo) } else { 0.5 };
                        (ramp(t), format!("{} {}", fmt(*v), self.unit))
                    }
                    _ => ("#ffffff".to_string(), "-".to_string()),
                };
                let _ = write!(
                    s,
                    "<rect x=\"{x:.2}\" y=\"{y:.2}\" width=\"{:.2}\" height=\"{:.2}\" fill=\"{fill}\"><title>{} = {}, {} = {}: {}</title></rect>",
                    cw + 0.3,
                    ch + 0.3,
                    html_escape(&self.x_label),
                    fmt(self.xs[i]),
                    html_escape(&self.y_label),
                    fmt(self.ys[j]),
                    html_escape(&what)
                );
            }
        }
        s.push_str("</g>");
        let _ = write!(
            s,
            "<rect x=\"{left}\" y=\"{top}\" width=\"{pw}\" height=\"{ph}\" fill=\"none\" stroke=\"#333\"/>"
        );
        // Ticks: the first, middle and last of each axis (the page's script
        // draws its own when zoomed).
        s.push_str("<g class=\"kl-ticks\">");
        for i in [0, nx / 2, nx - 1] {
            let x = left + (i as f64 + 0.5) * cw;
            let _ = write!(
                s,
                "<text x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\" font-size=\"14\">{}</text>",
                top + ph + 18.0,
                fmt(self.xs[i])
            );
        }
        for j in [0, ny / 2, ny - 1] {
            let y = top + (ny - 1 - j) as f64 * ch + ch / 2.0 + 4.0;
            let _ = write!(
                s,
                "<text x=\"{:.1}\" y=\"{y:.1}\" text-anchor=\"end\" font-size=\"14\">{}</text>",
                left - 6.0,
                fmt(self.ys[j])
            );
        }
        s.push_str("</g>");
        let _ = write!(
            s,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" font-size=\"14\">{}</text>",
            left + pw / 2.0,
            h - 12.0,
            html_escape(&self.x_label)
        );
        let _ = write!(
            s,
            "<text transform=\"translate(18 {:.1}) rotate(-90)\" text-anchor=\"middle\" font-size=\"14\">{}</text>",
            top + ph / 2.0,
            html_escape(&self.y_label)
        );
        // Legend or scale, right of the plot.
        let lx = left + pw + 20.0;
        if values.is_empty() {
            // Only the categories some cell has, in their order.
            let used = |k: usize| {
                self.cells
                    .iter()
                    .flatten()
                    .any(|c| matches!(c, MapCell::Category(i) if *i == k))
            };
            let shown = self.categories.iter().enumerate().filter(|(k, _)| used(*k));
            for (row, (k, name)) in shown.enumerate() {
                let y = top + 10.0 + row as f64 * 22.0;
                let _ = write!(
                    s,
                    "<rect x=\"{lx}\" y=\"{y}\" width=\"16\" height=\"16\" fill=\"{}\"/><text x=\"{}\" y=\"{}\" font-size=\"13\">{}</text>",
                    CATEGORY_COLORS[k % CATEGORY_COLORS.len()],
                    lx + 22.0,
                    y + 13.0,
                    html_escape(name)
                );
            }
        } else {
            let steps = 20;
            for k in 0..steps {
                let t = 1.0 - f64::from(k) / f64::from(steps - 1);
                let y = top + f64::from(k) * ph / f64::from(steps);
                let _ = write!(
                    s,
                    "<rect x=\"{lx}\" y=\"{y:.1}\" width=\"18\" height=\"{:.1}\" fill=\"{}\"/>",
                    ph / f64::from(steps) + 0.5,
                    ramp(t)
                );
            }
            for (t, v) in [(0.0, hi), (1.0, lo)] {
                let _ = write!(
                    s,
                    "<text x=\"{}\" y=\"{:.1}\" font-size=\"13\">{} {}</text>",
                    lx + 24.0,
                    top + t * ph + 4.0,
                    fmt(v),
                    html_escape(&self.unit)
                );
            }
        }
        s.push_str("</svg>");
        Ok(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_carry_their_values_and_bad_grids_are_refused() {
        let m = Heatmap {
            title: "T".into(),
            x_label: "W_P [us]".into(),
            y_label: "W_C [us]".into(),
            xs: vec![1.0, 2.0],
            ys: vec![1.0, 2.0, 3.0],
            cells: vec![
                vec![MapCell::Value(1.0), MapCell::Value(2.0)],
                vec![MapCell::Value(3.0), MapCell::Empty],
                vec![MapCell::Value(4.0), MapCell::Value(5.0)],
            ],
            categories: vec![],
            unit: "us".into(),
        };
        let svg = m.to_svg(600, 400).unwrap();
        assert_eq!(svg.matches("<title>").count(), 6);
        assert!(svg.contains("W_P [us] = 2.00, W_C [us] = 3.00: 5.00 us"));
        // For the page's script: the plot box, the grid, the cells in the
        // group a zoom moves, the ticks in theirs.
        assert!(svg.contains("class=\"kl-map\" data-plot=\"70 40 360 305\""));
        assert!(svg.contains("<metadata class=\"kl-data\">{&quot;xl&quot;:&quot;W_P [us]&quot;"));
        assert!(svg.contains("&quot;xs&quot;:[1.0,2.0]"));
        let zoom = svg.split("<g class=\"kl-zoom\">").nth(1).unwrap();
        let zoom = zoom.split("</g>").next().unwrap();
        assert_eq!(zoom.matches("<rect").count(), 6);
        assert!(svg.contains("<g class=\"kl-ticks\"><text"));
        let bad = Heatmap {
            cells: vec![vec![MapCell::Empty]],
            ..m
        };
        assert!(bad.to_svg(600, 400).is_err());
    }

    #[test]
    fn the_legend_names_only_the_categories_drawn() {
        let m = Heatmap {
            title: "regime".into(),
            x_label: "W_P [us]".into(),
            y_label: "W_C [us]".into(),
            xs: vec![1.0, 2.0],
            ys: vec![1.0],
            cells: vec![vec![MapCell::Category(2), MapCell::Category(0)]],
            categories: vec!["GP".into(), "FC".into(), "FP".into()],
            unit: String::new(),
        };
        let svg = m.to_svg(600, 400).unwrap();
        let legend = |name: &str| svg.contains(&format!("font-size=\"13\">{name}</text>"));
        assert!(legend("GP") && legend("FP"), "{svg}");
        assert!(!legend("FC"), "{svg}");
        // A category keeps its colour whatever else is drawn: FP's legend
        // box is FP's colour, though FP is the legend's second row.
        let entry = svg.find("font-size=\"13\">FP</text>").unwrap();
        let fill = svg[..entry].rfind("fill=\"").unwrap();
        let want = format!("fill=\"{}\"", CATEGORY_COLORS[2]);
        assert_eq!(&svg[fill..fill + want.len()], want, "{svg}");
    }
}
