//! The HTML page: sections of text, tables and inline SVG figures, written
//! as one self-contained `index.html` plus the SVG files beside it. What
//! does not live here: drawing charts (`chart`) or rendering tables
//! (`table`).

use std::fmt::Write as _;
use std::path::Path;

use crate::paragraphs::{cut_long_paragraphs, fold_repeats, Printed};
use crate::{write_atomic, Chart, ReportError, Table};

/// The page's script: values on hover and zoom for every chart
/// (`interact.js`, inlined: the page needs no network).
pub const INTERACT_JS: &str = include_str!("interact.js");

/// How much of a section the page shows before a click.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Layout {
    /// Its first paragraph (the result) and its first figure; the rest
    /// (method, tables, more charts) in a closed `<details>` below them.
    #[default]
    Summary,
    /// Its first paragraph only; everything else, figures too, one click
    /// away (a part of the page the reader may skip).
    Lead,
    /// Everything (a section that is itself the tool, such as the
    /// explorer, or one already short).
    Open,
}

/// One section of the page.
#[derive(Debug, Clone, Default)]
pub struct Section {
    /// Anchor id.
    pub id: String,
    /// Heading text.
    pub heading: String,
    /// HTML body (paragraphs, tables), inserted as is.
    pub html: String,
    /// Figures: `(file stem, svg, caption)`.
    pub figures: Vec<(String, String, String)>,
    /// What the page shows before a click.
    pub layout: Layout,
}

impl Section {
    /// An empty section.
    pub fn new(id: &str, heading: &str) -> Self {
        Section {
            id: id.into(),
            heading: heading.into(),
            ..Section::default()
        }
    }

    /// The same section, shown whole ([`Layout::Open`]).
    #[must_use]
    pub fn open(self) -> Self {
        Section {
            layout: Layout::Open,
            ..self
        }
    }

    /// The same section with this layout.
    #[must_use]
    pub fn with_layout(self, layout: Layout) -> Self {
        Section { layout, ..self }
    }

    /// Appends `table` (as HTML, in its scrollable wrapper) to the body.
    pub fn push_table(&mut self, table: &Table) {
        self.html.push_str(&table.to_html());
    }

    /// Appends `chart` as figure `stem` (`stem.svg` beside the page),
    /// `width` x `height` pixels, captioned with [`Chart::caption`] so the
    /// caption names the chart's own metric.
    ///
    /// # Errors
    ///
    /// [`ReportError::Draw`] if the chart cannot be drawn.
    pub fn push_chart(
        &mut self,
        stem: &str,
        chart: &Chart,
        width: u32,
        height: u32,
    ) -> Result<(), ReportError> {
        self.figures
            .push((stem.into(), chart.to_svg(width, height)?, chart.caption()));
        Ok(())
    }
}

/// The report page.
#[derive(Debug, Clone, Default)]
pub struct Page {
    /// Title.
    pub title: String,
    /// HTML under the title.
    pub intro_html: String,
    /// Sections in order.
    pub sections: Vec<Section>,
}

/// Escapes `&`, `<`, `>` and `"` for HTML text and attributes.
pub fn html_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A figure as the page shows it: the SVG, its caption and a link to its
/// file.
fn figure_html(stem: &str, svg: &str, caption: &str) -> String {
    format!(
        "<figure id=\"fig-{stem}\">{svg}<figcaption>{} (<a href=\"{stem}.svg\">{stem}.svg</a>)</figcaption></figure>\n",
        html_escape(caption)
    )
}

/// `html` split after its first paragraph, if it opens with one:
/// `(lead, rest)`.
fn split_lead(html: &str) -> (&str, &str) {
    let t = html.trim_start();
    let opens_with_p = t.starts_with("<p>") || t.starts_with("<p ");
    match t.find("</p>") {
        Some(end) if opens_with_p => t.split_at(end + "</p>".len()),
        _ => ("", t),
    }
}

/// What a closed block holds, in words: `the method, 2 tables and 3
/// more charts`.
fn more_summary(rest: &str, charts: usize) -> String {
    let tables = rest.matches("<table").count() - rest.matches("kl-wide").count();
    let mut parts = Vec::new();
    if rest.contains("<p") || rest.contains("<ul") || rest.contains("<pre") {
        parts.push("the method and details".to_string());
    }
    let plural = |n: usize, one: &str| {
        if n == 1 {
            format!("1 {one}")
        } else {
            format!("{n} {one}s")
        }
    };
    if tables > 0 {
        parts.push(plural(tables, "table"));
    }
    if charts > 0 {
        parts.push(plural(charts, "more chart"));
    }
    match parts.len() {
        0 => "More".into(),
        1 => format!("More: {}", parts[0]),
        n => format!("More: {} and {}", parts[..n - 1].join(", "), parts[n - 1]),
    }
}

impl Section {
    /// Writes the body after the heading: all of it ([`Layout::Open`]),
    /// or the lead paragraph (and first figure, [`Layout::Summary`]) with
    /// the rest in a closed `<details class="kl-more">`.
    fn body_to(&self, h: &mut String, printed: &mut Printed) {
        let body = cut_long_paragraphs(&fold_repeats(
            &self.html,
            (&self.id, &self.heading),
            printed,
        ));
        let figures = self
            .figures
            .iter()
            .map(|(stem, svg, c)| figure_html(stem, svg, c));
        let (lead, rest) = match self.layout {
            Layout::Open => (body.as_str(), ""),
            Layout::Summary | Layout::Lead => split_lead(&body),
        };
        h.push_str(lead);
        h.push('\n');
        let (shown, more): (Vec<_>, Vec<_>) =
            figures.enumerate().partition(|(i, _)| match self.layout {
                Layout::Open => true,
                Layout::Summary => *i == 0,
                Layout::Lead => false,
            });
        for (_, f) in &shown {
            h.push_str(f);
        }
        if rest.trim().is_empty() && more.is_empty() {
            return;
        }
        let _ = write!(
            h,
            "<details class=\"kl-more\"><summary>{}</summary>\n{rest}\n",
            more_summary(rest, more.len())
        );
        for (_, f) in &more {
            h.push_str(f);
        }
        h.push_str("</details>\n");
    }
}

/// Plain text as HTML: escaped, and each `` `span` `` a `<code>` element
/// (texts shared with the command line write code as Markdown does).
pub fn text_html(text: &str) -> String {
    html_escape(text)
        .split('`')
        .enumerate()
        .map(|(i, part)| {
            if i % 2 == 1 {
                format!("<code>{part}</code>")
            } else {
                part.to_string()
            }
        })
        .collect()
}

impl Page {
    /// Renders `index.html`.
    pub fn to_html(&self) -> String {
        let mut h = String::new();
        let _ = write!(
            h,
            "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
             <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>{t}</title>\n<style>\n\
             body{{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222;line-height:1.45}}\n\
             h1{{font-size:1.6em}} h2{{border-bottom:1px solid #ddd;padding-bottom:.2em;margin-top:2em}}\n\
             table{{border-collapse:collapse;margin:1em 0;font-size:.92em}} td,th{{border:1px solid #ccc;padding:.25em .6em;text-align:right}}\n\
             th{{background:#f4f4f4}} td.l,th.l{{text-align:left}} figure{{margin:1em 0}} figcaption{{font-size:.9em;color:#555}}\n\
             code,pre{{background:#f6f6f6;padding:.1em .3em}} pre{{overflow-x:auto}} nav a{{margin-right:1em}}\n\
             svg,img{{max-width:100%;height:auto}} .table-wrap{{max-width:100%;overflow-x:auto}} caption{{text-align:left;font-weight:600}}\n\
             section>table{{display:block;max-width:100%;overflow-x:auto}} td.flag{{background:#fde2e2;color:#a00;font-weight:600}}\n\
             code{{overflow-wrap:anywhere}} figure svg{{display:block}} .kl-hint{{font-size:.9em;color:#555}}\n\
             .kl-tip{{position:absolute;z-index:10;display:none;pointer-events:none;background:#fff;border:1px solid #888;\
             border-radius:4px;padding:.3em .55em;font-size:14px;line-height:1.35;box-shadow:0 1px 5px rgba(0,0,0,.25);max-width:24em}}\n\
             svg.kl-chart,svg.kl-map{{cursor:crosshair;user-select:none}} .kl-reset{{cursor:pointer}}\n\
             details.kl-more,details.kl-wide{{margin:.6em 0}} details.kl-more>summary,details.kl-wide>summary{{cursor:pointer;color:#1a5fb4}}\n\
             pre{{white-space:pre-wrap;overflow-wrap:anywhere}} a.kl-term{{color:inherit;text-decoration:underline dotted}}\n\
             </style>\n<script>\n{js}</script></head><body>\n<h1>{t}</h1>\n{intro}\n\
             <p class=\"kl-hint\">Charts: hover for values; drag a box over a plot to zoom (a flat box zooms x only), \
             double-click to zoom back out.</p>\n<nav>",
            t = html_escape(&self.title),
            intro = self.intro_html,
            js = INTERACT_JS
        );
        for s in &self.sections {
            let _ = write!(h, "<a href=\"#{}\">{}</a>", s.id, html_escape(&s.heading));
        }
        h.push_str("</nav>\n");
        let mut printed = Printed::new();
        for s in &self.sections {
            let _ = writeln!(
                h,
                "<section id=\"{}\"><h2>{}</h2>",
                s.id,
                html_escape(&s.heading)
            );
            s.body_to(&mut h, &mut printed);
            h.push_str("</section>\n");
        }
        h.push_str("</body></html>\n");
        h
    }

    /// Writes `index.html` and one `<stem>.svg` per figure into `dir`,
    /// each with [`write_atomic`]: SVGs first, the page last. `dir` must
    /// exist (an output folder being staged): it is never made here, so
    /// that a folder a signal's clean-up removed is not made again.
    ///
    /// # Errors
    ///
    /// [`ReportError::Io`] naming the file that failed.
    pub fn write(&self, dir: &Path) -> Result<(), ReportError> {
        for s in &self.sections {
            for (stem, svg, _) in &s.figures {
                write_atomic(&dir.join(format!("{stem}.svg")), svg)?;
            }
        }
        write_atomic(&dir.join("index.html"), self.to_html())
    }

    /// [`Page::write`], then each `(file name, content)` of `files` (CSV,
    /// JSON) into `dir` with [`write_atomic`].
    ///
    /// # Errors
    ///
    /// [`ReportError::Io`] naming the file that failed.
    pub fn write_with(&self, dir: &Path, files: &[(String, String)]) -> Result<(), ReportError> {
        self.write(dir)?;
        for (name, content) in files {
            write_atomic(&dir.join(name), content)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_links_sections_and_escapes() {
        let p = Page {
            title: "a <b>".into(),
            intro_html: "<p>hi</p>".into(),
            sections: vec![Section {
                id: "s1".into(),
                heading: "One & two".into(),
                html: "<p>x</p>".into(),
                figures: vec![("f".into(), "<svg></svg>".into(), "cap".into())],
                layout: Layout::Summary,
            }],
        };
        let h = p.to_html();
        assert!(h.contains("<title>a &lt;b&gt;</title>"));
        assert!(h.contains("href=\"#s1\""));
        assert!(h.contains("One &amp; two"));
        assert!(h.contains("<svg></svg><figcaption>cap"));
    }

    /// Charts and tables fit a 700 px window: SVGs scale down, tables
    /// scroll sideways.
    #[test]
    fn page_is_responsive() {
        let mut s = Section::new("s", "S");
        let mut t = Table::new("t", vec![crate::Column::text("a", "A")]);
        t.push(vec!["x".into()]);
        s.push_table(&t);
        s.push_chart("c", &Chart::default(), 400, 300).unwrap();
        let h = Page {
            title: "p".into(),
            sections: vec![s],
            ..Page::default()
        }
        .to_html();
        assert!(h.contains("name=\"viewport\""));
        assert!(h.contains("svg,img{max-width:100%;height:auto}"));
        assert!(h.contains(".table-wrap{max-width:100%;overflow-x:auto}"));
        assert!(h.contains("<div class=\"table-wrap\"><table>"));
        assert!(h.contains("style=\"max-width:100%;height:auto\""));
    }

    /// A summary section shows its first paragraph and first figure; the
    /// rest is one click away, and an open one shows everything.
    #[test]
    fn a_summary_shows_the_lead_and_first_figure_and_folds_the_rest() {
        let fig = |n: &str| (n.to_string(), format!("<svg>{n}</svg>"), n.to_string());
        let s = Section {
            id: "s".into(),
            heading: "S".into(),
            html: "<p>The result.</p><p>How.</p><div class=\"table-wrap\"><table></table></div>"
                .into(),
            figures: vec![fig("a"), fig("b"), fig("c")],
            layout: Layout::Summary,
        };
        let h = Page {
            sections: vec![s.clone()],
            ..Page::default()
        }
        .to_html();
        let body = &h[h.find("<section").unwrap()..];
        let (before, after) = body.split_once("<details class=\"kl-more\">").unwrap();
        assert!(before.contains("<p>The result.</p>") && before.contains("<svg>a</svg>"));
        assert!(!before.contains("How.") && !before.contains("<svg>b</svg>"));
        assert!(after.starts_with(
            "<summary>More: the method and details, 1 table and 2 more charts</summary>"
        ));
        assert!(
            after.contains("How.")
                && after.contains("<svg>b</svg>")
                && after.contains("<svg>c</svg>")
        );
        let h = Page {
            sections: vec![s.open()],
            ..Page::default()
        }
        .to_html();
        assert!(!h.contains("<details class=\"kl-more\">"));
        assert!(h.contains("How.") && h.contains("<svg>c</svg>"));
    }

    #[test]
    fn code_spans_in_text_become_code() {
        assert_eq!(
            text_html("halts with `sti; hlt` <here>"),
            "halts with <code>sti; hlt</code> &lt;here&gt;"
        );
        assert_eq!(text_html("no code"), "no code");
    }

    /// The page carries its script (hover and zoom) inline, and loads
    /// nothing from elsewhere.
    #[test]
    fn the_script_is_inline() {
        let h = Page::default().to_html();
        assert!(h.contains(INTERACT_JS));
        assert!(INTERACT_JS.contains("window.kicklabCharts"));
        assert!(!INTERACT_JS.contains("</script"));
        assert!(!h.contains(" src=") && !h.contains("<link"));
        assert!(h.contains(".kl-tip{"));
    }

    #[test]
    fn write_with_puts_page_figures_and_files_in_place() {
        let dir = std::env::temp_dir().join(format!("kicklab-page-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let mut s = Section::new("s", "S");
        s.push_chart("fig", &Chart::default(), 300, 200).unwrap();
        let p = Page {
            sections: vec![s.clone()],
            ..Page::default()
        };
        // A missing folder is not made: it may be one a signal removed.
        assert!(p.write(&dir).is_err());
        assert!(!dir.exists());
        std::fs::create_dir(&dir).unwrap();
        let p = Page {
            sections: vec![s],
            ..Page::default()
        };
        p.write_with(&dir, &[("d.csv".into(), "a\n1\n".into())])
            .unwrap();
        let mut names: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names, ["d.csv", "fig.svg", "index.html"]);
        assert!(std::fs::read_to_string(dir.join("fig.svg"))
            .unwrap()
            .ends_with("</svg>\n"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
