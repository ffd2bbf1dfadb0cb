//! `advise`: the strategy to use for a pair and a workload, searched with
//! the simulator. Every family of `control.md` is tried over a grid of its
//! parameters; the choice is the least CPU per message among those within
//! 5% of the best throughput found and within the latency bound. For each
//! real mechanism asked for (`knobs`), the search takes in its grid of
//! settings and names its best setting, its default and its nearest
//! alternatives with the same figures. What does not live here: the
//! strategies (`kicklab_model::control`), the mechanisms' settings
//! (`knobs`), printing.

use kicklab_model::{fmt_ns, Cost, IdleScale, Params, WaitMode};
use kicklab_sim::{default_warmup, simulate, SimConfig};
use rayon::prelude::*;
use serde::Serialize;

use crate::knobs::{Mechanism, Settings};
use crate::{Input, LabError, Progress};

/// What to advise on.
#[derive(Debug, Clone)]
pub struct AdviseSpec {
    /// The pair and its workload (W_P, W_C distributions).
    pub params: Params,
    /// How start-ups scale with idle time (from a profile), per party.
    pub idle_scale: [Option<IdleScale>; 2],
    /// What a nap's wake-up costs each party (from a profile); `None`: S.
    pub nap: [Option<Cost>; 2],
    /// Bound on the p99 message latency [ns].
    pub latency_ns: f64,
    /// Messages simulated per candidate.
    pub messages: u64,
    /// Seed.
    pub seed: u64,
    /// Search finer grids (what `advise` is checked against).
    pub exhaustive: bool,
    /// The real mechanisms to give settings for (`--for`).
    pub mechanisms: Vec<Mechanism>,
}

/// One candidate's simulated figures.
#[derive(Debug, Clone, Serialize)]
pub struct Candidate {
    /// The strategy, as `--strategy` takes it (both parties).
    pub strategy: String,
    /// T [ns].
    #[serde(rename = "T_ns")]
    pub t_ns: f64,
    /// E [ns].
    #[serde(rename = "E_ns")]
    pub e_ns: f64,
    /// p99 message latency [ns].
    pub latency_p99_ns: f64,
    /// The strategy as run.
    #[serde(skip)]
    pub mode: WaitMode,
}

/// One setting of a real mechanism, with what the simulator predicts of
/// it.
#[derive(Debug, Clone, Serialize)]
pub struct KnobSetting {
    /// The strategy it runs (`--strategy` form).
    pub strategy: String,
    /// The mechanism's parameters.
    pub settings: Settings,
    /// Its simulated T, E and p99 latency.
    pub predicted: Candidate,
}

/// A real mechanism's best setting for the pair.
#[derive(Debug, Clone, Serialize)]
pub struct Knob {
    /// Its name (`kvm-host`, `napi`, ...).
    pub mechanism: &'static str,
    /// What it is.
    pub what: &'static str,
    /// Its best setting, by advise's rule among those it can express.
    #[serde(flatten)]
    pub best: KnobSetting,
    /// The commands that would apply it (kicklab applies none).
    pub commands: Vec<String>,
    /// Whether that setting is advise's pick itself.
    pub implements_pick: bool,
    /// Where it is not: why the mechanism cannot run the pick.
    pub note: Option<String>,
    /// Its setting as shipped.
    pub default: KnobSetting,
    /// Its next settings by the same rule.
    pub alternatives: Vec<KnobSetting>,
}

/// The advice.
#[derive(Debug, Clone, Serialize)]
pub struct Advice {
    /// The strategy to use (`--strategy` form).
    pub strategy: String,
    /// Its simulated T, E and p99 latency.
    pub predicted: Candidate,
    /// Why it won, in words.
    pub reason: String,
    /// Every candidate compared, best first by the same rule.
    pub alternatives: Vec<Candidate>,
    /// The settings of each real mechanism asked for.
    pub knobs: Vec<Knob>,
}

/// The longest mean cost (W, N, S) advise takes [ns]: its grid of sleeps
/// and spins (0.5-200 us) is built for microsecond work, and a timed sleep
/// of 0.5 us against waits of a millisecond re-checks thousands of times a
/// message (seconds a candidate).
pub const MAX_COST_NS: f64 = 500_000.0;

/// The fewest messages a candidate is simulated over.
pub const MIN_MESSAGES: u64 = 1000;

/// The most messages a search simulates, warm-ups included, over all its
/// candidates: seconds on two cores (the simulator runs 20-100 million
/// messages a second on a core). The default search is about 7 million,
/// the exhaustive one 20 million.
pub const MAX_SEARCH_MESSAGES: u64 = 500_000_000;

/// The candidates: every family over a grid of its parameters, and each
/// mechanism's grid of settings.
pub fn candidates(latency_ns: f64, exhaustive: bool, mechanisms: &[Mechanism]) -> Vec<WaitMode> {
    let us = |v: f64| v * 1000.0;
    let grid: Vec<f64> = if exhaustive {
        (0..=24)
            .map(|i| us(0.5) * 2f64.powf(f64::from(i) / 2.0))
            .collect()
    } else {
        [0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0]
            .into_iter()
            .map(us)
            .collect()
    };
    let mut out = vec![WaitMode::Poll, WaitMode::Notify];
    out.extend(grid.iter().map(|&b| WaitMode::Spin { budget_ns: b }));
    out.extend(grid.iter().map(|&y| WaitMode::Sleep { period_ns: y }));
    let parse = |s: &str| WaitMode::parse(s).expect("a valid candidate");
    for s in [
        "halt-poll",
        "halt-poll:shrink=0",
        "haltpoll",
        "hybrid",
        "hybrid:min",
        "defer",
        "defer:timeout=50us,count=4",
        "coalesce:4,20us",
        "coalesce:16,50us",
    ] {
        out.push(parse(s));
    }
    if exhaustive {
        for t in [5.0, 10.0, 20.0, 50.0, 100.0] {
            for c in [2, 5, 10, 20] {
                out.push(WaitMode::Defer {
                    timeout_ns: us(t),
                    count: c,
                });
            }
        }
        for max in [50.0, 100.0, 200.0, 500.0] {
            out.push(parse(&format!("halt-poll:max={max}us")));
            out.push(parse(&format!("haltpoll:max={max}us")));
        }
    }
    out.push(WaitMode::Adaptive {
        latency_ns: Some(latency_ns),
        check: true,
    });
    for m in mechanisms {
        for mode in m.grid() {
            if !out.contains(&mode) {
                out.push(mode);
            }
        }
    }
    out
}

/// Where a profile's ring cost per message alone takes W_P or W_C past
/// what advise searches ([`MAX_COST_NS`]): why, naming the cost, so that
/// the profile is blamed and not W, which is within bounds. `given`: the
/// pair with W as given; `with_ring`: with the profile's ring cost added
/// to it.
pub fn ring_past_search(given: &Params, with_ring: &Params) -> Option<String> {
    [
        ("W_P", given.w_p, with_ring.w_p),
        ("W_C", given.w_c, with_ring.w_c),
    ]
    .into_iter()
    .find(|(_, w, total)| w.mean_ns() <= MAX_COST_NS && total.mean_ns() > MAX_COST_NS)
    .map(|(name, w, total)| {
        format!(
            "its ring cost per message ({}) added to {name} ({}) makes it {}, past the {} advise \
             searches; a ring cost that large is no calibration of this machine's ring (calibrate again)",
            fmt_ns(total.mean_ns() - w.mean_ns()),
            fmt_ns(w.mean_ns()),
            fmt_ns(total.mean_ns()),
            fmt_ns(MAX_COST_NS)
        )
    })
}

/// Searches the candidates with the simulator and picks one.
///
/// # Errors
///
/// Bad inputs.
pub fn advise(spec: &AdviseSpec, progress: &dyn Progress) -> Result<Advice, LabError> {
    if spec.messages < MIN_MESSAGES {
        return Err(LabError::input(
            Input::Messages,
            format!(
                "need at least {MIN_MESSAGES} messages per candidate (fewer, and its T and p99 \
                 latency are a few rounds', not the strategy's); got {}",
                spec.messages
            ),
        ));
    }
    if spec.latency_ns.is_nan() || spec.latency_ns <= 0.0 {
        return Err(LabError::input(
            Input::Latency,
            "the latency bound must be > 0",
        ));
    }
    spec.params.validate()?;
    for (param, cost) in spec.params.costs() {
        let mean = cost.mean_ns();
        if mean > MAX_COST_NS {
            return Err(LabError::Param(kicklab_model::ParamError {
                param,
                reason: format!(
                    "advise searches sleeps and spins of 0.5-200 us, for costs of at most {} \
                     (a mean of {} here would take it minutes, and its grid says nothing there); \
                     `{}` simulates any strategy at any cost",
                    fmt_ns(MAX_COST_NS),
                    fmt_ns(mean),
                    one_strategy()
                ),
            }));
        }
    }
    let modes = candidates(spec.latency_ns, spec.exhaustive, &spec.mechanisms);
    let warmup = default_warmup(spec.messages, spec.params.len).max(20_000);
    let runs = modes.len() as u64;
    let len = spec.params.len;
    if let Some((total, len_grew_it)) =
        kicklab_sim::over_budget(runs, spec.messages, warmup, len, MAX_SEARCH_MESSAGES)
    {
        let why = format!(
            "{} candidates of {} messages and a warm-up of {warmup} (a tenth of them and 4 L) \
             are {total} simulated messages, minutes of search; advise takes at most \
             {MAX_SEARCH_MESSAGES} (`{}` simulates any one strategy)",
            modes.len(),
            spec.messages,
            one_strategy()
        );
        // The warm-up's 4 L is what grew it, or the messages.
        return Err(if len_grew_it {
            LabError::Param(kicklab_model::ParamError {
                param: kicklab_model::Param::Len,
                reason: why,
            })
        } else {
            LabError::input(Input::Messages, why)
        });
    }
    progress.start("advise", modes.len() as u64);
    let runs: Vec<Result<Candidate, LabError>> = modes
        .par_iter()
        .map(|&mode| {
            let cfg = SimConfig {
                warmup,
                seed: spec.seed,
                idle_scale: spec.idle_scale,
                nap: spec.nap,
                ..SimConfig::new(spec.params, mode, spec.messages)
            };
            let r = simulate(&cfg)?;
            progress.step();
            Ok(Candidate {
                strategy: mode.to_string(),
                t_ns: r.rates.t_ns,
                e_ns: r.rates.e_ns,
                latency_p99_ns: r.rates.latency_ns.map_or(f64::NAN, |l| l.p99),
                mode,
            })
        })
        .collect();
    progress.finish();
    let mut all = runs.into_iter().collect::<Result<Vec<_>, _>>()?;
    let best_t = all.iter().map(|c| c.t_ns).fold(f64::INFINITY, f64::min);
    let fast = |c: &Candidate| c.t_ns <= 1.05 * best_t;
    let bounded = |c: &Candidate| c.latency_p99_ns <= spec.latency_ns;
    // Best first: within 5% of the best T and the latency bound, by E; then
    // within 5% of the best T, by latency; then the rest by T.
    let rank = |c: &Candidate| match (fast(c), bounded(c)) {
        (true, true) => (0, c.e_ns),
        (true, false) => (1, c.latency_p99_ns),
        _ => (2, c.t_ns),
    };
    all.sort_by(|a, b| {
        let (ra, rb) = (rank(a), rank(b));
        ra.0.cmp(&rb.0).then(ra.1.total_cmp(&rb.1))
    });
    let best = all[0].clone();
    let reason = match rank(&best).0 {
        0 => format!(
            "the least CPU per message among the strategies within 5% of the best T ({:.1} ns) and under the p99 latency bound",
            best_t
        ),
        _ => format!(
            "no strategy within 5% of the best T ({:.1} ns) keeps the p99 latency under the bound \
             ({}): of those, the one with the lowest p99 latency",
            best_t,
            fmt_ns(spec.latency_ns)
        ),
    };
    let knobs = spec
        .mechanisms
        .iter()
        .filter_map(|&m| knob(m, &best.mode, &all, |c| rank(c).0))
        .collect();
    Ok(Advice {
        strategy: best.strategy.clone(),
        predicted: best,
        reason,
        alternatives: all,
        knobs,
    })
}

/// The settings `m` can express among `ranked` (best first, `rank` the
/// order's key), its best, its default and its next two; `None` where none
/// was searched. Where the default is as good as the best (the same rank,
/// T and E within 1%), the default is the best: no change to make.
fn knob(
    m: Mechanism,
    pick: &WaitMode,
    ranked: &[Candidate],
    rank: impl Fn(&Candidate) -> i32,
) -> Option<Knob> {
    let setting = |c: &Candidate| {
        m.settings(&c.mode).map(|settings| KnobSetting {
            strategy: c.strategy.clone(),
            settings,
            predicted: c.clone(),
        })
    };
    let default_mode = m.default_mode();
    let default = ranked
        .iter()
        .find(|c| c.mode == default_mode)
        .and_then(setting)?;
    let mut own: Vec<KnobSetting> = ranked.iter().filter_map(setting).collect();
    let (b, d) = (&own[0].predicted, &default.predicted);
    let close = |x: f64, y: f64| x <= 1.01 * y;
    if rank(d) == rank(b) && close(d.t_ns, b.t_ns) && close(d.e_ns, b.e_ns) {
        own.retain(|k| k.predicted.mode != default_mode);
        own.insert(0, default.clone());
    }
    let best = own.remove(0);
    let alternatives: Vec<KnobSetting> = own
        .into_iter()
        .filter(|k| k.predicted.mode != default_mode)
        .take(2)
        .collect();
    let implements_pick = best.predicted.mode == *pick;
    let missed = match rank(&best.predicted) {
        0 => None,
        1 => Some("none of its settings keeps the p99 latency bound: this one comes closest"),
        _ => Some("none of its settings keeps T within 5% of the best: this one comes closest"),
    };
    let note = if implements_pick {
        None
    } else if m.settings(pick).is_some() {
        Some(format!(
            "the pick ({pick}) does within 1% of its setting as shipped here: no change to make"
        ))
    } else {
        Some(m.cannot(pick))
    };
    let note = match (note, missed) {
        (Some(n), Some(m)) => Some(format!("{m}; {n}")),
        (n, m) => n.or(m.map(str::to_string)),
    };
    Some(Knob {
        mechanism: m.name(),
        what: m.what(),
        commands: m.commands(&best.settings),
        best,
        implements_pick,
        note,
        default,
        alternatives,
    })
}
/// The command that simulates one strategy, where a search refuses to.
pub(crate) fn one_strategy() -> kicklab_model::CommandLine {
    kicklab_model::CommandLine::new("sim").arg(kicklab_model::Flag::Strategy, "S")
}
