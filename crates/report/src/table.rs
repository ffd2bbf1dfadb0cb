//! One table value rendered three ways: HTML (for the page), CSV (raw
//! values, units in the header) and JSON (an array of objects).
//!
//! On the page a value has at most `SHORT_DIGITS` (3) significant digits and a
//! table at most [`PAGE_COLUMNS`] columns; the whole table, every column
//! and the same rounding, is one click away, and the CSV and JSON keep
//! every digit.
//!
//! What lives here: the [`Table`] type and its renderings. What does not:
//! which tables a report contains (the callers build them).

use std::fmt::Write as _;

use kicklab_model::{fmt_ns_short, sig, SHORT_DIGITS as DIGITS};
use serde_json::{Map, Value};

use crate::page::html_escape;

/// What a column holds, and so how its cells are shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A time in ns: [`fmt_ns_short`] in HTML, the raw ns in CSV and JSON.
    Ns,
    /// A plain number.
    Number,
    /// Text (left-aligned in HTML).
    Text,
    /// A yes/no flag that calls for attention when set (a disturbed
    /// measurement): `true`/`false` in CSV and JSON; in HTML the set ones
    /// read `yes` in a highlighted cell (`td.flag`), the others `no`.
    Flag,
}

/// One column: its key (`name` and `unit`), its HTML heading and its kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Column {
    /// Machine name, e.g. `T_model`.
    pub name: String,
    /// Unit suffix of the key, e.g. `ns`; empty for none.
    pub unit: String,
    /// Heading in HTML, e.g. `T model`; the name if empty.
    pub label: String,
    /// How cells are shown.
    pub kind: Kind,
    /// Shown on the page when the table has more than [`PAGE_COLUMNS`]
    /// columns (see [`Column::on_page`]); every column is in the whole
    /// table, the CSV and the JSON.
    pub on_page: bool,
}

impl Column {
    /// A time column in ns: key `{name}_ns`.
    pub fn ns(name: &str, label: &str) -> Self {
        Column {
            name: name.into(),
            unit: "ns".into(),
            label: label.into(),
            kind: Kind::Ns,
            on_page: false,
        }
    }

    /// A plain number column without a unit.
    pub fn number(name: &str, label: &str) -> Self {
        Column {
            name: name.into(),
            unit: String::new(),
            label: label.into(),
            kind: Kind::Number,
            on_page: false,
        }
    }

    /// A flag column ([`Kind::Flag`]).
    pub fn flag(name: &str, label: &str) -> Self {
        Column {
            name: name.into(),
            unit: String::new(),
            label: label.into(),
            kind: Kind::Flag,
            on_page: false,
        }
    }

    /// A text column.
    pub fn text(name: &str, label: &str) -> Self {
        Column {
            name: name.into(),
            unit: String::new(),
            label: label.into(),
            kind: Kind::Text,
            on_page: false,
        }
    }

    /// This column among those a wide table shows on the page. A table
    /// with any column so marked shows those (at most [`PAGE_COLUMNS`]),
    /// else its first [`PAGE_COLUMNS`].
    #[must_use]
    pub fn on_page(mut self) -> Self {
        self.on_page = true;
        self
    }

    /// The key of CSV headers and JSON objects: `name_unit`, or `name`.
    pub fn key(&self) -> String {
        if self.unit.is_empty() {
            self.name.clone()
        } else {
            format!("{}_{}", self.name, self.unit)
        }
    }

    fn heading(&self) -> &str {
        if self.label.is_empty() {
            &self.name
        } else {
            &self.label
        }
    }
}

/// One cell.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    /// A number (a time in ns in an [`Kind::Ns`] column).
    Num(f64),
    /// Text.
    Text(String),
    /// Yes or no (a [`Kind::Flag`] column).
    Bool(bool),
    /// No value: empty in HTML and CSV, `null` in JSON.
    Empty,
}

impl From<f64> for Cell {
    fn from(v: f64) -> Self {
        Cell::Num(v)
    }
}

impl From<u64> for Cell {
    #[allow(clippy::cast_precision_loss)]
    fn from(v: u64) -> Self {
        Cell::Num(v as f64)
    }
}

impl From<u32> for Cell {
    fn from(v: u32) -> Self {
        Cell::Num(f64::from(v))
    }
}

impl From<bool> for Cell {
    fn from(v: bool) -> Self {
        Cell::Bool(v)
    }
}

impl From<&str> for Cell {
    fn from(v: &str) -> Self {
        Cell::Text(v.into())
    }
}

impl From<String> for Cell {
    fn from(v: String) -> Self {
        Cell::Text(v)
    }
}

impl<T: Into<Cell>> From<Option<T>> for Cell {
    fn from(v: Option<T>) -> Self {
        v.map_or(Cell::Empty, Into::into)
    }
}

/// A table: columns and rows of cells, one value for HTML, CSV and JSON.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Table {
    /// Caption above the table in HTML; not in CSV or JSON.
    pub title: String,
    /// The columns.
    pub columns: Vec<Column>,
    /// The rows, each as long as `columns` (shorter rows read as empty
    /// cells, extra cells are dropped).
    pub rows: Vec<Vec<Cell>>,
}

/// Columns a table shows on the page; a wider one shows its first
/// `PAGE_COLUMNS` (or those its caller marks with [`Column::on_page`]) and
/// the whole table in a block that opens on a click.
pub const PAGE_COLUMNS: usize = 8;

/// A plain number for people: whole numbers (counts) as they are, others
/// rounded to three significant digits, the whole part too (2301.6
/// reads 2300).
fn fmt_number(v: f64) -> String {
    if !v.is_finite() {
        return String::new();
    }
    if v.fract() == 0.0 && v.abs() < 1e15 {
        return format!("{v}");
    }
    #[allow(clippy::cast_possible_truncation)]
    let magnitude = v.abs().log10().floor() as i32;
    #[allow(clippy::cast_possible_wrap)]
    let whole = magnitude - (DIGITS as i32 - 1);
    if whole > 0 {
        let step = 10f64.powi(whole);
        return format!("{}", (v / step).round() * step);
    }
    sig(v, DIGITS)
}

/// Quotes a CSV field if it needs it (RFC 4180).
fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

impl Table {
    /// An empty table with these columns.
    pub fn new(title: &str, columns: Vec<Column>) -> Self {
        Table {
            title: title.into(),
            columns,
            rows: Vec::new(),
        }
    }

    /// Appends a row.
    pub fn push(&mut self, row: Vec<Cell>) {
        self.rows.push(row);
    }

    fn cells<'a>(&'a self, row: &'a [Cell]) -> impl Iterator<Item = (&'a Column, &'a Cell)> {
        self.columns
            .iter()
            .enumerate()
            .map(move |(i, c)| (c, row.get(i).unwrap_or(&Cell::Empty)))
    }

    /// The HTML table, in a horizontally scrollable `div.table-wrap`;
    /// every text escaped. A table of more than [`PAGE_COLUMNS`] columns
    /// shows that many on the page and the whole table in a closed
    /// `<details>` below them.
    pub fn to_html(&self) -> String {
        if self.columns.len() <= PAGE_COLUMNS {
            return self.html_of(&(0..self.columns.len()).collect::<Vec<_>>(), &self.title);
        }
        let marked: Vec<usize> = (0..self.columns.len())
            .filter(|&i| self.columns[i].on_page)
            .take(PAGE_COLUMNS)
            .collect();
        let shown = if marked.is_empty() {
            (0..PAGE_COLUMNS).collect()
        } else {
            marked
        };
        let all: Vec<usize> = (0..self.columns.len()).collect();
        format!(
            "{}<details class=\"kl-wide\"><summary>All {} columns</summary>{}</details>\n",
            self.html_of(&shown, &self.title),
            self.columns.len(),
            self.html_of(&all, "")
        )
    }

    /// The columns `shown` (indices) as an HTML table.
    fn html_of(&self, shown: &[usize], title: &str) -> String {
        let mut h = String::from("<div class=\"table-wrap\"><table>");
        if !title.is_empty() {
            let _ = write!(h, "<caption>{}</caption>", html_escape(title));
        }
        h.push_str("<thead><tr>");
        for c in shown.iter().map(|&i| &self.columns[i]) {
            let class = if c.kind == Kind::Text { " class=l" } else { "" };
            let _ = write!(h, "<th{class}>{}</th>", html_escape(c.heading()));
        }
        h.push_str("</tr></thead>\n<tbody>\n");
        for row in &self.rows {
            h.push_str("<tr>");
            for &i in shown {
                let c = &self.columns[i];
                let cell = row.get(i).unwrap_or(&Cell::Empty);
                let text = match (cell, c.kind) {
                    (Cell::Num(v), Kind::Ns) if v.is_finite() => fmt_ns_short(*v),
                    (Cell::Num(v), _) => fmt_number(*v),
                    (Cell::Text(t), _) => t.clone(),
                    (Cell::Bool(b), _) => (if *b { "yes" } else { "no" }).into(),
                    (Cell::Empty, _) => String::new(),
                };
                let class = match (c.kind, cell) {
                    (Kind::Text, _) => " class=l",
                    (_, Cell::Bool(true)) => " class=flag",
                    _ => "",
                };
                let _ = write!(h, "<td{class}>{}</td>", html_escape(&text));
            }
            h.push_str("</tr>\n");
        }
        h.push_str("</tbody></table></div>\n");
        h
    }

    /// CSV: a header of column keys (`T_model_ns`), then raw values (ns
    /// unformatted, full precision); one line per row.
    pub fn to_csv(&self) -> String {
        let mut s = self
            .columns
            .iter()
            .map(|c| csv_field(&c.key()))
            .collect::<Vec<_>>()
            .join(",");
        s.push('\n');
        for row in &self.rows {
            let line = self
                .cells(row)
                .map(|(_, cell)| match cell {
                    Cell::Num(v) if v.is_finite() => format!("{v}"),
                    Cell::Num(_) | Cell::Empty => String::new(),
                    Cell::Text(t) => csv_field(t),
                    Cell::Bool(b) => b.to_string(),
                })
                .collect::<Vec<_>>()
                .join(",");
            s.push_str(&line);
            s.push('\n');
        }
        s
    }

    /// JSON: an array with one object per row, keyed by the column keys;
    /// numbers raw (`null` if not finite or empty; whole numbers of a
    /// [`Kind::Number`] column as integers).
    pub fn to_json(&self) -> Value {
        Value::Array(
            self.rows
                .iter()
                .map(|row| {
                    let mut o = Map::new();
                    for (c, cell) in self.cells(row) {
                        let v = match cell {
                            // Counts as integers.
                            #[allow(clippy::cast_possible_truncation)]
                            Cell::Num(v)
                                if c.kind == Kind::Number && v.fract() == 0.0 && v.abs() < 9e15 =>
                            {
                                Value::from(*v as i64)
                            }
                            Cell::Num(v) => {
                                serde_json::Number::from_f64(*v).map_or(Value::Null, Value::Number)
                            }
                            Cell::Text(t) => Value::String(t.clone()),
                            Cell::Bool(b) => Value::Bool(*b),
                            Cell::Empty => Value::Null,
                        };
                        o.insert(c.key(), v);
                    }
                    Value::Object(o)
                })
                .collect(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_on_the_page_have_three_significant_digits_and_the_csv_all() {
        let mut t = Table::new("", vec![Column::ns("t", "t"), Column::number("x", "x")]);
        t.push(vec![53_430.2.into(), 2301.6.into()]);
        t.push(vec![75.5979.into(), 0.012_345.into()]);
        t.push(vec![1105.0.into(), 60_000u32.into()]);
        let h = t.to_html();
        for want in ["53.4us", "2300", "75.6ns", "0.0123", "1.11us", "60000"] {
            assert!(h.contains(&format!(">{want}</td>")), "{want}: {h}");
        }
        assert_eq!(
            t.to_csv(),
            "t_ns,x\n53430.2,2301.6\n75.5979,0.012345\n1105,60000\n"
        );
    }

    #[test]
    fn a_wide_table_shows_eight_columns_and_the_rest_on_a_click() {
        let columns: Vec<Column> = (0..12)
            .map(|i| {
                let c = Column::number(&format!("c{i}"), &format!("c{i}"));
                if i % 3 == 0 {
                    c.on_page()
                } else {
                    c
                }
            })
            .collect();
        let mut t = Table::new("wide", columns.clone());
        t.push((0..12).map(|i| f64::from(i).into()).collect());
        let h = t.to_html();
        let (page, rest) = h.split_once("<details").unwrap();
        assert_eq!(page.matches("</th>").count(), 4, "the marked ones: {page}");
        assert!(page.contains("<th>c9</th>") && !page.contains("<th>c1</th>"));
        assert!(rest.contains("<summary>All 12 columns</summary>"));
        assert_eq!(rest.matches("</th>").count(), 12);
        // Unmarked: the first eight.
        let unmarked = Table {
            columns: columns
                .into_iter()
                .map(|c| Column {
                    on_page: false,
                    ..c
                })
                .collect(),
            ..t
        };
        let h = unmarked.to_html();
        let page = h.split_once("<details").unwrap().0;
        assert_eq!(page.matches("</th>").count(), PAGE_COLUMNS);
        assert!(page.contains("<th>c7</th>") && !page.contains("<th>c8</th>"));
    }

    fn sample() -> Table {
        let mut t = Table::new(
            "Points <&>",
            vec![
                Column::ns("wp", "W_P"),
                Column::text("regime", "regime"),
                Column::number("m", "m"),
                Column::ns("T_model", "T model"),
            ],
        );
        t.push(vec![500.0.into(), "FP".into(), 3u32.into(), 1150.5.into()]);
        t.push(vec![
            2000.0.into(),
            "a, \"b\" <i>".into(),
            Cell::Empty,
            f64::NAN.into(),
        ]);
        t
    }

    #[test]
    fn html_formats_ns_and_escapes() {
        let h = sample().to_html();
        assert!(h.starts_with("<div class=\"table-wrap\"><table>"));
        assert!(h.contains("<caption>Points &lt;&amp;&gt;</caption>"));
        assert!(h.contains("<th>W_P</th><th class=l>regime</th><th>m</th><th>T model</th>"));
        assert!(h.contains("<td>500ns</td><td class=l>FP</td><td>3</td><td>1.15us</td>"));
        assert!(h.contains("a, &quot;b&quot; &lt;i&gt;"));
        assert!(!h.contains("<i>"));
    }

    #[test]
    fn csv_has_units_in_the_header_and_raw_values() {
        let c = sample().to_csv();
        let lines: Vec<&str> = c.lines().collect();
        assert_eq!(lines[0], "wp_ns,regime,m,T_model_ns");
        assert_eq!(lines[1], "500,FP,3,1150.5");
        assert_eq!(lines[2], "2000,\"a, \"\"b\"\" <i>\",,");
    }

    #[test]
    fn json_is_an_array_of_objects_keyed_by_column_keys() {
        let j = sample().to_json();
        assert_eq!(j[0]["wp_ns"], 500.0);
        assert!(
            j[0]["m"].is_u64(),
            "a whole number is an integer: {}",
            j[0]["m"]
        );
        assert_eq!(j[0]["regime"], "FP");
        assert_eq!(j[0]["T_model_ns"], 1150.5);
        assert_eq!(j[1]["m"], Value::Null);
        assert_eq!(j[1]["T_model_ns"], Value::Null);
        assert_eq!(j[1]["regime"], "a, \"b\" <i>");
    }

    #[test]
    fn flags_are_booleans_and_set_ones_stand_out() {
        let mut t = Table::new("", vec![Column::flag("disturbed", "disturbed")]);
        t.push(vec![true.into()]);
        t.push(vec![false.into()]);
        let h = t.to_html();
        assert!(h.contains("<td class=flag>yes</td>"), "{h}");
        assert!(h.contains("<td>no</td>"), "{h}");
        assert_eq!(t.to_csv(), "disturbed\ntrue\nfalse\n");
        assert_eq!(t.to_json()[0]["disturbed"], true);
        assert_eq!(t.to_json()[1]["disturbed"], false);
    }

    #[test]
    fn the_three_renderings_agree_on_rows_and_columns() {
        let mut t = sample();
        // A short row reads as empty cells, a long one is cut.
        t.push(vec![1.0.into()]);
        t.push(vec![
            1.0.into(),
            "x".into(),
            1.0.into(),
            1.0.into(),
            9.0.into(),
        ]);
        let (rows, cols) = (t.rows.len(), t.columns.len());
        let h = t.to_html();
        assert_eq!(h.matches("<tr>").count(), rows + 1);
        assert_eq!(h.matches("</th>").count(), cols);
        assert_eq!(h.matches("</td>").count(), rows * cols);
        // The CSV has no newlines inside fields here.
        let c = t.to_csv();
        assert_eq!(c.lines().count(), rows + 1);
        for l in c.lines().filter(|l| !l.contains('"')) {
            assert_eq!(l.split(',').count(), cols, "{l}");
        }
        let j = t.to_json();
        let a = j.as_array().unwrap();
        assert_eq!(a.len(), rows);
        assert!(a.iter().all(|o| o.as_object().unwrap().len() == cols));
    }
}
