//! The report's explorer: sliders and inputs for every parameter of the
//! pair, the regime, T, E and m and the T and E curves redrawn as they
//! move, and a simulator run on request, all computed in the page by
//! kicklab's own model and simulator compiled to WebAssembly
//! (`kicklab-wasm`, built by this crate's build script) and inlined, so
//! that the page needs no network and works from `file://`.
//!
//! What lives here: the section's HTML, its script (`explorer.js`) and the
//! module as base64. What does not: the computing (`kicklab-wasm`), the
//! charts' hover and zoom (`kicklab-report`'s page script).

use kicklab_model::{fmt_ns, Params};
use kicklab_report::{html_escape, Section};

/// The module, as built for `wasm32-unknown-unknown`; empty where it could
/// not be built ([`WHY_NOT`] says why).
pub const WASM: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/explorer.wasm"));

/// Why [`WASM`] is empty (empty when it is not).
pub const WHY_NOT: &str = include_str!(concat!(env!("OUT_DIR"), "/explorer-why.txt"));

/// The explorer's script.
const JS: &str = include_str!("explorer.js");

/// One input of the pair: its name on the command line, its symbol (HTML),
/// what it is, the slider's range and step, and its unit (`us`, or none
/// for counts).
struct Input {
    name: &'static str,
    symbol: &'static str,
    what: &'static str,
    max: f64,
    step: f64,
    unit: &'static str,
}

const INPUTS: [Input; 11] = [
    Input {
        name: "len",
        symbol: "L",
        what: "queue length [slots]",
        max: 1024.0,
        step: 1.0,
        unit: "",
    },
    Input {
        name: "kp",
        symbol: "k<sub>P</sub>",
        what: "P wakes C once this many messages are queued",
        max: 256.0,
        step: 1.0,
        unit: "",
    },
    Input {
        name: "kc",
        symbol: "k<sub>C</sub>",
        what: "C wakes P once this many slots are free",
        max: 256.0,
        step: 1.0,
        unit: "",
    },
    Input {
        name: "wp",
        symbol: "W<sub>P</sub>",
        what: "producer work per message",
        max: 10.0,
        step: 0.01,
        unit: "us",
    },
    Input {
        name: "wc",
        symbol: "W<sub>C</sub>",
        what: "consumer work per message",
        max: 10.0,
        step: 0.01,
        unit: "us",
    },
    Input {
        name: "np",
        symbol: "N<sub>P</sub>",
        what: "P's cost of a kick (notifying C)",
        max: 20.0,
        step: 0.01,
        unit: "us",
    },
    Input {
        name: "nc",
        symbol: "N<sub>C</sub>",
        what: "C's cost of notifying P",
        max: 20.0,
        step: 0.01,
        unit: "us",
    },
    Input {
        name: "sp",
        symbol: "S<sub>P</sub>",
        what: "P's start-up after a notification",
        max: 20.0,
        step: 0.01,
        unit: "us",
    },
    Input {
        name: "sc",
        symbol: "S<sub>C</sub>",
        what: "C's start-up after a notification",
        max: 20.0,
        step: 0.01,
        unit: "us",
    },
    Input {
        name: "vp",
        symbol: "V<sub>P</sub>",
        what: "when C sees P's kick, from its start (empty: N_P)",
        max: 20.0,
        step: 0.01,
        unit: "us",
    },
    Input {
        name: "vc",
        symbol: "V<sub>C</sub>",
        what: "when P sees C's notification (empty: N_C)",
        max: 20.0,
        step: 0.01,
        unit: "us",
    },
];

/// Base64 (RFC 4648, with padding).
fn base64(data: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut s = String::with_capacity(data.len().div_ceil(3) * 4);
    for c in data.chunks(3) {
        let n = (u32::from(c[0]) << 16)
            | (u32::from(*c.get(1).unwrap_or(&0)) << 8)
            | u32::from(*c.get(2).unwrap_or(&0));
        for (k, shift) in [18, 12, 6, 0].into_iter().enumerate() {
            if k <= c.len() {
                s.push(char::from(A[(n >> shift) as usize & 63]));
            } else {
                s.push('=');
            }
        }
    }
    s
}

/// The default value of an input, as the command line spells it.
fn default_value(name: &str, d: &Params) -> String {
    match name {
        "len" => d.len.to_string(),
        "kp" => d.k_p.to_string(),
        "kc" => d.k_c.to_string(),
        "wp" => fmt_ns(d.w_p.mean_ns()),
        "wc" => fmt_ns(d.w_c.mean_ns()),
        "np" => fmt_ns(d.n_p.mean_ns()),
        "nc" => fmt_ns(d.n_c.mean_ns()),
        "sp" => fmt_ns(d.s_p.mean_ns()),
        "sc" => fmt_ns(d.s_c.mean_ns()),
        _ => String::new(),
    }
}

/// The explorer section: the controls, the outputs, the module and the
/// script.
pub fn section() -> Section {
    let d = Params::default();
    // The lead is what a reader sees before opening the section: where the
    // module could not be built it says so, and why, instead.
    let mut h = if WASM.is_empty() {
        format!(
            "<p><b>The explorer is not in this page</b>: {}. Then run <code>kicklab report</code> again; until \
             then <code>kicklab model</code> and <code>kicklab sim</code> give what it would.</p>\n",
            html_escape(WHY_NOT.trim())
        )
    } else {
        String::from(
            "<p>The model with the parameters in hand: move a slider or type a value (a duration such as \
             <code>2.3us</code> or <code>850ns</code>, or a distribution such as <code>exp:2us</code>, whose mean \
             the model takes; the command line's syntax) and the regime, T, E, m and the curves follow. It is \
             kicklab's own model and simulator, compiled to WebAssembly and inlined in this page: no network, no \
             second implementation. The line under the results is the command that prints the same numbers.</p>\n",
        )
    };
    h.push_str(STYLE);
    let why = if WASM.is_empty() {
        format!(
            "The explorer is not in this page: {}. Then run kicklab report again.",
            WHY_NOT.trim()
        )
    } else {
        String::new()
    };
    h.push_str(&format!(
        "<div id=\"kl-ex\" class=\"kl-ex\" data-why=\"{}\">\n\
         <noscript><p>The explorer needs JavaScript.</p></noscript>\n\
         <p id=\"kl-ex-status\" class=\"kl-ex-status\">Loading the model&hellip;</p>\n\
         <form id=\"kl-ex-form\" autocomplete=\"off\">\n<div class=\"kl-ex-grid\">\n",
        html_escape(&why)
    ));
    for i in &INPUTS {
        let value = default_value(i.name, &d);
        let slider = match i.name {
            "vp" => d.n_p.mean_ns() / 1e3,
            "vc" => d.n_c.mean_ns() / 1e3,
            _ if i.unit.is_empty() => value.parse().unwrap_or(1.0),
            _ => mean_us(i.name, &d),
        };
        let min = if i.unit.is_empty() { 1.0 } else { 0.0 };
        h.push_str(&format!(
            "<div class=\"kl-ex-p\"><label for=\"kl-ex-{n}\">{sym}</label>\
             <input type=\"range\" id=\"kl-ex-{n}-r\" data-for=\"kl-ex-{n}\" data-unit=\"{unit}\" min=\"{min}\" \
             max=\"{max}\" step=\"{step}\" value=\"{slider}\" aria-label=\"{n} slider\">\
             <input type=\"text\" id=\"kl-ex-{n}\" name=\"{n}\" value=\"{value}\" placeholder=\"{ph}\" \
             spellcheck=\"false\" inputmode=\"decimal\"><small>{what}</small></div>\n",
            n = i.name,
            sym = i.symbol,
            unit = i.unit,
            max = i.max,
            step = i.step,
            ph = match i.name {
                "vp" => "= N_P",
                "vc" => "= N_C",
                _ => "",
            },
            what = html_escape(i.what),
        ));
    }
    h.push_str(
        "</div>\n<div class=\"kl-ex-row\">\
         <label>mode <select id=\"kl-ex-mode\" name=\"mode\"><option>notify</option><option>poll</option></select></label>\
         <label>curves over <select id=\"kl-ex-vary\">",
    );
    for i in &INPUTS {
        let sel = if i.name == "wp" { " selected" } else { "" };
        h.push_str(&format!(
            "<option value=\"{n}\"{sel}>{n}</option>",
            n = i.name
        ));
    }
    h.push_str(
        "</select></label> <label>from <input type=\"text\" id=\"kl-ex-from\" value=\"0.1us\" size=\"7\"></label> \
         <label>to <input type=\"text\" id=\"kl-ex-to\" value=\"3us\" size=\"7\"></label> \
         <label>points <input type=\"text\" id=\"kl-ex-points\" value=\"200\" size=\"5\"></label> \
         <button type=\"button\" id=\"kl-ex-defaults\">Fig. 4 defaults</button></div>\n</form>\n\
         <p id=\"kl-ex-error\" class=\"kl-ex-error\" role=\"alert\"></p>\n\
         <div class=\"table-wrap\"><table class=\"kl-ex-out\"><tbody>\n\
         <tr><th class=\"l\">regime</th><td class=\"l\"><b id=\"kl-ex-regime\">&ndash;</b> <span id=\"kl-ex-meaning\"></span></td></tr>\n\
         <tr><th class=\"l\">T</th><td class=\"l\"><b id=\"kl-ex-T\">&ndash;</b>/message \
         (<span id=\"kl-ex-T-ns\">&ndash;</span> ns; <span id=\"kl-ex-rate\">&ndash;</span> messages/s)</td></tr>\n\
         <tr><th class=\"l\">E</th><td class=\"l\"><b id=\"kl-ex-E\">&ndash;</b> of CPU/message \
         (<span id=\"kl-ex-E-ns\">&ndash;</span> ns)</td></tr>\n\
         <tr><th class=\"l\">m</th><td class=\"l\" id=\"kl-ex-m\">&ndash;</td></tr>\n\
         <tr><th class=\"l\">round</th><td class=\"l\" id=\"kl-ex-round\">&ndash;</td></tr>\n\
         <tr><th class=\"l\">vs polling</th><td class=\"l\" id=\"kl-ex-poll\">&ndash;</td></tr>\n\
         <tr><th class=\"l\">command</th><td class=\"l\"><code id=\"kl-ex-cmd\"></code></td></tr>\n\
         </tbody></table></div>\n\
         <p class=\"kl-hint\">The last change took <b id=\"kl-ex-ms\">&ndash;</b> ms (the model at the point and \
         along the curves, and their SVG, in WebAssembly: <span id=\"kl-ex-ms-wasm\">&ndash;</span> ms; the rest is \
         the page taking the new charts in); on screen after <span id=\"kl-ex-frame\">&ndash;</span> ms.</p>\n\
         <div class=\"kl-ex-charts\"><div id=\"kl-ex-chart-t\"></div><div id=\"kl-ex-chart-e\"></div></div>\n\
         <h3>The simulator at this point</h3>\n\
         <div class=\"kl-ex-row\"><label>messages <input type=\"text\" id=\"kl-ex-messages\" value=\"20000\" size=\"8\"></label> \
         <label>seed <input type=\"text\" id=\"kl-ex-seed\" value=\"1\" size=\"4\"></label> \
         <label>strategy <input type=\"text\" id=\"kl-ex-strategy\" placeholder=\"= mode\" size=\"12\" spellcheck=\"false\"></label> \
         <label><input type=\"checkbox\" id=\"kl-ex-exp\"> every cost exponential (same means)</label> \
         <button type=\"button\" id=\"kl-ex-run\">Run the simulator</button></div>\n\
         <div class=\"table-wrap\"><table class=\"kl-ex-out\"><tbody>\n\
         <tr><th class=\"l\"></th><th>simulator</th><th>model</th><th>sim/model</th></tr>\n\
         <tr><th class=\"l\">T</th><td id=\"kl-ex-sim-T\">&ndash;</td><td id=\"kl-ex-sim-mT\">&ndash;</td><td id=\"kl-ex-sim-rT\">&ndash;</td></tr>\n\
         <tr><th class=\"l\">E</th><td id=\"kl-ex-sim-E\">&ndash;</td><td id=\"kl-ex-sim-mE\">&ndash;</td><td id=\"kl-ex-sim-rE\">&ndash;</td></tr>\n\
         </tbody></table></div>\n\
         <p id=\"kl-ex-sim-more\"></p>\n<p><code id=\"kl-ex-sim-cmd\"></code></p>\n</div>\n",
    );
    h.push_str(&format!(
        "<script type=\"application/octet-stream\" id=\"kl-wasm\">{}</script>\n<script>\n{JS}</script>\n",
        base64(WASM)
    ));
    Section {
        id: "explorer".into(),
        heading: "Explorer: the model and the simulator, live".into(),
        html: h,
        figures: vec![],
        layout: kicklab_report::Layout::Open,
    }
}

/// A cost's slider position [us].
fn mean_us(name: &str, d: &Params) -> f64 {
    let c = match name {
        "wp" => d.w_p,
        "wc" => d.w_c,
        "np" => d.n_p,
        "nc" => d.n_c,
        "sp" => d.s_p,
        _ => d.s_c,
    };
    c.mean_ns() / 1e3
}

const STYLE: &str = "<style>\n\
.kl-ex-grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(17em,1fr));gap:.5em 1.4em;margin:1em 0}\n\
.kl-ex-p{display:grid;grid-template-columns:2.6em minmax(0,1fr) 6.5em;align-items:center;gap:.2em .5em}\n\
.kl-ex-p label{font-weight:600} .kl-ex-p input[type=range]{width:100%;min-width:0;margin:0}\n\
.kl-ex-p input[type=text]{width:100%;box-sizing:border-box;font:inherit;font-size:.95em}\n\
.kl-ex-p small{grid-column:2/-1;color:#666;font-size:.8em;line-height:1.2}\n\
.kl-ex-row{display:flex;flex-wrap:wrap;gap:.5em 1em;align-items:center;margin:.6em 0}\n\
.kl-ex-row input,.kl-ex-row select,.kl-ex-row button{font:inherit}\n\
table.kl-ex-out td,table.kl-ex-out th{text-align:left}\n\
.kl-ex-charts{display:grid;grid-template-columns:repeat(auto-fit,minmax(min(100%,430px),1fr));gap:1em;margin-top:1em}\n\
.kl-ex-error{color:#a00;font-weight:600;min-height:1.2em} .kl-ex-status{color:#555}\n\
</style>\n";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_is_rfc_4648() {
        for (data, want) in [
            (&b""[..], ""),
            (b"f", "Zg=="),
            (b"fo", "Zm8="),
            (b"foo", "Zm9v"),
            (b"foob", "Zm9vYg=="),
            (b"fooba", "Zm9vYmE="),
            (b"foobar", "Zm9vYmFy"),
            (&[0xff, 0xfe, 0x00], "//4A"),
        ] {
            assert_eq!(base64(data), want);
        }
    }

    #[test]
    fn the_section_has_every_input_and_the_module_or_why_not() {
        let s = section();
        for i in &INPUTS {
            assert!(
                s.html.contains(&format!("name=\"{}\"", i.name)),
                "{}",
                i.name
            );
            assert!(
                s.html.contains(&format!("id=\"kl-ex-{}-r\"", i.name)),
                "{}",
                i.name
            );
        }
        assert!(s.html.contains("value=\"1.1us\""), "W_C's default");
        if WASM.is_empty() {
            assert!(!WHY_NOT.trim().is_empty());
            assert!(s.html.contains(&html_escape(WHY_NOT.trim())));
            // CI installs the target: there the module must be in the page.
            assert!(
                std::env::var("KICKLAB_REQUIRE_WASM").as_deref() != Ok("1"),
                "no explorer module: {WHY_NOT}"
            );
        } else {
            // A WebAssembly module: magic and version 1.
            assert_eq!(&WASM[..8], b"\0asm\x01\0\0\0");
            assert!(s.html.contains(&base64(&WASM[..3000])[..4000]));
            assert!(WHY_NOT.is_empty());
        }
        assert!(
            !s.html.contains("<script src"),
            "nothing loaded from elsewhere"
        );
    }
}
