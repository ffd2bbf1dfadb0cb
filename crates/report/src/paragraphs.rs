//! Paragraphs as the page prints them: a paragraph an earlier section
//! already printed word for word is replaced by a link to it
//! ([`fold_repeats`]), and long paragraphs are cut at sentence ends
//! ([`cut_long_paragraphs`]). Long paragraphs: a page's texts are written per
//! section, often as one paragraph of method, result and caveats; a reader
//! takes them in pieces of at most [`MAX_WORDS`] words. Only `<p>`
//! elements are cut, only after a sentence's full stop that is outside any
//! tag and any `<code>`, and never inside a sentence. What does not live
//! here: the page (`page`).

/// The words a paragraph may hold before it is cut at a sentence's end.
pub const MAX_WORDS: usize = 80;

/// `html` with every `<p>` of more than [`MAX_WORDS`] words cut into
/// paragraphs of whole sentences, each of at most [`MAX_WORDS`] words
/// where its sentences allow (a longer sentence stays whole).
pub fn cut_long_paragraphs(html: &str) -> String {
    let mut out = String::with_capacity(html.len() + 64);
    let mut rest = html;
    while let Some(start) = find_p(rest) {
        out.push_str(&rest[..start]);
        let open_end = match rest[start..].find('>') {
            Some(i) => start + i + 1,
            None => break,
        };
        let Some(close) = rest[open_end..].find("</p>") else {
            break;
        };
        let open = &rest[start..open_end];
        let body = &rest[open_end..open_end + close];
        for (i, part) in cut(body).iter().enumerate() {
            out.push_str(if i == 0 { open } else { "<p>" });
            out.push_str(part);
            out.push_str("</p>");
        }
        rest = &rest[open_end + close + 4..];
    }
    out.push_str(rest);
    out
}

/// Words a paragraph needs before a repeat of it is folded: shorter ones
/// (a "Reproduce:" line) say different things in few words.
const REPEAT_WORDS: usize = 12;

/// Paragraphs the page has printed: their text, and the section (id,
/// heading) that printed each first.
pub type Printed = std::collections::HashMap<String, (String, String)>;

/// `html` of section `here` (id, heading) with each paragraph of at least
/// [`REPEAT_WORDS`] words that an earlier section printed (in `printed`)
/// replaced by one line linking there; a run of them folds into one line.
/// The paragraphs it keeps are added to `printed`.
pub fn fold_repeats(html: &str, here: (&str, &str), printed: &mut Printed) -> String {
    let mut out = String::with_capacity(html.len());
    let mut rest = html;
    let mut last_link: Option<String> = None;
    while let Some(start) = find_p(rest) {
        let Some(open_end) = rest[start..].find('>').map(|i| start + i + 1) else {
            break;
        };
        let Some(close) = rest[open_end..].find("</p>") else {
            break;
        };
        let between = &rest[..start];
        let body = rest[open_end..open_end + close].trim();
        let end = open_end + close + "</p>".len();
        if !between.trim().is_empty() {
            last_link = None;
        }
        out.push_str(between);
        match printed.get(body) {
            Some((id, heading)) if id != here.0 && words(body) >= REPEAT_WORDS => {
                if last_link.as_deref() != Some(id) {
                    out.push_str(&format!(
                        "<p class=\"kl-same\">The same method as in <a href=\"#{id}\">{heading}</a>.</p>"
                    ));
                    last_link = Some(id.clone());
                }
            }
            _ => {
                printed
                    .entry(body.to_string())
                    .or_insert_with(|| (here.0.to_string(), crate::html_escape(here.1)));
                out.push_str(&rest[start..end]);
                last_link = None;
            }
        }
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

/// The next `<p>` or `<p ...>` (not `<pre>`, `<path>`).
fn find_p(s: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(i) = s[from..].find("<p") {
        let at = from + i;
        match s.as_bytes().get(at + 2) {
            Some(b'>' | b' ') => return Some(at),
            _ => from = at + 2,
        }
    }
    None
}

fn words(s: &str) -> usize {
    strip_tags(s).split_whitespace().count()
}

fn strip_tags(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut in_tag = false;
    for c in s.chars() {
        match c {
            '<' => {
                in_tag = true;
                out.push(' ');
            }
            '>' => in_tag = false,
            _ if !in_tag => out.push(c),
            _ => {}
        }
    }
    out
}

/// `body` split into sentences (each ends after ". " outside tags and
/// `<code>`, before an upper-case letter, a digit, `kicklab` or an opening
/// tag; not after `Fig.`, `e.g.` and the like), then joined greedily into
/// parts of at most [`MAX_WORDS`] words.
fn cut(body: &str) -> Vec<String> {
    if words(body) <= MAX_WORDS {
        return vec![body.to_string()];
    }
    let mut sentences = Vec::new();
    let (mut depth_tag, mut in_code) = (false, 0usize);
    let mut last = 0;
    let bytes = body.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i..].starts_with(b"<code") {
            in_code += 1;
        } else if bytes[i..].starts_with(b"</code>") {
            in_code = in_code.saturating_sub(1);
        }
        match bytes[i] {
            b'<' => depth_tag = true,
            b'>' => depth_tag = false,
            b'.' if !depth_tag && in_code == 0 && bytes.get(i + 1) == Some(&b' ') => {
                let next = body[i + 2..].chars().next();
                // kicklab's own name starts sentences in lower case.
                let starts = next
                    .is_some_and(|c| c.is_uppercase() || c.is_ascii_digit() || c == '<')
                    || body[i + 2..].starts_with("kicklab");
                // "e.g. X", "Fig. 2", "i.e. X": no sentence ends there.
                let before = &body[last..i];
                let abbreviation = ["e.g", "i.e", "Fig", "cf", "vs", "al", "eq", "eqs", "no"]
                    .iter()
                    .any(|a| before.ends_with(a));
                if starts && !abbreviation {
                    sentences.push(&body[last..=i]);
                    last = i + 2;
                }
            }
            _ => {}
        }
        i += 1;
    }
    sentences.push(&body[last..]);
    let mut parts: Vec<String> = Vec::new();
    let mut current = String::new();
    for s in sentences.into_iter().filter(|s| !s.trim().is_empty()) {
        if !current.is_empty() && words(&current) + words(s) > MAX_WORDS {
            parts.push(std::mem::take(&mut current));
        }
        if !current.is_empty() {
            current.push(' ');
        }
        current.push_str(s);
    }
    if !current.is_empty() {
        parts.push(current);
    }
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sentence(n: usize, word: &str) -> String {
        let mut s = vec![word; n].join(" ");
        s.replace_range(0..1, &word[..1].to_uppercase());
        s + "."
    }

    #[test]
    fn a_long_paragraph_is_cut_at_sentence_ends_into_parts_of_at_most_80_words() {
        let body = [
            sentence(30, "alpha"),
            sentence(40, "beta"),
            sentence(30, "gamma"),
        ]
        .join(" ");
        let html = format!("<h2>x</h2><p class=\"a\">{body}</p><pre>keep. This</pre>");
        let out = cut_long_paragraphs(&html);
        assert_eq!(
            out.matches("<p").count() - out.matches("<pre").count(),
            2,
            "{out}"
        );
        assert!(out.starts_with("<h2>x</h2><p class=\"a\">Alpha"), "{out}");
        assert!(out.contains("beta.</p><p>Gamma"), "{out}");
        assert!(out.ends_with("<pre>keep. This</pre>"));
        // Every word kept, in order.
        assert_eq!(strip_tags(&out).split_whitespace().count(), 1 + 100 + 2);
    }

    #[test]
    fn code_tags_and_abbreviations_are_never_cut() {
        let long = sentence(79, "w");
        let body = format!(
            "{long} See <code>kicklab sim. Then</code> and <a href=\"#x. Y\">it</a>, e.g. Fig. 2 with more words here. {long}"
        );
        let out = cut_long_paragraphs(&format!("<p>{body}</p>"));
        assert_eq!(out.matches("<p>").count(), 3, "{out}");
        assert!(out.contains("<code>kicklab sim. Then</code>"), "{out}");
        assert!(out.contains("e.g. Fig. 2 with"), "{out}");
    }

    #[test]
    fn text_beyond_ascii_is_cut_at_sentence_ends_too() {
        let long = sentence(79, "w");
        let body = format!("{long} W ≈ 1.3 µs here. ΣNS counts. {long}");
        let out = cut_long_paragraphs(&format!("<p>{body}</p>"));
        assert_eq!(out.matches("<p>").count(), 3, "{out}");
        assert!(out.contains("<p>W ≈ 1.3 µs here. ΣNS counts.</p>"), "{out}");
    }

    #[test]
    fn a_paragraph_printed_before_is_a_link_and_a_run_of_them_one() {
        let method = sentence(14, "method");
        let other = sentence(14, "other");
        let mut printed = Printed::new();
        let first = format!("<p>{method}</p><p>{other}</p><p>Reproduce: x.</p>");
        assert_eq!(fold_repeats(&first, ("a", "A & B"), &mut printed), first);
        let second = format!("<p>Result.</p><p>{method}</p>\n<p>{other}</p><table></table><p>{other}</p><p>Reproduce: x.</p>");
        let got = fold_repeats(&second, ("b", "B"), &mut printed);
        let link = "<p class=\"kl-same\">The same method as in <a href=\"#a\">A &amp; B</a>.</p>";
        assert_eq!(
            got,
            format!("<p>Result.</p>{link}\n<table></table>{link}<p>Reproduce: x.</p>")
        );
        // Within its own section a paragraph may repeat.
        let again = format!("<p>{method}</p>");
        assert_eq!(fold_repeats(&again, ("a", "A & B"), &mut printed), again);
    }

    #[test]
    fn short_paragraphs_and_one_long_sentence_stay_whole() {
        let one = format!("<p>{}</p>", sentence(120, "x"));
        assert_eq!(cut_long_paragraphs(&one), one);
        let short = "<p>Short. Two.</p><p>Three.</p>";
        assert_eq!(cut_long_paragraphs(short), short);
    }
}
