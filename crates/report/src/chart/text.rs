//! Text on a chart: its estimated width and its lines wrapped to a width.

/// Estimated width of `s` in a sans-serif font of `px`.
pub(super) fn text_w(s: &str, px: f64) -> f64 {
    #[allow(clippy::cast_precision_loss)]
    let n = s.chars().count() as f64;
    n * px * 0.6
}

/// `text` in lines of at most `width` pixels (by [`text_w`]), broken at
/// spaces; a word longer than a line gets a line of its own.
pub(super) fn wrap(text: &str, width: f64, px: f64) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut cur = String::new();
    for word in text.split(' ') {
        let next = if cur.is_empty() {
            word.to_string()
        } else {
            format!("{cur} {word}")
        };
        if !cur.is_empty() && text_w(&next, px) > width {
            lines.push(std::mem::replace(&mut cur, word.to_string()));
        } else {
            cur = next;
        }
    }
    if !cur.is_empty() || lines.is_empty() {
        lines.push(cur);
    }
    lines
}
