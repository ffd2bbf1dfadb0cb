//! The page's glossary: each symbol and term defined once ([`section`]),
//! and the first use of each in every other section linked to its
//! definition ([`link`]). What does not live here: the order of the
//! sections (`order`) and their text (their modules).

use kicklab_report::{html_escape, Layout, Section};

/// Each symbol and term the page uses, defined once.
const TERMS: [(&str, &str); 22] = [
    ("P, C", "the producer (writes messages into the queue) and the consumer (takes them out)"),
    ("L", "the queue's length in slots"),
    ("W_P, W_C", "the work per message of P and of C: the time each spends on one message"),
    ("N_P, N_C", "a notification (a kick) sent by P (to wake C) or by C (to wake P): its cost to the sender"),
    ("S_P, S_C", "a start-up: the time from the notification until the woken P or C works again"),
    ("V_P, V_C", "a kick's visibility: how far into the sender's N the sleeper sees it (V = N unless measured)"),
    ("k_P, k_C", "how many messages (slots) a sleeping party waits for before it is woken"),
    ("m", "messages per notification round: how many a party handles per wake-up"),
    ("T", "time per message at the steady state: 1 / throughput"),
    ("E", "CPU time per message, P and C together (work, kicks, start-ups, spinning)"),
    ("p99", "the 99th percentile of a message's latency, from publish to claim"),
    ("kick", "a notification: the write (eventfd, futex wake, ioeventfd) that wakes a sleeping peer"),
    ("GP", "good polling: both parties spin, never sleep; T = max(W_P, W_C), the best T any strategy reaches"),
    ("FP", "fast producer: P fills the queue and sleeps; C wakes it; T close to W_C"),
    ("FC", "fast consumer: C drains the queue and sleeps; P wakes it; T close to W_P"),
    ("SS, SPS, SCS", "slow start-up (both, producer's, consumer's): start-ups so long that the queue empties (fills) while a party wakes"),
    ("EWC, EWP", "early-woken consumer (producer): a kick seen before it ends wakes the slower party, which drains (fills) the queue and sleeps again, so every k messages cost a kick"),
    ("operating point", "the regime a pair settles in; a bistable pair has two, depending on where it starts"),
    ("regime boundary", "a W_P or W_C where the regime changes; T and E jump there, so small changes in speed matter"),
    ("knife-edge", "a point whose forecast band spans two regimes: the measurement may land in either"),
    ("settle", "messages after a rate step until a controller's T stays within its target band"),
    ("disturbed", "a run during which other work took the machine's CPUs, so its figure is not this pair's alone"),
];

/// The glossary section: a one-line lead, the terms one click away.
pub(super) fn section() -> Section {
    let mut h = String::from(
        "<p>Every symbol on this page is defined once here: P and C, their costs (W, N, S, V), the regimes (GP, FP, \
         FC, SS, EWC, ...) and the words the sections use (kick, m, operating point, knife-edge, settle).</p>\n<dl>",
    );
    for (term, meaning) in TERMS {
        h.push_str(&format!(
            "<dt id=\"{}\"><b>{}</b></dt><dd>{}</dd>",
            anchor(term),
            html_escape(term),
            html_escape(meaning)
        ));
    }
    h.push_str("</dl>\n");
    Section {
        id: "glossary".into(),
        heading: "Glossary".into(),
        html: h,
        figures: vec![],
        layout: Layout::Summary,
    }
}

/// The glossary entry's anchor: `term-` and the term's letters, digits
/// and underscores, the rest as `-` (`N_P, N_C`: `term-N_P--N_C`).
fn anchor(term: &str) -> String {
    let slug: String = term
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '-'
            }
        })
        .collect();
    format!("term-{slug}")
}

/// The words linked where a section first uses them, longest first (so
/// `SPS` is not read as `SS`... and `regime boundary` before `regime`),
/// each with its glossary entry. Single letters (P, C, L, T, E, m) are
/// too common in prose to link.
fn linked() -> Vec<(&'static str, String)> {
    let mut out: Vec<(&'static str, String)> = TERMS
        .iter()
        .flat_map(|(term, _)| {
            term.split(", ")
                .filter(|w| w.len() > 1)
                .map(move |w| (w, anchor(term)))
        })
        .collect();
    out.sort_by_key(|(w, _)| std::cmp::Reverse(w.len()));
    out
}

/// Every section but the glossary with the first use of each term in its
/// text linked to the term's definition (one link per entry: `N_P` or
/// `N_C`, whichever the longest-first search meets first).
pub(super) fn link(sections: Vec<Section>) -> Vec<Section> {
    let words = linked();
    sections
        .into_iter()
        .map(|mut s| {
            if s.id != "glossary" {
                let mut done: Vec<&str> = Vec::new();
                for (word, id) in &words {
                    if done.contains(&id.as_str()) {
                        continue;
                    }
                    if let Some(html) = link_first(&s.html, word, id) {
                        s.html = html;
                        done.push(id);
                    }
                }
            }
            s
        })
        .collect()
}

/// Elements whose text is never linked: code, links, headings, terms,
/// pictures, scripts, controls.
const UNLINKED: [&str; 15] = [
    "code", "a", "h1", "h2", "h3", "h4", "dt", "pre", "summary", "svg", "script", "style", "title",
    "button", "label",
];

/// `html` with the first whole-word use of `word` in its text (not in a
/// tag, nor inside [`UNLINKED`] elements) made a link to `#id`; `None`
/// where it has none.
fn link_first(html: &str, word: &str, id: &str) -> Option<String> {
    let mut depth = 0usize;
    let mut at = 0;
    while at < html.len() {
        let rest = &html[at..];
        if rest.starts_with('<') {
            let end = rest.find('>')? + 1;
            let tag = &rest[1..end - 1];
            let closing = tag.starts_with('/');
            let name: String = tag
                .trim_start_matches('/')
                .chars()
                .take_while(char::is_ascii_alphanumeric)
                .collect::<String>()
                .to_ascii_lowercase();
            if UNLINKED.contains(&name.as_str()) && !tag.ends_with('/') {
                if closing {
                    depth = depth.saturating_sub(1);
                } else {
                    depth += 1;
                }
            }
            at += end;
            continue;
        }
        let text_end = rest.find('<').map_or(html.len(), |i| at + i);
        if depth == 0 {
            if let Some(i) = whole_word(&html[at..text_end], word) {
                let i = at + i;
                return Some(format!(
                    "{}<a class=\"kl-term\" href=\"#{id}\">{word}</a>{}",
                    &html[..i],
                    &html[i + word.len()..]
                ));
            }
        }
        at = text_end;
    }
    None
}

/// Where `word` first stands alone in `text` (no letter, digit or `_`
/// on either side).
fn whole_word(text: &str, word: &str) -> Option<usize> {
    let is_word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut from = 0;
    while let Some(i) = text[from..].find(word).map(|i| i + from) {
        let before = text[..i].chars().next_back();
        let after = text[i + word.len()..].chars().next();
        if !before.is_some_and(is_word) && !after.is_some_and(is_word) {
            return Some(i);
        }
        from = i + word.len();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_term_is_defined_once() {
        let mut seen = std::collections::HashSet::new();
        for (term, meaning) in TERMS {
            assert!(seen.insert(term), "{term} twice");
            assert!(!meaning.is_empty());
        }
        let ids: std::collections::HashSet<String> = TERMS.iter().map(|(t, _)| anchor(t)).collect();
        assert_eq!(ids.len(), TERMS.len());
    }

    #[test]
    fn the_first_use_in_text_is_linked_once() {
        let mut s = Section::new("x", "x");
        s.html = "<p>In <code>FC</code> the FCX pair is FC; FC again. <a href=\"#y\">SS</a> then SS.</p>".into();
        let got = link(vec![s]).remove(0).html;
        assert_eq!(
            got,
            "<p>In <code>FC</code> the FCX pair is <a class=\"kl-term\" href=\"#term-FC\">FC</a>; FC again. \
             <a href=\"#y\">SS</a> then <a class=\"kl-term\" href=\"#term-SS--SPS--SCS\">SS</a>.</p>"
        );
        // The glossary itself is left alone, and SPS is not read as SS.
        let g = link(vec![section()]).remove(0);
        assert!(!g.html.contains("kl-term"));
        let mut s = Section::new("y", "y");
        s.html = "<p>SPS</p>".into();
        assert!(link(vec![s])
            .remove(0)
            .html
            .contains("href=\"#term-SS--SPS--SCS\">SPS</a>"));
    }
}
