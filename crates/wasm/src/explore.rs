//! The explorer's requests and answers: parsing `key=value` lines with the
//! command line's parsers, the model at a point and its curves (as the
//! report's own SVG charts), a simulator run. Every answer is a JSON
//! object; bad input is `{"error": "..."}` naming the parameter.

use kicklab_model::{
    fmt_ns, predict, ss_best_case, CommandLine, Cost, CostOverrides, Flag, GivenParams, Param,
    Params, Prediction, WaitMode,
};
use kicklab_report::{regime_bands_of, Chart, Series, Style};
use kicklab_sim::{simulate as run_sim, SimConfig, Vary};
use serde_json::{json, Value};

/// The most points a curve takes here (each one is a closed form and a
/// few SVG coordinates; the page redraws on every slider move).
pub const MAX_CURVE_POINTS: u32 = 2000;
/// The most messages one simulator run takes here (it runs on the page's
/// main thread).
pub const MAX_SIM_MESSAGES: u64 = 2_000_000;
/// The longest queue one simulator run takes here (its warm-up is 4 L
/// messages, on the page's main thread).
pub const MAX_SIM_LEN: u32 = 65_536;
/// The explorer's charts [px] (two side by side on a wide page).
const CHART_W: u32 = 560;
const CHART_H: u32 = 420;

/// A parsed request.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// The pair, validated.
    pub params: Params,
    /// The model's mode: notify or poll.
    pub mode: WaitMode,
    /// The simulator's strategy (any of the command line's).
    pub strategy: WaitMode,
    /// The curves' range.
    pub vary: Vary,
    /// Messages to simulate.
    pub messages: u64,
    /// Seed of the simulator's cost streams.
    pub seed: u64,
    /// Simulate with every cost exponential (same means).
    pub exp: bool,
    /// The command line's flags for these parameters (those that differ
    /// from the defaults), as typed.
    pub flags: Vec<(String, String)>,
}

fn error(msg: impl Into<String>) -> String {
    json!({ "error": msg.into() }).to_string()
}

/// A value typed on the page, quoted for a shell where it needs it.
fn shell(v: &str) -> String {
    let plain = v
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || ".:,_@+-/=µ".contains(c));
    if plain && !v.is_empty() {
        v.to_string()
    } else {
        format!("'{}'", v.replace('\'', "'\\''"))
    }
}

impl Request {
    /// Parses `key=value` lines: the pair's parameters by the command
    /// line's names (`len`, `kp`, `kc`, `wp`, `wc`, `np`, `nc`, `sp`, `sc`,
    /// `vp`, `vc`; empty: the default), `mode` (notify or poll),
    /// `strategy` (the simulator's; empty: the mode), `vary`
    /// (`wp=0.1us..3us:200`), `messages`, `seed`, `exp` (1: exponential
    /// costs in the simulator).
    ///
    /// # Errors
    ///
    /// A sentence naming the parameter (`W_P: ...`) or the field.
    pub fn parse(text: &str) -> Result<Request, String> {
        let mut given = GivenParams {
            len: 256,
            k_p: 1,
            k_c: 1,
            w_p: Params::default().w_p,
            w_c: Params::default().w_c,
            costs: CostOverrides::default(),
        };
        let mut req = Request {
            params: Params::default(),
            mode: WaitMode::Notify,
            strategy: WaitMode::Notify,
            vary: Vary::parse("wp=0.1us..3us:200").map_err(|e| e.0)?,
            messages: 20_000,
            seed: 1,
            exp: false,
            flags: Vec::new(),
        };
        let mut strategy = None;
        for line in text.lines() {
            let line = line.trim();
            if line.is_empty() {
                continue;
            }
            let (key, value) = line.split_once('=').unwrap_or((line, ""));
            let (key, value) = (key.trim(), value.trim());
            match key {
                "mode" => {
                    req.mode = match value {
                        "" | "notify" => WaitMode::Notify,
                        "poll" => WaitMode::Poll,
                        other => {
                            return Err(format!(
                                "mode: `{other}`: the model covers notify and poll (simulate the others)"
                            ))
                        }
                    };
                }
                "strategy" => {
                    if !value.is_empty() {
                        strategy =
                            Some(WaitMode::parse(value).map_err(|e| format!("strategy: {e}"))?);
                    }
                }
                "vary" => {
                    let v = Vary::parse(value).map_err(|e| format!("curves: {}", e.0))?;
                    if v.points < 2 || v.points > MAX_CURVE_POINTS {
                        return Err(format!(
                            "curves: between 2 and {MAX_CURVE_POINTS} points ({} asked)",
                            v.points
                        ));
                    }
                    req.vary = v;
                }
                "messages" => {
                    req.messages = match value.parse::<u64>() {
                        Ok(n) if (1..=MAX_SIM_MESSAGES).contains(&n) => n,
                        _ => {
                            return Err(format!(
                                "messages: `{value}`: a whole number from 1 to {MAX_SIM_MESSAGES}"
                            ))
                        }
                    };
                }
                "seed" => {
                    req.seed = value
                        .parse()
                        .map_err(|_| format!("seed: `{value}` is not a whole number >= 0"))?;
                }
                "exp" => req.exp = matches!(value, "1" | "true" | "on"),
                name => {
                    let param: Param = name.parse().map_err(|e| format!("{e}"))?;
                    if value.is_empty() {
                        continue;
                    }
                    Self::set(&mut given, param, value)?;
                    req.flags
                        .push((param.name().to_string(), value.to_string()));
                }
            }
        }
        req.params = given.build(None, |_, _| {}).map_err(|e| e.to_string())?;
        req.strategy = strategy.unwrap_or(req.mode);
        // Only what differs from the defaults goes on the command line.
        let d = Params::default();
        let p = req.params;
        req.flags.retain(|(name, _)| match name.as_str() {
            "len" => p.len != d.len,
            "kp" => p.k_p != d.k_p,
            "kc" => p.k_c != d.k_c,
            "wp" => p.w_p != d.w_p,
            "wc" => p.w_c != d.w_c,
            "np" => p.n_p != d.n_p,
            "nc" => p.n_c != d.n_c,
            "sp" => p.s_p != d.s_p,
            "sc" => p.s_c != d.s_c,
            _ => true,
        });
        Ok(req)
    }

    fn set(given: &mut GivenParams, param: Param, value: &str) -> Result<(), String> {
        if param.is_count() {
            let n: u32 = value
                .parse()
                .map_err(|_| format!("{}: `{value}` is not a whole number >= 1", param.symbol()))?;
            match param {
                Param::Len => given.len = n,
                Param::Kp => given.k_p = n,
                _ => given.k_c = n,
            }
            return Ok(());
        }
        let cost = Cost::parse(value).map_err(|e| format!("{}: {e}", param.symbol()))?;
        let c = &mut given.costs;
        match param {
            Param::Wp => given.w_p = cost,
            Param::Wc => given.w_c = cost,
            Param::Np => c.n_p = Some(cost),
            Param::Nc => c.n_c = Some(cost),
            Param::Sp => c.s_p = Some(cost),
            Param::Sc => c.s_c = Some(cost),
            Param::Vp => c.v_p = Some(cost),
            _ => c.v_c = Some(cost),
        }
        Ok(())
    }

    /// `kicklab COMMAND` with these parameters' flags.
    fn command(&self, command: &str) -> CommandLine {
        let mut c = CommandLine::new(command);
        for (name, value) in &self.flags {
            c = c.raw(&format!("--{name} {}", shell(value)));
        }
        c
    }

    /// The swept parameter's value in the current pair, in chart units.
    fn current_x(&self) -> f64 {
        let mut p = self.params;
        let param = self.vary.param;
        if let Some(n) = param.count_mut(&mut p) {
            f64::from(*n)
        } else {
            param
                .cost_mut(&mut p)
                .map_or(f64::NAN, |c| c.mean_ns() / 1e3)
        }
    }
}

/// The answer fields of a prediction: the command line's JSON fields
/// (`regime`, `T_ns`, `E_ns`, `m`, ...) and the same formatted as the
/// command line prints them.
fn prediction_json(p: &Prediction) -> Value {
    let mut v = serde_json::to_value(p).unwrap_or_default();
    v["T"] = json!(fmt_ns(p.rates.t_ns));
    v["E"] = json!(fmt_ns(p.rates.e_ns));
    v["throughput_per_s"] = json!(p.rates.per_second());
    v["meaning"] = json!(p.regime.meaning());
    v
}

/// The model at the request's pair (`kicklab model`'s JSON fields, plus
/// the formatted T and E, polling, the command line) and its T and E
/// curves over the request's range, with the pair marked, as SVG.
pub fn explore(text: &str) -> String {
    let req = match Request::parse(text) {
        Ok(r) => r,
        Err(e) => return error(e),
    };
    let p = match predict(&req.params, req.mode) {
        Ok(p) => p,
        Err(e) => return error(e.to_string()),
    };
    let poll = predict(&req.params, WaitMode::Poll).ok();
    let mut v = prediction_json(&p);
    if let Some(o) = p.other {
        v["other_text"] = json!(format!(
            "bistable: from a full queue the pair settles in {} instead: T = {}, E = {}",
            o.regime,
            fmt_ns(o.t_ns),
            fmt_ns(o.e_ns)
        ));
    }
    if let Some(g) = poll {
        v["poll"] = json!({
            "T_ns": g.rates.t_ns,
            "E_ns": g.rates.e_ns,
            "T": fmt_ns(g.rates.t_ns),
            "E": fmt_ns(g.rates.e_ns),
            "vs": format!(
                "notifications cost {:+.1}% time, {:+.1}% CPU",
                100.0 * (p.rates.t_ns / g.rates.t_ns - 1.0),
                100.0 * (p.rates.e_ns / g.rates.e_ns - 1.0)
            ),
        });
    }
    if let (Some(n), Some(t)) = (p.round_messages, p.round_ns) {
        let messages = if n == 1 { "message" } else { "messages" };
        v["round"] = json!(format!("{n} {messages} in {}", fmt_ns(t)));
    }
    let cmd = req.command("model").arg_some(
        Flag::Strategy,
        (req.mode == WaitMode::Poll).then_some("poll"),
    );
    v["command"] = json!(cmd.to_string());
    let (t, e) = curves(&req, &p);
    v["charts"] = json!([t, e]);
    v.to_string()
}

/// The T and E charts over the request's range: the model in its mode,
/// polling, the SS best case, the regimes as bands, and the pair itself.
fn curves(req: &Request, at: &Prediction) -> (String, String) {
    let vary = &req.vary;
    let scale = if vary.param.is_count() { 1.0 } else { 1e3 };
    let mut model_t = Vec::new();
    let mut model_e = Vec::new();
    let mut poll_t = Vec::new();
    let mut poll_e = Vec::new();
    let mut ss_t = Vec::new();
    let mut ss_e = Vec::new();
    let mut regimes = Vec::new();
    for x in vary.values() {
        let p = vary.apply(&req.params, x);
        // A point where the pair is invalid (V above N, k above L) is left
        // out of the curves.
        let (Ok(m), Ok(g)) = (predict(&p, req.mode), predict(&p, WaitMode::Poll)) else {
            continue;
        };
        let cx = x / scale;
        model_t.push((cx, m.rates.t_ns / 1e3));
        model_e.push((cx, m.rates.e_ns / 1e3));
        poll_t.push((cx, g.rates.t_ns / 1e3));
        poll_e.push((cx, g.rates.e_ns / 1e3));
        let (st, se) = ss_best_case(&p);
        ss_t.push((cx, st / 1e3));
        ss_e.push((cx, se / 1e3));
        regimes.push((cx, m.regime));
    }
    let bands = if req.mode == WaitMode::Poll {
        Vec::new()
    } else {
        regime_bands_of(regimes)
    };
    let x = req.current_x();
    let mode = if req.mode == WaitMode::Poll {
        "poll"
    } else {
        "notify"
    };
    let chart = |what: &str, unit: &str, model, poll, ss, here: f64| Chart {
        title: format!("{what} vs {}", vary.param.symbol()),
        x_label: vary.param.label().into(),
        y_label: format!("{} [{unit}]", &what[..1]),
        series: vec![
            Series {
                name: format!("model, {mode}"),
                points: model,
                style: Style::Thick,
                ..Series::default()
            },
            Series {
                name: "polling (GP)".into(),
                points: poll,
                style: Style::Line,
                ..Series::default()
            },
            Series {
                name: "SS best case".into(),
                points: ss,
                style: Style::Dashed,
                ..Series::default()
            },
            Series {
                name: "this pair".into(),
                points: vec![(x, here / 1e3)],
                style: Style::Ring,
                ..Series::default()
            },
        ],
        bands: bands.clone(),
        ..Chart::default()
    };
    let t = chart(
        "T, time per message",
        "us/message",
        model_t,
        poll_t,
        ss_t,
        at.rates.t_ns,
    );
    let e = chart(
        "E, CPU per message",
        "us of CPU/message",
        model_e,
        poll_e,
        ss_e,
        at.rates.e_ns,
    );
    let svg = |c: &Chart| c.to_svg(CHART_W, CHART_H).unwrap_or_default();
    (svg(&t), svg(&e))
}

/// One simulator run at the request's pair (`kicklab sim`'s rules: an
/// empty queue at the start, a warm-up of a tenth of the messages plus 4
/// L): T, E, notifications and latency, beside the model's T and E where
/// it has them.
pub fn simulate(text: &str) -> String {
    let req = match Request::parse(text) {
        Ok(r) => r,
        Err(e) => return error(e),
    };
    if req.params.len > MAX_SIM_LEN {
        return error(format!(
            "L: the page simulates queues of up to {MAX_SIM_LEN} slots ({} asked); kicklab sim takes more",
            req.params.len
        ));
    }
    let params = if req.exp {
        req.params.with_exponential_costs()
    } else {
        req.params
    };
    let cfg = SimConfig {
        seed: req.seed,
        ..SimConfig::new(params, req.strategy, req.messages)
    };
    let r = match run_sim(&cfg) {
        Ok(r) => r,
        Err(e) => return error(e.to_string()),
    };
    let rates = r.rates;
    let [np, nc] = rates.notifications_per_message();
    let mut v = json!({
        "T_ns": rates.t_ns,
        "E_ns": rates.e_ns,
        "T": fmt_ns(rates.t_ns),
        "E": fmt_ns(rates.e_ns),
        "E_p": fmt_ns(rates.e_p_ns),
        "E_c": fmt_ns(rates.e_c_ns),
        "messages": rates.messages,
        "notifications_p_per_message": np,
        "notifications_c_per_message": nc,
        "sleeper": rates.sleeper(),
        "events": r.events,
        "strategy": req.strategy.to_string(),
    });
    if let Some(l) = rates.latency_ns {
        v["latency"] = json!(format!(
            "p50 {}, p99 {}, max {}",
            fmt_ns(l.p50),
            fmt_ns(l.p99),
            fmt_ns(l.max)
        ));
    }
    if let Ok(m) = predict(&req.params, req.strategy) {
        v["model"] = json!({
            "regime": m.regime.name(),
            "T_ns": m.rates.t_ns,
            "E_ns": m.rates.e_ns,
            "T": fmt_ns(m.rates.t_ns),
            "E": fmt_ns(m.rates.e_ns),
            "T_ratio": rates.t_ns / m.rates.t_ns,
            "E_ratio": rates.e_ns / m.rates.e_ns,
        });
    }
    let mut flags = req.clone();
    if req.exp {
        // The exponential costs, spelled exactly.
        let p = params;
        flags.flags = vec![
            ("len".into(), p.len.to_string()),
            ("kp".into(), p.k_p.to_string()),
            ("kc".into(), p.k_c.to_string()),
        ];
        flags.flags.retain(|(k, v)| match k.as_str() {
            "len" => v != "256",
            _ => v != "1",
        });
        for (name, c) in [
            ("wp", Some(p.w_p)),
            ("wc", Some(p.w_c)),
            ("np", Some(p.n_p)),
            ("nc", Some(p.n_c)),
            ("sp", Some(p.s_p)),
            ("sc", Some(p.s_c)),
            ("vp", p.v_p),
            ("vc", p.v_c),
        ] {
            if let Some(c) = c {
                flags.flags.push((name.into(), c.spec()));
            }
        }
    }
    let cmd = flags
        .command("sim")
        .arg_some(
            Flag::Strategy,
            (req.strategy != WaitMode::Notify).then(|| shell(&req.strategy.to_string())),
        )
        .arg(Flag::Messages, req.messages)
        .arg(Flag::Seed, req.seed);
    v["command"] = json!(cmd.to_string());
    v.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Value {
        serde_json::from_str(s).unwrap()
    }

    #[test]
    fn explore_is_the_model_of_the_command_line() {
        let v = parse(&explore("wp=2us\nwc=1.1us\nvp=\n"));
        assert_eq!(v["regime"], "FC");
        assert_eq!(v["T_ns"], 4400.0);
        assert_eq!(v["E_ns"], 5700.0);
        assert_eq!(v["m"], 1);
        assert_eq!(v["T"], "4.4us");
        assert_eq!(v["command"], "kicklab model --wp 2us");
        assert_eq!(v["poll"]["T_ns"], 2000.0);
        let charts = v["charts"].as_array().unwrap();
        assert_eq!(charts.len(), 2);
        for c in charts {
            let svg = c.as_str().unwrap();
            assert!(svg.starts_with("<svg") && svg.contains("class=\"kl-chart\""));
            assert!(svg.contains("this pair") && svg.contains(">FC</text>"));
        }
        // The same pair from the other side of the API.
        let p = Params {
            w_p: Cost::Const(2000.0),
            ..Params::default()
        };
        let m = predict(&p, WaitMode::Notify).unwrap();
        assert_eq!(v["T_ns"].as_f64().unwrap(), m.rates.t_ns);
    }

    #[test]
    fn visibility_and_bistability_come_through() {
        let v = parse(&explore(
            "wp=0.6us\nnp=8.36us\nvp=4.22us\nsp=13.2us\nnc=1.69us\nsc=1.11us",
        ));
        assert_eq!(v["regime"], "EWC");
        assert_eq!(v["T"], "8.96us");
        assert_eq!(v["other"]["regime"], "FP");
        assert!(v["other_text"].as_str().unwrap().contains("FP"));
    }

    #[test]
    fn bad_input_is_an_error_naming_the_parameter() {
        for (req, want) in [
            ("kp=300", "k_P"),
            ("wp=abc", "W_P"),
            ("np=1us\nvp=2us", "V_P"),
            ("len=0", "L"),
            ("wx=1us", "wx"),
            ("mode=spin:1us", "mode"),
            ("vary=wp=1us..2us:1", "curves"),
            ("messages=0", "messages"),
            ("wp=-1us", "W_P"),
            ("wp=NaN", "W_P"),
            ("strategy=bogus", "strategy"),
        ] {
            let v = parse(&explore(req));
            let e = v["error"].as_str().unwrap_or_else(|| panic!("{req}: {v}"));
            assert!(e.contains(want), "{req}: {e}");
        }
        assert!(parse(&simulate("kc=0"))["error"]
            .as_str()
            .unwrap()
            .contains("k_C"));
    }

    /// Whatever the page sends, the answer is JSON (a value or an error),
    /// never a panic: in the page a panic is a trap.
    #[test]
    fn hostile_input_never_panics() {
        let huge = u32::MAX.to_string();
        let hostile = [
            format!("len={huge}"),
            format!("len={huge}\nkp={huge}\nkc={huge}"),
            format!("len={huge}\nkp={huge}\nkc={huge}\nwp=1h\nwc=59.9m\nnp=1h\nsp=1h"),
            "wp=1h\nwc=0\nnp=0\nnc=0\nsp=0\nsc=0".into(),
            "wp=0\nwc=0\nnp=0\nnc=0\nsp=0\nsc=0".into(),
            "wp=1e-300ns\nwc=5e-324".into(),
            "wp=1e400us".into(),
            "wp=exp:1h\nwc=phases:1ns@1+1h@1\nnc=mix:0.5:0+1h".into(),
            "vp=0\nvc=0\nnp=1h\nnc=1h".into(),
            format!("vary=len=1..{huge}:2000"),
            format!("vary=kp=1..{huge}:2000\nlen={huge}"),
            "vary=vp=0..1h:2000".into(),
            "vary=wp=1h..0:2".into(),
            "vary=wp=0..0:2".into(),
            "messages=2000000\nlen=65536\nwp=1h\nnp=1h".into(),
            "strategy=coalesce:4294967295,1h\nmessages=1000".into(),
            "strategy=sleep:0\nmessages=1000".into(),
            "strategy=spin:1h\nmessages=1000\nwp=1h".into(),
            "mode=poll\nlen=1".into(),
            "\u{0}\u{fffd}==\n=\nwp==1us".into(),
            "seed=18446744073709551615\nexp=1\nmessages=1000".into(),
            format!("len={}\nmessages=10", MAX_SIM_LEN + 1),
        ];
        for req in &hostile {
            for answer in [explore(req), simulate(req)] {
                let v: Value =
                    serde_json::from_str(&answer).unwrap_or_else(|e| panic!("{req}: {e}"));
                assert!(v.is_object(), "{req}: {v}");
            }
        }
        let v = parse(&simulate(&format!("len={}", MAX_SIM_LEN + 1)));
        assert!(v["error"].as_str().unwrap().starts_with("L: "), "{v}");
    }

    #[test]
    fn simulate_runs_the_simulator_beside_the_model() {
        let v = parse(&simulate("wp=2us\nmessages=5000"));
        // Constant costs: the simulator reproduces the closed form.
        assert!((v["T_ns"].as_f64().unwrap() - 4400.0).abs() < 1e-6, "{v}");
        assert_eq!(v["model"]["T_ns"], 4400.0);
        // Measured over whole notification rounds: about the messages asked.
        let n = v["messages"].as_u64().unwrap();
        assert!((4900..=5000).contains(&n), "{n}");
        assert_eq!(
            v["command"],
            "kicklab sim --wp 2us --messages 5000 --seed 1"
        );
        // Random costs: another number, and the command says so exactly.
        let r = parse(&simulate("wp=2us\nmessages=5000\nexp=1\nseed=3"));
        assert_ne!(r["T_ns"], v["T_ns"]);
        let cmd = r["command"].as_str().unwrap();
        assert!(
            cmd.contains("--wp exp:2000ns") && cmd.ends_with("--seed 3"),
            "{cmd}"
        );
        let s = parse(&simulate("wp=2us\nmessages=5000\nstrategy=spin:1us"));
        assert!(s["model"].is_null());
        assert!(s["command"]
            .as_str()
            .unwrap()
            .contains("--strategy spin:1us"));
    }

    #[test]
    fn curves_follow_the_range_and_skip_invalid_points() {
        let v = parse(&explore("vary=kp=1..300:50"));
        let svg = v["charts"][0].as_str().unwrap();
        // k_P above L = 256 makes no pair: those points are left out.
        assert!(svg.contains("k_P [messages]"));
        let meta = svg.split("kl-data\">").nth(1).unwrap();
        let meta = meta
            .split("</metadata>")
            .next()
            .unwrap()
            .replace("&quot;", "\"");
        let m: Value = serde_json::from_str(&meta).unwrap();
        let n = m["s"][0]["p"].as_array().unwrap().len();
        assert!(n > 0 && n < 50, "{n}");
    }
}
