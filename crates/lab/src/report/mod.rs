//! The report: every figure and table, assembled as one [`Page`] with its
//! CSV data. Rendering and writing files is `kicklab-report`'s.
//!
//! Sections: the regimes (model vs simulator), the explorer (the model and
//! simulator live in the page, as WebAssembly), the paper's Fig. 2 (T vs
//! W_P, long and short queue), Fig. 3 (E vs W_C), random costs, the
//! calibrated costs and the Fig. 4 validation on threads and on a KVM
//! guest, the message-passing (ping-pong) table, and the closed forms.

use kicklab_model::Profile;
use kicklab_model::{CommandLine, Cost, Flag, Params, WaitMode};
use kicklab_report::{html_escape, sweep_charts, sweep_csv, Page, Section};
use kicklab_sim::{sweep, Vary};

use crate::scale::ScaleBackend;
use crate::{Input, LabError, Progress};

mod glance;
mod glossary;
mod measured;
mod order;
mod paper;

pub use measured::idle_chart;

use glance::{glance_html, Verdict};
use measured::{kvm_sections, testbed_sections};
use paper::{closed_forms_section, regimes_section, Figure};

/// What the report runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReportOptions {
    /// Points per swept curve (>= 2).
    pub points: u32,
    /// Messages simulated per point (>= 1).
    pub messages: u64,
    /// Seed of the random cost streams.
    pub seed: u64,
    /// Run the real sections (calibration, validation, ping-pong).
    pub testbed: bool,
    /// Messages per real run in the validation (>= 1).
    pub real_messages: u64,
    /// Repetitions of each real run in the validation
    /// (1..=[`crate::validate::MAX_REPEAT`]).
    pub repeat: u32,
    /// The full depth of the real runs (three runs of each flags point,
    /// longer scale and qos runs); without it the real sections run once
    /// or shorter, and say so.
    pub full: bool,
}

impl Default for ReportOptions {
    fn default() -> Self {
        ReportOptions {
            points: 120,
            messages: 50_000,
            seed: 1,
            testbed: true,
            real_messages: QUICK_REAL_MESSAGES,
            repeat: QUICK_REPEAT,
            full: false,
        }
    }
}

/// Messages per real validation run, quick and full.
pub const QUICK_REAL_MESSAGES: u64 = 40_000;
/// The same, full.
pub const FULL_REAL_MESSAGES: u64 = 60_000;
/// Repetitions of each validation run, quick (two: a range, not a
/// median of three).
pub const QUICK_REPEAT: u32 = 2;
/// The same, full.
pub const FULL_REPEAT: u32 = crate::validate::DEFAULT_REPEAT;

impl ReportOptions {
    /// The `kicklab report` command that makes this report again: every
    /// option it ran with, the real runs' depth where it differs from the
    /// depth's default.
    #[must_use]
    pub fn command_line(&self) -> String {
        let c = CommandLine::new("report")
            .arg(Flag::Points, self.points)
            .arg(Flag::Messages, self.messages)
            .arg(Flag::Seed, self.seed);
        if !self.testbed {
            return c.switch(Flag::NoTestbed, true).into();
        }
        let (messages, repeat) = if self.full {
            (FULL_REAL_MESSAGES, FULL_REPEAT)
        } else {
            (QUICK_REAL_MESSAGES, QUICK_REPEAT)
        };
        c.switch(Flag::Full, self.full)
            .arg_some(
                Flag::RealMessages,
                (self.real_messages != messages).then_some(self.real_messages),
            )
            .arg_some(Flag::Repeat, (self.repeat != repeat).then_some(self.repeat))
            .into()
    }

    /// The validation's real runs.
    fn validate_options(&self) -> crate::validate::Options {
        crate::validate::Options {
            messages: self.real_messages,
            seed: self.seed,
            repeat: self.repeat,
        }
    }

    /// Checks the options before anything runs.
    ///
    /// # Errors
    ///
    /// The first input out of range.
    pub fn check(&self) -> Result<(), LabError> {
        if self.points < 2 {
            return Err(LabError::input(
                Input::Points,
                "need at least 2 points per curve",
            ));
        }
        if self.points > Vary::MAX_POINTS {
            return Err(LabError::input(
                Input::Points,
                format!("at most {} points per curve", Vary::MAX_POINTS),
            ));
        }
        if self.messages == 0 {
            return Err(LabError::input(
                Input::Messages,
                "need at least 1 message per point",
            ));
        }
        if self.testbed && self.real_messages == 0 {
            return Err(LabError::input(
                Input::RealMessages,
                "need at least 1 message per real run",
            ));
        }
        if self.testbed && !(1..=crate::validate::MAX_REPEAT).contains(&self.repeat) {
            return Err(LabError::input(
                Input::Repeat,
                format!(
                    "between 1 and {} repetitions per point ({} asked)",
                    crate::validate::MAX_REPEAT,
                    self.repeat
                ),
            ));
        }
        Ok(())
    }
}

/// The assembled report: the page and the CSV files it links to.
#[derive(Debug, Clone)]
pub struct Report {
    /// The page (sections, figures, tables).
    pub page: Page,
    /// `(file name, CSV text)` of the data behind the figures.
    pub csvs: Vec<(String, String)>,
}

impl Report {
    /// Writes the page and its data into `dir`.
    ///
    /// # Errors
    ///
    /// A file that cannot be written.
    pub fn write(&self, dir: &std::path::Path) -> Result<(), LabError> {
        self.page.write_with(dir, &self.csvs)?;
        Ok(())
    }
}

/// A table of calibrated costs: a first text column, then N_P, N_C, S_P,
/// S_C as text cells, then `extra`.
/// Simulated seconds per point of the multi-VM figures.
const QOS_SECONDS: f64 = 5.0;
/// The paper's seconds per real qos run (times 1/10: 0.5 s real), full
/// and quick.
const QOS_REAL_SECONDS: [f64; 2] = [5.0, 2.5];

/// Seconds per run of the idle-with-timeout sweep, full and quick: each
/// of its 10 points run [`SCALE_REPEATS`] times.
const SCALE_SECONDS: [f64; 2] = [0.2, 0.1];
/// Runs per point of the measured idle-with-timeout sweeps: their spread
/// is drawn.
const SCALE_REPEATS: usize = 3;
/// Simulated seconds per point of the simulated scale sweep.
const SCALE_SIM_SECONDS: f64 = 1.0;

/// Signals per run of the notification-flags sweep (63 runs of about
/// 0.2 s).
const FLAG_SIGNALS: u64 = 10_000;
/// Signals per run of the sweep with a KVM guest (63 runs of about 0.5 s:
/// 100 us apart; fewer left the bit vector's spread across the sources
/// to the noise of a few slow wake-ups: 1.34x with 2000).
const FLAG_SIGNALS_KVM: u64 = 5_000;

/// Runs everything the report shows and assembles the page.
///
/// # Errors
///
/// Bad options ([`ReportOptions::check`]), or a part that fails.
pub fn build(a: &ReportOptions, progress: &dyn Progress) -> Result<Report, LabError> {
    a.check()?;
    // Full or quick depth of the real runs.
    let depth = usize::from(!a.full);
    let flag_repeat = if a.full { crate::flags::REPEAT } else { 1 };
    let started = std::time::Instant::now();
    let d = Params::default();
    let n = a.points;
    let figures = [
        Figure {
            id: "fig2",
            heading: "Fig. 2: time per message vs W_P (L = 256)",
            result: "Below W_P = W_C (1.1 us) the producer is fast (FP) and slowing it down raises throughput, as the \
                     paper says; from W_P of about 1.3 us every message costs a kick and T = W_P + N_P.",
            text: "The paper's Fig. 2 gives no parameters; here it is drawn with those of its Fig. 4 experiment: W_C = 1.1 us \
                   and the N and S it measured (section 3.3), with L = 256 and k_P = k_C = 1 (kicklab's choice: the paper \
                   does not give L or k for that experiment). Left of W_P = W_C the producer is fast (FP, P sleeps); right \
                   of it the consumer is fast (FC, C sleeps). The staircase is m changing in whole messages. Left of \
                   W_P = W_C, slowing the fast producer down (raising W_P towards W_C) raises throughput: T_FP falls as W_P \
                   grows (the paper's point, section 3.1: W_P in FP, W_C in FC). The jump at W_P ≈ 1.3 us is m reaching \
                   k_P = 1: one kick (N_P = 2.4 us) per message. From there on T_FC = W_P + N_P lies above the SS best case, \
                   where the paper has SS above FC and FP: with these costs a kick (2.4 us) outlasts C's work (1.1 us), and \
                   SS's best case spreads its kicks over a full queue.",
            params: d,
            vary: format!("wp=0.1us..3us:{n}"),
        },
        Figure {
            id: "fig2-short",
            heading: "Fig. 2, short queue: time per message vs W_P (L = 4)",
            result: "With a 4-slot queue the fast-producer side falls into SPS and SS, far above T_GP.",
            text: "The same costs with a 4-slot queue: the queue cannot absorb P's 3.9 us start-up, so the fast-producer \
                   side falls into SPS and SS, far above T_GP.",
            params: Params { len: 4, ..d },
            vary: format!("wp=0.1us..3us:{n}"),
        },
        Figure {
            id: "fig3",
            heading: "Fig. 3: CPU cost per message vs W_C",
            result: "Polling's CPU per message grows twice as fast as the notifying pair's, so away from W_P = W_C \
                     notifications cost less CPU even where they are slower.",
            text: "W_P = 1 us. Polling costs 2 max(W_P, W_C): its slope is twice the others', so past some |W_P - W_C| \
                   notifications are cheaper in CPU even where they are slower.",
            params: d,
            vary: format!("wc=0.1us..3us:{n}"),
        },
        Figure {
            id: "visibility",
            heading: "Kick visibility: time per message vs W_P, the kick seen half-way (V_P = N_P / 2)",
            result: "A kick the consumer sees half-way through turns much of FP into EWC: every message costs a kick \
                     and T = W_P + N_P, three times the V = N model's.",
            text: "The Fig. 2 set-up with C woken 1.2 us into P's 2.4 us kick (a KVM guest's ioeventfd kick is seen by the \
                   host about half-way through it). Where C is not faster than P, the V = N model says FP (P fills the queue \
                   and sleeps, T close to W_C); here C is woken inside the kick, takes the one message and sleeps again before \
                   P's next one (EWC), so every message costs a kick: T = W_P + N_P, three times more. From a full queue the \
                   same pairs stay in FP (they are bistable: the simulator started from a full queue).",
            params: Params {
                v_p: Some(Cost::Const(1200.0)),
                ..d
            },
            vary: format!("wp=0.1us..3us:{n}"),
        },
        Figure {
            id: "random",
            heading: "Random costs: time per message vs W_P, every cost exponential",
            result: "Variable costs smooth the closed form's staircase; where the simulator leaves the curve of the \
                     means, the mean-value model is off.",
            text: "Every cost exponential with the Fig. 4 means. The closed form (of the means) keeps its staircase; the \
                   simulator shows how variable costs smooth it, and where the mean-value model is off.",
            params: d.with_exponential_costs(),
            vary: format!("wp=0.1us..3us:{n}"),
        },
    ];
    let mut sections = vec![
        regimes_section(a.messages, a.seed)?,
        crate::explorer::section(),
    ];
    let mut csvs = Vec::new();
    for f in &figures {
        let vary = Vary::parse(&f.vary).map_err(|e| LabError::input(Input::Vary, e.to_string()))?;
        progress.start(f.id, u64::from(vary.points));
        let pts = sweep(
            &f.params,
            &vary,
            WaitMode::Notify,
            a.messages,
            a.seed,
            &|| progress.step(),
        )?;
        progress.finish();
        let (t, e) = sweep_charts(&pts, &vary, f.heading.split(':').next().unwrap_or(f.id));
        // The pair's flags, the varied one too: a distribution's shape
        // stays when the sweep sets its mean.
        let cmd = CommandLine::new("sweep")
            .arg(Flag::Vary, &f.vary)
            .raw(&f.params.flags(&[]))
            .arg(Flag::Messages, a.messages);
        let html = format!(
            "<p>{}</p><p>{}</p><p>Reproduce: <code>{}</code>. Data: <a href=\"{id}.csv\">{id}.csv</a>.</p>",
            html_escape(f.result),
            html_escape(f.text),
            html_escape(&cmd.to_string()),
            id = f.id
        );
        sections.push(Section {
            id: f.id.into(),
            heading: f.heading.into(),
            html,
            figures: vec![
                (
                    format!("{}-T", f.id),
                    t.to_svg(kicklab_report::FIG_W, kicklab_report::FIG_H)?,
                    t.caption(),
                ),
                (
                    format!("{}-E", f.id),
                    e.to_svg(kicklab_report::FIG_W, kicklab_report::FIG_H)?,
                    e.caption(),
                ),
            ],
            layout: kicklab_report::Layout::Summary,
        });
        csvs.push((format!("{}.csv", f.id), sweep_csv(&pts, &vary)));
    }
    // The paper's Fig. 5, extended: every strategy against polling.
    let spec = crate::control::ControlSpec {
        points: a.points.min(15),
        messages: a.messages,
        workloads: crate::control::Workload::ALL.to_vec(),
        seed: a.seed,
        ..crate::control::ControlSpec::default()
    };
    let study = crate::control::control_study(&spec, progress)?;
    // Each part with targets of its own, judged: (anchor, what, verdict).
    let mut glance: Vec<(&str, &str, Verdict)> = Vec::new();
    let held = study.held();
    glance.push((
        "control",
        "kicklab's controller against polling and the anchors (simulated)",
        Verdict::count(held, study.points.len(), "points"),
    ));
    sections.push(crate::control::section(&study, &spec)?);
    csvs.push(("control.csv".into(), crate::control::csv(&study)));
    // The regime map: W_P x W_C, model and simulator.
    let map_points = a.points.clamp(2, 40);
    let map_spec = crate::map::MapSpec {
        base: d,
        x: Vary::parse(&format!("wp=0.1us..3us:{map_points}"))
            .map_err(|e| LabError::input(Input::Vary, e.to_string()))?,
        y: Vary::parse(&format!("wc=0.1us..3us:{map_points}"))
            .map_err(|e| LabError::input(Input::Vary, e.to_string()))?,
        mode: WaitMode::Notify,
        sim_messages: Some(a.messages),
        seed: a.seed,
    };
    let map = crate::map::map(&map_spec, progress)?;
    let cmd = CommandLine::new("map")
        .arg(Flag::X, format!("wp=0.1us..3us:{map_points}"))
        .arg(Flag::Y, format!("wc=0.1us..3us:{map_points}"))
        .arg(Flag::Messages, a.messages)
        .to_string();
    sections.push(crate::map::section(&map, &map_spec, &cmd)?);
    csvs.push(("map.csv".into(), crate::map::csv(&map, &map_spec)));
    // Several VMs, one device (Lakshmi and Nandy), simulated and solved.
    progress.note("report: several VMs, one device");
    let qos = crate::qos::figures(QOS_SECONDS, a.seed)?;
    glance.push((
        "qos",
        "several VMs, one device (simulated)",
        Verdict::of(&qos.failures),
    ));
    sections.push(crate::qos::section(&qos, QOS_SECONDS, a.seed)?);
    csvs.push(("qos.csv".into(), crate::qos::csv(&qos)));
    // Idle-with-timeout at scale (Denali), simulated (well under a second).
    let runs = crate::scale::sweep(ScaleBackend::Sim, SCALE_SIM_SECONDS, 1, progress)?;
    glance.push((
        "scale-sim",
        "idle-with-timeout at 8 guests (simulated)",
        Verdict::scale(&runs),
    ));
    sections.push(crate::scale::section(
        &runs,
        SCALE_SIM_SECONDS,
        ScaleBackend::Sim,
        None,
    )?);
    if a.testbed {
        // The same system for real (about 10 s): threads over kicklab
        // rings, the paper's times x 1/10, 0.5 s per run, no retries.
        progress.note("report: several VMs, one device, real threads");
        let o = crate::qos_real::RealOptions {
            seconds: QOS_REAL_SECONDS[depth],
            tries: 1,
            ..crate::qos_real::RealOptions::new()
        };
        let real = crate::qos_real::real_figures(&o, progress)?;
        glance.push((
            "qos-real",
            "several VMs, one device, real threads",
            Verdict::of(&real.failures),
        ));
        sections.push(crate::qos_real::section(&real, "qos-real.csv")?);
        csvs.push((
            "qos-real.csv".into(),
            crate::qos_real::table(&real).to_csv(),
        ));
        // And with a KVM guest per VM (about 15 s), where KVM is usable.
        match kicklab_testbed::kvm::available() {
            Ok(()) => {
                progress.note("report: several VMs, one device, a KVM guest per VM");
                let o = crate::qos_real::RealOptions {
                    core: kicklab_testbed::qos::VmCore::Guest,
                    ..o
                };
                let real = crate::qos_real::real_figures(&o, progress)?;
                glance.push((
                    "qos-real-kvm",
                    "several VMs, one device, real KVM guests",
                    Verdict::of(&real.failures),
                ));
                sections.push(crate::qos_real::section(&real, "qos-real-kvm.csv")?);
                csvs.push((
                    "qos-real-kvm.csv".into(),
                    crate::qos_real::table(&real).to_csv(),
                ));
            }
            Err(why) => progress.note(&format!(
                "report: no KVM guests for several VMs, one device ({why})"
            )),
        }
    }
    // What the findings summarise: (backend, profile, validation points).
    let mut validated: Vec<(String, Profile, Vec<crate::validate::Point>)> = Vec::new();
    if a.testbed {
        let (testbed, futex, futex_points) = testbed_sections(a, progress)?;
        sections.extend(testbed);
        validated.push(("futex".into(), futex.clone(), futex_points));
        let runs = crate::scale::sweep(
            ScaleBackend::Threads,
            SCALE_SECONDS[depth],
            SCALE_REPEATS,
            progress,
        )?;
        let overlay = crate::scale::Overlay {
            runs: crate::scale::sweep_with(
                ScaleBackend::Sim,
                SCALE_SIM_SECONDS,
                1,
                Some(&futex),
                progress,
            )?,
            kick_ns: futex.np_cpu.median_ns,
            wake_ns: futex.sc_cpu.median_ns,
        };
        glance.push((
            "scale",
            "idle-with-timeout at 8 guests (threads)",
            Verdict::scale(&runs),
        ));
        sections.push(crate::scale::section(
            &runs,
            SCALE_SECONDS[depth],
            ScaleBackend::Threads,
            Some(&overlay),
        )?);
        match kicklab_testbed::kvm::available() {
            Ok(()) => {
                let runs = crate::scale::sweep(
                    ScaleBackend::Kvm,
                    SCALE_SECONDS[depth],
                    SCALE_REPEATS,
                    progress,
                )?;
                glance.push((
                    "scale-kvm",
                    "idle-with-timeout at 8 guests (KVM guests)",
                    Verdict::scale(&runs),
                ));
                sections.push(crate::scale::section(
                    &runs,
                    SCALE_SECONDS[depth],
                    ScaleBackend::Kvm,
                    None,
                )?);
            }
            Err(why) => progress.note(&format!("report: no KVM guests at scale ({why})")),
        }
        let (flags, ranges): (Vec<_>, Vec<_>) = crate::flags::sweep(
            kicklab_testbed::flags::FlagsBackend::Threads,
            FLAG_SIGNALS,
            flag_repeat,
            progress,
        )?
        .into_iter()
        .unzip();
        glance.push((
            "flags",
            "notification flags: the bit vector's wake-up flat across sources (threads)",
            Verdict::spread(&flags),
        ));
        sections.push(crate::flags::section(
            &flags,
            &ranges,
            FLAG_SIGNALS,
            flag_repeat,
        )?);
        match kicklab_testbed::kvm::available() {
            Ok(()) => {
                let (flags, ranges): (Vec<_>, Vec<_>) = crate::flags::sweep(
                    kicklab_testbed::flags::FlagsBackend::Kvm,
                    FLAG_SIGNALS_KVM,
                    flag_repeat,
                    progress,
                )?
                .into_iter()
                .unzip();
                glance.push((
                    "flags-kvm",
                    "notification flags: the bit vector's wake-up flat across sources (KVM guest)",
                    Verdict::spread(&flags),
                ));
                sections.push(crate::flags::section(
                    &flags,
                    &ranges,
                    FLAG_SIGNALS_KVM,
                    flag_repeat,
                )?);
            }
            Err(why) => progress.note(&format!("report: no flags from a KVM guest ({why})")),
        }
        let (kvm, measured) = kvm_sections(a, progress)?;
        sections.extend(kvm);
        validated.extend(measured);
    } else {
        progress.note("report: no real runs (testbed off)");
    }
    sections.push(closed_forms_section());
    let findings = crate::findings::of_runs(&validated, a.seed)?;
    sections.push(crate::findings::knobs_section(&findings.advice));
    sections.push(glossary::section());
    csvs.push((
        "findings.json".into(),
        serde_json::to_string_pretty(&findings)
            .expect("findings hold no map with keys other than strings")
            + "\n",
    ));
    let targets = glance_html(&glance);
    if !targets.is_empty() {
        sections.push(Section {
            id: "targets".into(),
            heading: "kicklab's own targets".into(),
            html: format!("<details><summary>Each part's targets, met or what missed</summary>{targets}</details>"),
            figures: vec![],
            layout: kicklab_report::Layout::Open,
        });
    }
    let sections = glossary::link(order::in_reading_order(sections));
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
    let page = Page {
        title: "kicklab report".into(),
        intro_html: format!(
            "<p>Producer/consumer synchronization after Rizzo et al., \"A Study of Speed Mismatches Between Communicating \
             Virtual Machines\" (ANCS 2016). Generated by <code>{}</code> \
             (kicklab {}) on a {cores}-core machine in {} s, {}.</p>\n{}{}",
            a.command_line(),
            env!("CARGO_PKG_VERSION"),
            kicklab_model::sig(started.elapsed().as_secs_f64(), kicklab_model::SHORT_DIGITS),
            html_escape(&machine()),
            depth_note(a),
            findings.html()
        ),
        sections,
    };
    Ok(Report { page, csvs })
}

/// How deep the real runs went, in words (empty without them).
fn depth_note(a: &ReportOptions) -> String {
    if !a.testbed {
        return String::new();
    }
    let mut s = format!(
        "<p>Real runs: {} messages per validation run, {} repetitions of each point (their range drawn)",
        a.real_messages, a.repeat
    );
    if a.full {
        s.push_str(", the flags sweep's median of 3 runs per point.</p>\n");
    } else {
        s.push_str(
            &format!("; the flags sweep once per point, the scale and qos runs half as long: the quick depth (the full one, \
             <code>{}</code>, takes about twice as long).</p>\n", Flag::Full),
        );
    }
    s
}

/// Where and when the page's measurements ran, in words: the time (UTC),
/// the CPU model, whether the machine is itself a virtual machine (every
/// measured cost depends on it), and the kernel.
fn machine() -> String {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let field = |name: &str| {
        cpuinfo
            .lines()
            .find(|l| l.split(':').next().is_some_and(|k| k.trim() == name))
            .and_then(|l| l.split_once(':'))
            .map(|(_, v)| v.trim().to_string())
    };
    let cpu = field("model name").unwrap_or_else(|| "an unknown CPU".into());
    let guest = field("flags").is_some_and(|f| f.split_whitespace().any(|x| x == "hypervisor"));
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map_or_else(|_| "unknown".into(), |k| k.trim().to_string());
    format!(
        "{}: {cpu}{}, Linux {kernel}",
        humantime::format_rfc3339_seconds(std::time::SystemTime::now()),
        if guest {
            " (a virtual machine itself: KVM, where used here, runs nested, and exits and wake-ups cost more than on \
             bare metal)"
        } else {
            ""
        }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_machine_line_says_when_and_on_what() {
        let m = machine();
        // An RFC 3339 time in UTC first, the kernel last.
        assert!(
            m.as_bytes().get(4) == Some(&b'-') && m.contains("Z: "),
            "{m}"
        );
        assert!(m.contains(", Linux "), "{m}");
    }

    #[test]
    fn the_command_line_names_what_differs_from_the_depths_defaults() {
        let quick = ReportOptions::default();
        assert_eq!(
            quick.command_line(),
            "kicklab report --points 120 --messages 50000 --seed 1"
        );
        let sim_only = ReportOptions {
            testbed: false,
            ..quick
        };
        assert!(sim_only.command_line().ends_with(" --no-testbed"));
        let full = ReportOptions {
            full: true,
            real_messages: FULL_REAL_MESSAGES,
            repeat: 5,
            ..quick
        };
        assert!(full.command_line().ends_with(" --full --repeat 5"));
    }

    #[test]
    fn options_are_checked_before_running() {
        let ok = ReportOptions::default();
        ok.check().unwrap();
        for (bad, input) in [
            (ReportOptions { points: 1, ..ok }, Input::Points),
            (
                ReportOptions {
                    points: u32::MAX,
                    ..ok
                },
                Input::Points,
            ),
            (ReportOptions { messages: 0, ..ok }, Input::Messages),
            (ReportOptions { repeat: 0, ..ok }, Input::Repeat),
            (
                ReportOptions {
                    repeat: crate::validate::MAX_REPEAT + 1,
                    ..ok
                },
                Input::Repeat,
            ),
            (
                ReportOptions {
                    real_messages: 0,
                    ..ok
                },
                Input::RealMessages,
            ),
        ] {
            match bad.check() {
                Err(LabError::Input { input: i, .. }) => assert_eq!(i, input),
                other => panic!("{bad:?}: {other:?}"),
            }
        }
    }

    /// The page at the default number of points is one self-contained
    /// file under 3 MB: the explorer's module, the scripts and every
    /// figure inline, nothing loaded from elsewhere.

    #[test]
    fn the_page_is_one_file_under_3_mb() {
        let opts = ReportOptions {
            messages: 500,
            testbed: false,
            ..ReportOptions::default()
        };
        let html = build(&opts, &crate::Silent).unwrap().page.to_html();
        assert!(html.len() < 3_000_000, "{} bytes", html.len());
        for external in [" src=", "<link", "url(http", "@import", "fetch("] {
            assert!(!html.contains(external), "{external}");
        }
        assert!(html.contains("id=\"kl-wasm\""));
        assert!(html.contains("window.kicklabCharts"));
        eprintln!(
            "page: {} bytes, of which the explorer's module {} (base64)",
            html.len(),
            crate::explorer::WASM.len().div_ceil(3) * 4
        );
    }

    #[test]
    fn the_model_only_report_has_every_figure_and_its_data() {
        let opts = ReportOptions {
            points: 3,
            messages: 2_000,
            testbed: false,
            ..ReportOptions::default()
        };
        let r = build(&opts, &crate::Silent).unwrap();
        let ids: Vec<&str> = r.page.sections.iter().map(|s| s.id.as_str()).collect();
        assert_eq!(
            ids,
            [
                "glossary",
                "regimes",
                "explorer",
                "fig2",
                "fig2-short",
                "fig3",
                "visibility",
                "random",
                "map",
                "knobs",
                "control",
                "qos",
                "scale-sim",
                "closed-forms",
                "targets"
            ]
        );
        assert_eq!(r.csvs.len(), 9);
        for (name, csv) in &r.csvs {
            if ["control.csv", "qos.csv", "map.csv", "findings.json"].contains(&name.as_str()) {
                continue;
            }
            assert_eq!(
                csv.lines().count(),
                1 + 3,
                "{name}: a header and a row per point"
            );
        }
        // The control study: 3 points of const, exp and mix, one of phases,
        // every strategy at each.
        let control = &r.csvs.iter().find(|(n, _)| n == "control.csv").unwrap().1;
        assert_eq!(control.lines().count(), 1 + 10 * (2 + 7 + 9 + 1));
        let map = &r.csvs.iter().find(|(n, _)| n == "map.csv").unwrap().1;
        assert_eq!(map.lines().count(), 1 + 3 * 3);
        let qos = &r.csvs.iter().find(|(n, _)| n == "qos.csv").unwrap().1;
        assert_eq!(qos.lines().count(), 1 + 2 * 2 * (25 + 9));
        // The findings open the page; kicklab's own targets close it, collapsed.
        assert!(r.page.intro_html.contains("<div id=\"findings\""));
        assert!(!r.page.intro_html.contains("targets kicklab sets itself"));
        let last = r.page.sections.last().unwrap();
        assert!(last.html.starts_with("<details><summary>"), "{}", last.html);
    }
}
