//! The charts' tests: layout, ticks, clipping, the SVG's contents.

use super::*;

fn two_series() -> Chart {
    Chart {
        title: "T vs W_P".into(),
        x_label: "W_P [us]".into(),
        y_label: "T [us]".into(),
        series: vec![
            Series {
                name: "model".into(),
                points: vec![(0.0, 1.0), (1.0, 2.0)],
                style: Style::Line,
                ..Series::default()
            },
            Series {
                name: "sim".into(),
                points: vec![(0.0, 1.0), (1.0, f64::NAN)],
                style: Style::Points,
                ..Series::default()
            },
        ],
        marks: vec![Mark {
            x: 0.5,
            label: "FC".into(),
        }],
        ..Chart::default()
    }
}

#[test]
fn renders_series_marks_and_labels() {
    let svg = two_series().to_svg(400, 300).unwrap();
    assert!(svg.starts_with("<svg"));
    assert!(svg.trim_end().ends_with("</svg>"));
    for text in ["T vs W_P", "W_P [us]", "model", "sim", "FC"] {
        assert!(svg.contains(text), "missing {text}");
    }
    assert!(!svg.contains("NaN"));
}

/// The legend entries' glyphs are what the series are drawn with.
#[test]
fn legend_glyphs_match_the_styles() {
    let mut c = two_series();
    c.series.push(Series {
        name: "dashed".into(),
        points: vec![(0.0, 1.5), (1.0, 1.5)],
        style: Style::Dashed,
        ..Series::default()
    });
    c.series.push(Series {
        name: "thick".into(),
        points: vec![(0.0, 0.5), (1.0, 0.5)],
        style: Style::Thick,
        ..Series::default()
    });
    let svg = c.to_svg(600, 400).unwrap();
    let entry = |name: &str| {
        svg.lines()
            .find(|l| l.starts_with("<g class=\"entry\">") && l.contains(&format!(">{name}<")))
            .unwrap_or_else(|| panic!("no legend entry {name}"))
            .to_string()
    };
    assert!(entry("sim").contains("<circle"));
    assert!(!entry("sim").contains("<line"));
    assert!(entry("dashed").contains("stroke-dasharray=\"7 4\""));
    assert!(entry("thick").contains("stroke-width=\"3.5\""));
    assert!(entry("model").contains("stroke-width=\"1.6\""));
    // The series themselves use the same attributes.
    assert!(svg.contains("stroke-dasharray=\"7 4\"/>"));
    assert!(svg.contains("stroke-width=\"3.5\"/>"));
}

#[test]
fn legend_covers_no_label_and_no_plot() {
    let mut c = two_series();
    c.bands = vec![
        Band {
            x0: 0.0,
            x1: 0.05,
            label: "SS".into(),
        },
        Band {
            x0: 0.05,
            x1: 0.1,
            label: "SPS".into(),
        },
        Band {
            x0: 0.1,
            x1: 1.0,
            label: "FP".into(),
        },
    ];
    for (w, h) in [(960, 540), (500, 400)] {
        let l = c.layout(w, h);
        assert_eq!(l.labels.len(), 4);
        for (text, r) in &l.labels {
            assert!(!l.legend.intersects(r), "legend covers {text}");
            assert!(!l.plot.intersects(r), "{text} inside the plot");
        }
        // Labels do not cover each other (narrow bands go to a second row).
        for (i, a) in l.labels.iter().enumerate() {
            for b in &l.labels[i + 1..] {
                assert!(!a.1.intersects(&b.1), "{} covers {}", a.0, b.0);
            }
        }
        assert!(!l.legend.intersects(&l.plot));
        assert!(l.legend.y + l.legend.h <= f64::from(h));
    }
}

#[test]
fn ticks_are_round_and_readable() {
    let (t, step) = nice_ticks(0.0, 7.3, 6);
    assert_eq!(step, 2.0);
    assert_eq!(t, [0.0, 2.0, 4.0, 6.0]);
    assert_eq!(tick_label(0.5, 0.25), "0.50");
    assert_eq!(tick_label(2.0, 0.5), "2.0");
    assert_eq!(tick_label(20.0, 10.0), "20");
    let svg = two_series().to_svg(960, 540).unwrap();
    for l in svg.lines().filter(|l| l.contains("class=\"tick\"")) {
        let px: f64 = l.split("font-size=\"").nth(1).unwrap()
            [..l.split("font-size=\"").nth(1).unwrap().find('"').unwrap()]
            .parse()
            .unwrap();
        assert!(px >= 12.0, "{l}");
    }
    assert!(svg.contains("max-width:100%"));
}

/// What the page's script reads: the plot box, the data (finite
/// points, 6 significant digits) and the groups it moves or redraws.
#[test]
fn the_svg_carries_its_data_for_hover_and_zoom() {
    let mut c = two_series();
    c.series[0].points.push((2.0, 1.234_567_89));
    let svg = c.to_svg(720, 480).unwrap();
    let l = c.layout(720, 480);
    assert!(svg.contains(&format!(
        "class=\"kl-chart\" data-plot=\"{:.1} {:.1} {:.1} {:.1}\"",
        l.plot.x, l.plot.y, l.plot.w, l.plot.h
    )));
    let meta = svg
        .split("<metadata class=\"kl-data\">")
        .nth(1)
        .unwrap()
        .split("</metadata>")
        .next()
        .unwrap()
        .replace("&quot;", "\"");
    let m: serde_json::Value = serde_json::from_str(&meta).unwrap();
    assert_eq!(m["xl"], "W_P [us]");
    assert_eq!(m["x"][0].as_f64().unwrap(), l.x.0);
    assert_eq!(m["y"][1].as_f64().unwrap(), l.y.1);
    assert_eq!(m["s"][0]["n"], "model");
    assert_eq!(m["s"][0]["c"], PALETTE[0]);
    assert_eq!(m["s"][0]["p"][2][1].as_f64().unwrap(), 1.23457);
    // The NaN of "sim" is left out.
    assert_eq!(m["s"][1]["p"].as_array().unwrap().len(), 1);
    // Ticks, moving parts and labels in their groups, in that order.
    let (t, z, lb) = (
        svg.find("<g class=\"kl-ticks\">").unwrap(),
        svg.find("<g class=\"kl-zoom\">").unwrap(),
        svg.find("<g class=\"kl-labels\">").unwrap(),
    );
    assert!(t < z && z < lb);
    assert!(svg[z..lb].contains("<polyline") && svg[z..lb].contains("<circle"));
    assert!(svg[lb..].contains(">FC</text>"));
    assert!(!svg[t..z].contains("polyline"));
}

#[test]
fn six_significant_digits() {
    assert_eq!(sig6(1.234_567_89), 1.23457);
    assert_eq!(sig6(123_456_789.0), 123_457_000.0);
    assert_eq!(sig6(-0.000_123_456_78), -0.000_123_457);
    assert_eq!(sig6(0.0), 0.0);
    assert_eq!(sig6(1e-310), 1e-310);
}

/// A long clipping note is wrapped inside the figure, below the
/// legend and above the bottom edge.
#[test]
fn long_notes_wrap_inside_the_figure() {
    assert_eq!(wrap("aa bb cc", 5.0 * 6.0, 10.0), ["aa bb", "cc"]);
    assert_eq!(wrap("", 10.0, 10.0), [""]);
    assert_eq!(wrap("toolongword x", 10.0, 10.0), ["toolongword", "x"]);
    let series = (0..6)
        .map(|i| Series {
            name: format!("a rather long series name {i}"),
            points: vec![(0.0, 1.0), (1.0, if i == 5 { 500.0 } else { 2.0 })],
            ..Series::default()
        })
        .collect();
    let c = Chart {
        series,
        ..Chart::default()
    };
    let svg = c.to_svg(FIG_W, FIG_H).unwrap();
    let notes: Vec<&str> = svg
        .lines()
        .filter(|l| l.contains("class=\"note\""))
        .collect();
    assert!(notes.len() >= 2, "{notes:?}");
    let l = c.layout(FIG_W, FIG_H);
    for n in notes {
        let text = n.split('>').nth(1).unwrap().split('<').next().unwrap();
        assert!(
            l.plot.x + text_w(text, LEGEND_PX) <= f64::from(FIG_W),
            "{text}"
        );
        let y: f64 = n
            .split("y=\"")
            .nth(1)
            .unwrap()
            .split('"')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert!(y > l.legend.y + l.legend.h && y <= f64::from(FIG_H), "{n}");
    }
}

#[test]
fn one_huge_series_is_clipped_with_a_note() {
    let flat = |name: &str, y: f64| Series {
        name: name.into(),
        points: (0..5).map(|i| (f64::from(i), y)).collect(),
        style: Style::Line,
        ..Series::default()
    };
    let mut huge = flat("measured, poll", 2.0);
    huge.points[3].1 = 400.0;
    huge.style = Style::Points;
    let mut c = Chart {
        series: vec![flat("a", 3.0), flat("b", 4.0), flat("c", 5.0), huge],
        ..Chart::default()
    };
    let l = c.layout(960, 540);
    assert!(l.y.1 < 10.0, "{:?}", l.y);
    let note = l.note.unwrap();
    assert!(note.contains("measured, poll (up to 400)"), "{note}");
    let svg = c.to_svg(960, 540).unwrap();
    assert!(svg.contains("class=\"note\""));
    assert!(svg.contains("l4 7h-8z"), "an off-scale marker");
    // Off: the axis covers it. A given max: cut there.
    c.clip = Clip::Off;
    assert!(c.layout(960, 540).y.1 >= 400.0);
    c.clip = Clip::Above(4.5);
    let l = c.layout(960, 540);
    assert!((l.y.1 - 4.5).abs() < 1e-9);
    assert!(l.note.unwrap().contains("c (up to 5)"));
    // No outlier: no clipping.
    let c = Chart {
        series: vec![flat("a", 3.0), flat("b", 4.0)],
        ..Chart::default()
    };
    assert!(c.layout(960, 540).note.is_none());
}

#[test]
fn log_axis_spans_decades() {
    let c = Chart {
        series: vec![Series {
            name: "s".into(),
            points: vec![(0.0, 0.5), (1.0, 300.0), (2.0, 0.0)],
            style: Style::Line,
            ..Series::default()
        }],
        y_scale: YScale::Log,
        clip: Clip::Off,
        ..Chart::default()
    };
    let l = c.layout(960, 540);
    assert_eq!(l.y, (-1.0, 3.0));
    let svg = c.to_svg(960, 540).unwrap();
    assert!(svg.contains(">1000</text>") && svg.contains(">0.1</text>"));
    assert!(svg.contains("(log scale)"));
}

/// Auto: a log axis where the data span decades, linear where they do
/// not or where a value is not positive.
#[test]
fn auto_scale_is_log_only_for_positive_data_over_decades() {
    let chart = |ys: &[f64]| Chart {
        series: vec![Series {
            name: "s".into(),
            points: ys.iter().enumerate().map(|(i, y)| (i as f64, *y)).collect(),
            ..Series::default()
        }],
        y_scale: YScale::Auto,
        clip: Clip::Off,
        ..Chart::default()
    };
    assert!(chart(&[1.0, 2.0, 50.0]).layout(720, 480).log);
    assert!(!chart(&[1.0, 2.0, 19.0]).layout(720, 480).log);
    assert!(!chart(&[0.0, 2.0, 500.0]).layout(720, 480).log);
    assert!(chart(&[1.0, 50.0])
        .to_svg(720, 480)
        .unwrap()
        .contains("(log scale)"));
}

/// A fitted axis spans the data and a tenth more each way, not from 0.
#[test]
fn a_fitted_axis_spans_the_data() {
    let c = Chart {
        series: vec![Series {
            name: "s".into(),
            points: vec![(0.0, 10.0), (1.0, 12.0)],
            ..Series::default()
        }],
        ..Chart::default()
    }
    .with_fitted_y();
    assert_eq!(c.y_range, Some((9.8, 12.2)));
    let l = c.layout(720, 480);
    assert!(
        (l.y.0 - 9.8).abs() < 1e-12 && (l.y.1 - 12.2).abs() < 1e-12,
        "{:?}",
        l.y
    );
}

#[test]
fn lines_are_cut_at_the_axis_bounds() {
    let r = clip_runs(&[(0.0, 1.0), (1.0, 3.0), (2.0, 1.0)], 0.0, 2.0);
    assert_eq!(
        r,
        vec![vec![(0.0, 1.0), (0.5, 2.0)], vec![(1.5, 2.0), (2.0, 1.0)]]
    );
}

/// Error bars: one per bar, from `lo` to `hi` in the series' colour,
/// counted in the y range; cut at the top when clipped, without a cap
/// there.
#[test]
fn error_bars_span_lo_to_hi() {
    let mut c = two_series();
    c.series[0].error_bars = vec![
        ErrorBar {
            x: 0.0,
            lo: 0.5,
            hi: 1.5,
        },
        ErrorBar {
            x: 1.0,
            lo: 1.8,
            hi: 6.0,
        },
    ];
    let l = c.layout(960, 540);
    assert!(l.y.1 >= 6.0, "the y range covers the bars: {:?}", l.y);
    let svg = c.to_svg(960, 540).unwrap();
    let bars: Vec<&str> = svg
        .lines()
        .filter(|l| l.contains("class=\"errbar\""))
        .collect();
    assert_eq!(bars.len(), 2, "{svg}");
    assert!(bars.iter().all(|b| b.contains(PALETTE[0])));
    // The first bar: a vertical line at x = 0 from y = 0.5 to 1.5, and
    // two caps.
    let (x, y0, y1) = (l.px(0.0), l.py_axis(0.5), l.py_axis(1.5));
    assert!(
        bars[0].contains(&format!(
            "<line x1=\"{x:.1}\" y1=\"{y0:.1}\" x2=\"{x:.1}\" y2=\"{y1:.1}\"/>"
        )),
        "{}",
        bars[0]
    );
    assert_eq!(bars[0].matches("<line").count(), 3);
    // Cut at a fixed top: the bar ends at the plot's edge, no cap there.
    c.y_range = Some((0.0, 3.0));
    let l = c.layout(960, 540);
    let svg = c.to_svg(960, 540).unwrap();
    let bar = svg
        .lines()
        .filter(|l| l.contains("class=\"errbar\""))
        .nth(1)
        .unwrap();
    assert!(bar.contains(&format!("y2=\"{:.1}\"", l.plot.y)), "{bar}");
    assert_eq!(bar.matches("<line").count(), 2, "{bar}");
    // A bar entirely off the axis is not drawn.
    c.y_range = Some((0.0, 1.0));
    c.series[0].error_bars[0].lo = 1.2;
    let svg = c.to_svg(960, 540).unwrap();
    assert_eq!(svg.matches("class=\"errbar\"").count(), 0);
}

#[test]
fn rings_mark_points_and_their_legend_entry() {
    let mut c = two_series();
    c.series.push(Series {
        name: "disturbed".into(),
        points: vec![(1.0, 2.0)],
        style: Style::Ring,
        ..Series::default()
    });
    let svg = c.to_svg(600, 400).unwrap();
    assert_eq!(
        svg.matches("class=\"ring\"").count(),
        2,
        "the point and the legend"
    );
    assert!(svg.contains(&format!(
        "fill=\"none\" stroke=\"{}\" stroke-width=\"2\"",
        PALETTE[2]
    )));
}

#[test]
fn caption_names_the_metric() {
    let c = two_series();
    assert_eq!(c.caption(), "T vs W_P (T [us] vs W_P [us])");
}

#[test]
fn a_log_x_axis_ticks_doublings_and_spaces_them_evenly() {
    assert_eq!(log_ticks(1.0, 16.0), [1.0, 2.0, 4.0, 8.0, 16.0]);
    assert_eq!(log_ticks(1.0, 1000.0).len(), 10, "1 to 512");
    assert_eq!(log_ticks(1.0, 4096.0), [1.0, 10.0, 100.0, 1000.0]);
    assert_eq!(
        log_ticks(0.01, 1e4),
        [0.01, 0.1, 1.0, 10.0, 100.0, 1e3, 1e4]
    );
    assert_eq!(
        log_ticks(3.0, 3.5),
        [3.0, 3.5],
        "no power between: the ends"
    );
    let chart = Chart {
        x_log: true,
        series: vec![Series {
            name: "measured".into(),
            points: vec![(1.0, 5.0), (2.0, 4.0), (4.0, 3.0), (16.0, 1.0)],
            style: Style::LinePoints,
            ..Series::default()
        }],
        ..Chart::default()
    };
    let l = chart.layout(FIG_W, FIG_H);
    let (a, b, c) = (l.px(1.0), l.px(2.0), l.px(4.0));
    assert!(((b - a) - (c - b)).abs() < 1e-9, "{a} {b} {c}");
    assert!((l.px(16.0) - (l.plot.x + l.plot.w)).abs() < 1e-9);
    let svg = chart.to_svg(FIG_W, FIG_H).unwrap();
    let ticks: Vec<&str> = svg
        .lines()
        .filter(|l| l.contains("class=\"tick\"") && l.contains("text-anchor=\"middle\""))
        .filter_map(|l| l.rsplit("\">").next()?.strip_suffix("</text>"))
        .collect();
    assert_eq!(ticks, ["1", "2", "4", "8", "16"], "{svg}");
    assert!(svg.contains("(log scale)"));
    // One marker per measured point, and one in the legend.
    assert_eq!(svg.matches("<circle").count(), 4 + 1, "{svg}");
    assert!(svg.contains("xlog&quot;:true"), "the page script is told");
}

#[test]
fn lines_drawn_on_one_another_are_named_in_the_note() {
    let line = |name: &str, ys: [f64; 3]| Series {
        name: name.into(),
        points: vec![(1.0, ys[0]), (2.0, ys[1]), (3.0, ys[2])],
        style: Style::Line,
        ..Series::default()
    };
    let chart = Chart {
        series: vec![
            line("poll", [1.0, 2.0, 3.0]),
            line("notify", [1.0, 4.0, 5.0]),
            line("defer", [1.005, 2.0, 2.99]),
            line("adaptive", [1.0, 2.0, 3.1]),
        ],
        ..Chart::default()
    };
    let l = chart.layout(FIG_W, FIG_H);
    assert_eq!(
        l.note.as_deref(),
        Some("On one line (within 1% at every point): poll, defer.")
    );
    assert!(chart.to_svg(FIG_W, FIG_H).unwrap().contains("poll, defer."));
    // Apart by more than 1% somewhere: no note.
    let apart = Chart {
        series: vec![line("a", [1.0, 2.0, 3.0]), line("b", [1.0, 2.0, 3.1])],
        ..Chart::default()
    };
    assert_eq!(apart.layout(FIG_W, FIG_H).note, None);
}
