//! A small chart description and its SVG rendering.

use plotters::prelude::*;

use crate::ReportError;

/// How a series is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// A solid line.
    Line,
    /// A thick solid line.
    Thick,
    /// A dashed line.
    Dashed,
    /// Markers only.
    Points,
}

/// One named series of `(x, y)` points.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// Legend text.
    pub name: String,
    /// The points.
    pub points: Vec<(f64, f64)>,
    /// Line or markers.
    pub style: Style,
}

/// A labelled vertical line (a regime boundary).
#[derive(Debug, Clone, PartialEq)]
pub struct Mark {
    /// Where, on the x axis.
    pub x: f64,
    /// Text at the top of the line.
    pub label: String,
}

/// A line chart.
#[derive(Debug, Clone, PartialEq)]
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
}

const PALETTE: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
    RGBColor(255, 127, 14),
    RGBColor(23, 190, 207),
    RGBColor(140, 86, 75),
    RGBColor(127, 127, 127),
];

impl Chart {
    /// Renders the chart as an SVG document of `width` x `height` pixels.
    ///
    /// # Errors
    ///
    /// [`ReportError::Draw`] if plotters fails.
    pub fn to_svg(&self, width: u32, height: u32) -> Result<String, ReportError> {
        let mut out = String::new();
        self.draw(&mut out, width, height)
            .map_err(|e| ReportError::Draw(self.title.clone(), e.to_string()))?;
        Ok(out)
    }

    fn draw(
        &self,
        out: &mut String,
        width: u32,
        height: u32,
    ) -> Result<(), Box<dyn std::error::Error + '_>> {
        let pts = || {
            self.series
                .iter()
                .flat_map(|s| s.points.iter())
                .filter(|(x, y)| x.is_finite() && y.is_finite())
        };
        let (mut x0, mut x1) = pts().fold((f64::MAX, f64::MIN), |(a, b), (x, _)| {
            (a.min(*x), b.max(*x))
        });
        if x0 > x1 {
            (x0, x1) = (0.0, 1.0);
        }
        if x0 == x1 {
            (x0, x1) = (x0 - 0.5, x1 + 0.5);
        }
        let (y0, y1) = self.y_range.unwrap_or_else(|| {
            let top = pts().map(|(_, y)| *y).fold(0.0f64, f64::max);
            // Headroom for the legend above the curves.
            (0.0, if top > 0.0 { top * 1.4 } else { 1.0 })
        });
        let root = SVGBackend::with_string(out, (width, height)).into_drawing_area();
        root.fill(&WHITE)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(&self.title, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(42)
            .y_label_area_size(60)
            .build_cartesian_2d(x0..x1, y0..y1)?;
        chart
            .configure_mesh()
            .x_desc(&self.x_label)
            .y_desc(&self.y_label)
            .light_line_style(RGBColor(235, 235, 235))
            .draw()?;
        for m in &self.marks {
            let grey = RGBColor(150, 150, 150);
            chart.draw_series(DashedLineSeries::new(
                vec![(m.x, y0), (m.x, y1)],
                4,
                4,
                grey.stroke_width(1),
            ))?;
            chart.draw_series(std::iter::once(Text::new(
                m.label.clone(),
                (m.x + (x1 - x0) * 0.004, y1 - (y1 - y0) * 0.02),
                ("sans-serif", 11).into_font().color(&RGBColor(90, 90, 90)),
            )))?;
        }
        for (i, s) in self.series.iter().enumerate() {
            let color = PALETTE[i % PALETTE.len()];
            let data: Vec<(f64, f64)> = s
                .points
                .iter()
                .copied()
                .filter(|(x, y)| x.is_finite() && y.is_finite())
                .collect();
            let anno = match s.style {
                Style::Line => chart.draw_series(LineSeries::new(data, color.stroke_width(1)))?,
                Style::Thick => chart.draw_series(LineSeries::new(data, color.stroke_width(3)))?,
                Style::Dashed => {
                    chart.draw_series(DashedLineSeries::new(data, 6, 4, color.stroke_width(2)))?
                }
                Style::Points => chart
                    .draw_series(data.into_iter().map(|p| Circle::new(p, 2, color.filled())))?,
            };
            anno.label(&s.name).legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(3))
            });
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.85))
            .border_style(RGBColor(200, 200, 200))
            .draw()?;
        root.present()?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_series_marks_and_labels() {
        let c = Chart {
            title: "T vs W_P".into(),
            x_label: "W_P [us]".into(),
            y_label: "T [us]".into(),
            series: vec![
                Series {
                    name: "model".into(),
                    points: vec![(0.0, 1.0), (1.0, 2.0)],
                    style: Style::Line,
                },
                Series {
                    name: "sim".into(),
                    points: vec![(0.0, 1.0), (1.0, f64::NAN)],
                    style: Style::Points,
                },
            ],
            marks: vec![Mark {
                x: 0.5,
                label: "FC".into(),
            }],
            y_range: None,
        };
        let svg = c.to_svg(400, 300).unwrap();
        assert!(svg.starts_with("<svg"));
        for text in ["T vs W_P", "W_P [us]", "model", "sim", "FC"] {
            assert!(svg.contains(text), "missing {text}");
        }
    }
}
