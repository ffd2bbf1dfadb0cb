//! The report's sections measured on this machine: the calibrated costs
//! of every thread backend and the Fig. 4 validation on futex, the KVM
//! guest's calibration against the paper's costs, its Fig. 4 in both
//! directions, the measured pair kick by kick (futex and kvm tx), and the
//! message-passing tables. What does not live here:
//! the calibration and the validation themselves (`kicklab_testbed`,
//! `validate`), the page's assembly (`report`).

use std::fmt::Write as _;

use kicklab_model::{fmt_ns_short, sig, CommandLine, Flag, Params, SHORT_DIGITS};
use kicklab_model::{Party, Profile, Stat};
use kicklab_report::{html_escape, Cell, Chart, Column, Mark, Section, Series, Style, Table};
use kicklab_sim::Vary;
use kicklab_testbed::Backend;

use crate::{LabError, Progress};

use super::ReportOptions;

fn costs_table(title: &str, first: Column, extra: Vec<Column>) -> Table {
    let mut columns = vec![first];
    columns.extend(
        [("NP", "N_P"), ("NC", "N_C"), ("SP", "S_P"), ("SC", "S_C")]
            .map(|(key, label)| Column::text(key, label)),
    );
    columns.extend(extra);
    Table::new(title, columns)
}

/// A row of [`costs_table`]: `first`, then each cost of `p` rendered by
/// `cell`.
fn costs_row(first: &str, p: &Profile, cell: impl Fn(&Stat) -> String) -> Vec<Cell> {
    let mut row = vec![first.into()];
    row.extend([p.np, p.nc, p.sp, p.sc].iter().map(|s| Cell::from(cell(s))));
    row
}

/// `mean (median)` of a statistic, or `-`.
fn mean_median(s: Option<&Stat>) -> String {
    s.map_or_else(
        || "-".into(),
        |s| {
            format!(
                "{} ({})",
                fmt_ns_short(s.mean_ns),
                fmt_ns_short(s.median_ns)
            )
        },
    )
}

/// The chart of N and S against the idle gap before the notification
/// (the profile's idle curve): x is log10 of the gap in us, with a dashed
/// line labelled at each measured gap.
pub fn idle_chart(p: &Profile, be: &str) -> Chart {
    let x = |gap_ns: f64| (gap_ns / 1e3).log10();
    let series =
        |name: &str, style: Style, value: &dyn Fn(&kicklab_model::IdlePoint) -> f64| Series {
            name: name.into(),
            points: p
                .idle_curve
                .iter()
                .map(|q| (x(q.gap_ns), value(q) / 1e3))
                .collect(),
            style,
            ..Series::default()
        };
    Chart {
        title: format!("Start-up and notification costs vs idle time ({be})"),
        x_label:
            "idle gap before the notification (log10 of us; dashed lines at the measured gaps)"
                .into(),
        y_label: "cost [us]".into(),
        series: vec![
            series("S_P (mean)", Style::Thick, &|q| q.start(Party::P).mean_ns),
            series("S_C (mean)", Style::Thick, &|q| q.start(Party::C).mean_ns),
            series("S_P (median)", Style::Points, &|q| {
                q.start(Party::P).median_ns
            }),
            series("S_C (median)", Style::Points, &|q| {
                q.start(Party::C).median_ns
            }),
            series("N_P (mean)", Style::Dashed, &|q| q.np.mean_ns),
            series("N_C (mean)", Style::Dashed, &|q| q.nc.mean_ns),
        ],
        marks: p
            .idle_curve
            .iter()
            .map(|q| Mark {
                x: x(q.gap_ns),
                label: fmt_ns_short(q.gap_ns),
            })
            .collect(),
        ..Chart::default()
    }
}

/// The idle curve as a table: N and the model's S (mean, median) per gap.
fn idle_table(p: &Profile, be: &str) -> Table {
    let mut t = Table::new(
        &format!("{be}: costs vs idle gap"),
        vec![
            Column::ns("gap", "idle gap"),
            Column::text("NP", "N_P"),
            Column::text("NC", "N_C"),
            Column::text("SP", "S_P as the model takes it (after V_C)"),
            Column::text("SC", "S_C as the model takes it (after V_P)"),
        ],
    );
    for q in &p.idle_curve {
        t.push(vec![
            q.gap_ns.into(),
            mean_median(Some(&q.np)).into(),
            mean_median(Some(&q.nc)).into(),
            mean_median(Some(q.start(Party::P))).into(),
            mean_median(Some(q.start(Party::C))).into(),
        ]);
    }
    t
}

/// Calibrates every thread backend and validates futex: the testbed
/// section of the report.
/// The calibration and validation sections, and the futex profile they
/// calibrated (the simulated scale overlay takes its costs).
pub(super) fn testbed_sections(
    a: &ReportOptions,
    progress: &dyn Progress,
) -> Result<(Vec<Section>, Profile, Vec<crate::validate::Point>), LabError> {
    use kicklab_ring::NotifierKind;
    let mut h = format!(
        "<p>Measured by <code>{}</code> (and <code>kvm</code> below; method: <code>docs/calibration.md</code>): N is the \
         notify call with the peer asleep, S the time from the end of that call until the woken thread runs, after 50 us \
         of idling; V is when the woken thread became runnable, from the start of the call (N + S less its own CPU time \
         across the wait, within [0, N]); the overhead is the time per message of a polling pair with no work, which the \
         model adds to W_P and W_C. Means, with median and p10-p90 in parentheses. A calibration whose medians did not \
         settle within its rounds (stable: no) still gives its costs, and every run compared with it is flagged as \
         disturbed (<code>docs/cli.md</code>, \"Disturbed runs\").</p>\n",
        CommandLine::new("calibrate").arg(Flag::Backend, "futex|eventfd|pipe"),
    );
    let mut table = costs_table(
        "calibrated costs",
        Column::text("backend", "backend"),
        vec![
            Column::text("VP", "V_P"),
            Column::text("VC", "V_C"),
            Column::text("overhead", "overhead"),
            Column::text("stable", "stable"),
        ],
    );
    let mut profiles = Vec::new();
    for be in NotifierKind::ALL {
        progress.note(&format!("report: calibrating {} ...", be.name()));
        let p = kicklab_testbed::calibrate_backend(
            kicklab_testbed::Backend::Threads(be),
            &kicklab_testbed::Calibration::new(400, std::time::Duration::from_micros(50), 6),
        )?;
        let cell = |s: &kicklab_testbed::Stat| {
            format!(
                "{} ({}; {}-{})",
                fmt_ns_short(s.mean_ns),
                fmt_ns_short(s.median_ns),
                fmt_ns_short(s.p10_ns),
                fmt_ns_short(s.p90_ns)
            )
        };
        table.push(vec![
            be.name().into(),
            cell(&p.np).into(),
            cell(&p.nc).into(),
            cell(&p.sp).into(),
            cell(&p.sc).into(),
            mean_median(p.vp.as_ref()).into(),
            mean_median(p.vc.as_ref()).into(),
            mean_median(p.overhead.as_ref()).into(),
            format!(
                "{}, {} rounds",
                if p.stable { "yes" } else { "no" },
                p.rounds
            )
            .into(),
        ]);
        profiles.push((be, p));
    }
    h.push_str(&table.to_html());
    h.push_str("<p>The paper's prototype (producer in a QEMU/KVM guest, consumer a host kernel thread) measured \
                N_P = 2.4, S_P = 3.9, N_C = 0.2, S_C = 0.2 us: asymmetric because a guest's kick is a VM exit. Here both \
                ends are threads, so the costs are symmetric.</p>");
    let mut figures = Vec::new();
    if let Some((be, p)) = profiles.iter().find(|(b, _)| *b == NotifierKind::Futex) {
        if !p.idle_curve.is_empty() {
            h.push_str(&format!(
                "<p>S depends on how long the woken party idled: the same calibration after other idle gaps \
                 (<code>{}</code>; one round each). A real run's prediction looks S up at the sleeper's idle time \
                 (<code>docs/calibration.md</code>, \"Start-up vs idle time\"). S here is the model's: from becoming \
                 runnable (V into the notification) to running.</p>",
                Flag::Gaps
            ));
            h.push_str(&idle_table(p, be.name()).to_html());
            let c = idle_chart(p, be.name());
            figures.push((
                format!("idle-{}", be.name()),
                c.to_svg(kicklab_report::FIG_W, kicklab_report::FIG_H)?,
                c.caption(),
            ));
        }
    }
    let calib = Section {
        id: "calibration".into(),
        heading: "Calibrated costs of this machine".into(),
        html: h,
        figures,
        layout: kicklab_report::Layout::Summary,
    };
    let (be, profile) = profiles
        .into_iter()
        .find(|(b, _)| *b == NotifierKind::Futex)
        .expect("futex calibrated");
    let vary = Vary::parse(crate::validate::FIG4_SWEEP).expect("valid");
    progress.note(&format!(
        "report: validating {} (15 points, notify and poll, {} times each) ...",
        be.name(),
        a.repeat
    ));
    let points = crate::validate::validate(
        &Params::default(),
        &profile,
        kicklab_testbed::Backend::Threads(be),
        &vary,
        &a.validate_options(),
        progress,
    )?;
    let cmd = format!(
        "{}; {}",
        CommandLine::new("calibrate")
            .arg(Flag::Backend, "futex")
            .arg(Flag::Save, "futex.json"),
        CommandLine::new("validate")
            .arg(Flag::Backend, "futex")
            .arg(Flag::Profile, "futex.json")
            .arg(Flag::Vary, vary)
            .arg(Flag::Messages, a.real_messages)
            .arg(Flag::Repeat, a.repeat)
    );
    let val = crate::validate::section(&points, &profile, be.name(), &cmd)?;
    let mut sections = vec![calib, val];
    sections.extend(measured_rounds(
        Backend::Threads(be),
        &profile,
        [2000.0, 800.0],
        a.seed,
        progress,
    )?);
    Ok((sections, profile, points))
}

/// The Fig. 4 pair on `backend` run for real at two W_P (for threads one
/// where the paper's costs give FC and one where they give FP; for a KVM
/// guest one in FC and one next to the balance with W_C, where the pair
/// can leave a kick per message for the batched point), each drawn kick
/// by kick as the testbed recorded it: the measured counterpart of the
/// simulator's regime timelines. `None` where neither run recorded enough
/// to draw.
fn measured_rounds(
    backend: Backend,
    profile: &Profile,
    w_ps_ns: [f64; 2],
    seed: u64,
    progress: &dyn Progress,
) -> Result<Option<Section>, LabError> {
    const MESSAGES: u64 = 20_000;
    let name = match backend {
        Backend::Kvm(o) => format!("kvm {}", o.direction.name()),
        Backend::Threads(k) => k.name().to_string(),
    };
    progress.note(&format!(
        "report: the measured {name} pair, kick by kick ..."
    ));
    let mut runs = Vec::new();
    let mut lines = Vec::new();
    for w_p_ns in w_ps_ns {
        let mut params = Params {
            w_p: kicklab_model::Cost::Const(w_p_ns),
            ..Params::default()
        };
        profile.apply_costs(&mut params, false);
        let spec = crate::real::RunSpec {
            record: crate::measured_timeline::RECORD,
            ..crate::real::RunSpec::new(
                params,
                backend,
                kicklab_model::WaitMode::Notify,
                MESSAGES,
                seed,
            )
        };
        let (r, record) = crate::real::run_recorded(&spec)?;
        let model = kicklab_model::predict(&params, kicklab_model::WaitMode::Notify).ok();
        let regime = model
            .as_ref()
            .map_or_else(|| "no closed form".to_string(), |m| m.regime.to_string());
        let [np, nc] = r.rates.notifications_per_message();
        let said = |i: usize| {
            model.as_ref().map_or_else(String::new, |m| {
                format!(
                    " (the model {})",
                    kicklab_model::sig(m.rates.notifications_per_message()[i], 2)
                )
            })
        };
        lines.push(format!(
            "W_P {}: T {} measured, the model says {regime}; P kicked {}{} and C {}{} times per message",
            fmt_ns_short(w_p_ns),
            fmt_ns_short(r.rates.t_ns),
            kicklab_model::sig(np, 2),
            said(0),
            kicklab_model::sig(nc, 2),
            said(1)
        ));
        let title = format!(
            "measured {name} pair, W_P {}, W_C {}: the model's {regime}",
            fmt_ns_short(w_p_ns),
            fmt_ns_short(params.w_c.mean_ns())
        );
        runs.push((record, title));
    }
    let panels: Vec<(&kicklab_testbed::Record, String)> =
        runs.iter().map(|(r, t)| (r, t.clone())).collect();
    let Some(svg) = crate::measured_timeline::svg(&panels) else {
        return Ok(None);
    };
    let (clock, id, heading) = match backend {
        Backend::Kvm(_) => (
            "the host's TSC, the guest's own stamps placed on it; between a party's kicks and sleeps it works \
             or polls, drawn as work; a guest's kick spans its whole exit",
            format!("measured-rounds-{}", name.replace(' ', "-")),
            format!("The measured {name} pair, kick by kick"),
        ),
        Backend::Threads(_) => (
            "each thread's TSC; between a party's kicks and sleeps it works, polls or spins, drawn as work",
            "measured-rounds".to_string(),
            "The measured pair, kick by kick".to_string(),
        ),
    };
    let mut reproduce = CommandLine::new("run").arg(Flag::Backend, backend.name());
    if let Backend::Kvm(o) = backend {
        reproduce = reproduce.arg(Flag::Direction, o.direction.name());
    }
    let reproduce = reproduce
        .arg(
            Flag::Param(kicklab_model::Param::Wp),
            fmt_ns_short(w_ps_ns[0]),
        )
        .arg(Flag::Timeline, "pair.svg");
    let html = format!(
        "<p>{}.</p><p>The Fig. 4 pair run for real on {name} with this machine's costs, {MESSAGES} messages each, \
         and the first kicks and sleeps of each run's window drawn as the testbed recorded them ({clock}).</p>\
         <p>Reproduce: <code>{reproduce}</code>.</p>",
        html_escape(&lines.join("; ")),
    );
    Ok(Some(Section {
        id: id.clone(),
        heading,
        html,
        figures: vec![(
            id,
            svg,
            format!("The measured {name} pair's first kicks and sleeps at two W_P"),
        )],
        layout: kicklab_report::Layout::Summary,
    }))
}

/// What the KVM sections measured, for the findings: per direction
/// (`kvm tx`, `kvm rx`), its profile and its validation's points.
type KvmValidations = Vec<(String, Profile, Vec<crate::validate::Point>)>;

/// The ping-pong section's result in a sentence: what the guest's own
/// polling and host halt polling gave over halting, beside van Riel's.
fn pingpong_lead(
    runs: &[(
        kicklab_testbed::pingpong::Idle,
        Vec<kicklab_testbed::pingpong::PingPongResult>,
    )],
) -> String {
    let shown = |name: &str| {
        crate::pingpong::over_halt(runs, name).map_or("-".to_string(), |(lo, hi)| {
            let (lo, hi) = (sig(lo, SHORT_DIGITS), sig(hi, SHORT_DIGITS));
            if lo == hi {
                format!("{lo}x")
            } else {
                format!("{lo}-{hi}x")
            }
        })
    };
    format!(
        "<p>Here a guest that polls answers {} the requests of one that halts (van Riel: 1.61x when it \
         never traps), host halt polling {} (his 1.11-1.58x), the medians of {PINGPONG_ROUNDS} runs each.</p>",
        shown("poll"),
        shown("halt-poll"),
    )
}

/// Runs of each idle strategy in the report's ping-pong tables.
const PINGPONG_ROUNDS: usize = 3;

/// The KVM sections: calibration against the paper's numbers, Fig. 4 with
/// the producer in a guest, and the message-passing table (van Riel).
pub(super) fn kvm_sections(
    a: &ReportOptions,
    progress: &dyn Progress,
) -> Result<(Vec<Section>, KvmValidations), LabError> {
    use kicklab_testbed::kvm::{Direction, KvmOptions};
    if let Err(why) = kicklab_testbed::kvm::available() {
        progress.note(&format!("report: skipping the KVM sections: {why}"));
        return Ok((
            vec![Section {
                id: "kvm".into(),
                heading: "KVM guest (skipped)".into(),
                html: format!("<p>Skipped on this machine: {}.</p>", html_escape(&why)),
                figures: vec![],
                layout: kicklab_report::Layout::Summary,
            }],
            Vec::new(),
        ));
    }
    let be = Backend::Kvm(KvmOptions {
        direction: Direction::Tx,
        halt_poll_ns: 0,
        guest: kicklab_testbed::kvm::guest::GuestMode::User,
    });
    progress.note("report: calibrating kvm ...");
    let p = kicklab_testbed::calibrate_backend(
        be,
        &kicklab_testbed::Calibration::new(400, std::time::Duration::from_micros(50), 6),
    )?;
    let mut h = format!(
        "<p>Measured by <code>{}</code>: the producer P is the guest, the consumer C a host \
         thread. Means (median). Guest and host TSCs related by a ping exchange",
        CommandLine::new("calibrate").arg(Flag::Backend, "kvm")
    );
    let _ = write!(
        h,
        " (to within {}).</p>",
        fmt_ns_short(p.clock_sync_ns.unwrap_or(f64::NAN))
    );
    let mut table = costs_table("kvm costs vs the paper's", Column::text("what", ""), vec![]);
    table.push(costs_row("this machine", &p, |s| {
        format!(
            "{} ({})",
            fmt_ns_short(s.mean_ns),
            fmt_ns_short(s.median_ns)
        )
    }));
    let d = Params::default();
    let mut paper = vec![Cell::from("paper (QEMU/KVM, bare metal)")];
    paper.extend([d.n_p, d.n_c, d.s_p, d.s_c].map(|c| Cell::from(fmt_ns_short(c.mean_ns()))));
    table.push(paper);
    let mut ratios = vec![Cell::from("ratio (means)")];
    ratios.extend(
        p.means_over_paper()
            .map(|r| Cell::from(format!("{}x", kicklab_model::sig(r, 3)))),
    );
    table.push(ratios);
    h.push_str(&table.to_html());
    let _ = write!(
        h,
        "<p>What the model takes (<code>docs/calibration.md</code>, \"Visibility\"): V_P {} (a polling host sees the \
         guest's kick), S_C after V_P {}; V_C {}, S_P after V_C {}; the ring's cost per message (a polling pair with no \
         work, added to W_P and W_C) {}. Means (median).</p>",
        mean_median(p.visibility(Party::P)),
        mean_median(Some(p.start(Party::C))),
        mean_median(p.visibility(Party::C)),
        mean_median(Some(p.start(Party::P))),
        mean_median(p.overhead.as_ref()),
    );
    let mut figures = Vec::new();
    if !p.idle_curve.is_empty() {
        h.push_str(&idle_table(&p, "kvm").to_html());
        let c = idle_chart(&p, "kvm");
        figures.push((
            "idle-kvm".to_string(),
            c.to_svg(kicklab_report::FIG_W, kicklab_report::FIG_H)?,
            c.caption(),
        ));
    }
    h.push_str(
        "<p>Why they differ (<code>docs/kvm.md</code>): this KVM is PVM, nested in a cloud VM without VMX. A guest kick \
         (N_P) is an <code>out</code> that traps into PVM's emulator before the ioeventfd fires; the guest's wake-up \
         (S_P) is an exit to the VMM plus the wake of its vCPU thread through the outer hypervisor; N_C is an eventfd \
         write that wakes that thread. In the paper N_C and S_C are 0.2 us because its consumer was a host thread \
         that the guest's kick found (nearly) running; here S_C is a real thread wake-up.</p>",
    );
    let calib = Section {
        id: "kvm-calibration".into(),
        heading: "KVM: calibrated costs vs the paper's".into(),
        html: h,
        figures,
        layout: kicklab_report::Layout::Summary,
    };
    let vary = Vary::parse(crate::validate::FIG4_SWEEP).expect("valid");
    // Fig. 4 in both directions: the guest produces (tx, the paper's
    // set-up, with the calibration above) and the guest consumes (rx).
    let mut vals = Vec::new();
    let mut measured = Vec::new();
    for direction in [Direction::Tx, Direction::Rx] {
        let dbe = Backend::Kvm(KvmOptions {
            direction,
            halt_poll_ns: 0,
            guest: kicklab_testbed::kvm::guest::GuestMode::User,
        });
        let profile = if direction == Direction::Tx {
            p.clone()
        } else {
            progress.note("report: calibrating kvm rx ...");
            kicklab_testbed::calibrate_backend(
                dbe,
                &kicklab_testbed::Calibration::new(400, std::time::Duration::from_micros(50), 6),
            )?
        };
        let d = direction.name();
        progress.note(&format!(
            "report: validating kvm {d} (15 points, notify and poll, {} times each) ...",
            a.repeat
        ));
        let points = crate::validate::validate(
            &Params::default(),
            &profile,
            dbe,
            &vary,
            &a.validate_options(),
            progress,
        )?;
        let cmd = format!(
            "{}; {}",
            CommandLine::new("calibrate")
                .arg(Flag::Backend, "kvm")
                .arg(Flag::Direction, d)
                .arg(Flag::Save, format!("kvm-{d}.json")),
            CommandLine::new("validate")
                .arg(Flag::Backend, "kvm")
                .arg(Flag::Direction, d)
                .arg(Flag::Profile, format!("kvm-{d}.json"))
                .arg(Flag::Vary, vary)
                .arg(Flag::Messages, a.real_messages)
                .arg(Flag::Repeat, a.repeat)
        );
        vals.push(crate::validate::section(
            &points,
            &profile,
            &format!("kvm {d}"),
            &cmd,
        )?);
        if direction == Direction::Tx {
            // The guest's own kicks beside the host's sleeps: at 3 us a
            // kick per message; at 1.2 us, next to W_C, where the pair can
            // leave that point for the batched one.
            vals.extend(measured_rounds(
                dbe,
                &profile,
                [3000.0, 1200.0],
                a.seed,
                progress,
            )?);
        }
        measured.push((format!("kvm {d}"), profile, points));
    }
    let work = std::time::Duration::from_micros(2);
    // Each strategy three times, a third of the requests each: the spread
    // for the time one run took.
    let requests = (a.real_messages / 9).max(200);
    let mut pp = format!(
        "<p>Request/response between a host thread (the requester, polling for each response) and a responder that \
         idles between requests: the guest (kvm) or a thread (futex). Each side works 2 us per message; each idle \
         strategy runs {PINGPONG_ROUNDS} times, {requests} requests each, round after round: the table gives its medians \
         and its lowest and highest rate. Reproduce: \
         <code>{kvm}</code>, <code>{futex}</code>. CPU/request is \
         both threads' CPU time: the requester polls throughout, so it alone is one CPU (1/rate of it per request); \
         what the responder's idle strategy saves is the rest. Van Riel's rows follow the KVM table, each with the \
         ratio over <code>halt</code> measured here for its counterpart.</p>",
        kvm = CommandLine::new("pingpong").arg(Flag::Backend, "kvm").arg(Flag::Messages, requests),
        futex = CommandLine::new("pingpong").arg(Flag::Backend, "futex").arg(Flag::Messages, requests),
    );
    let mut tables = String::new();
    let mut lead = String::new();
    for (be, van_riel) in [
        (be, true),
        (Backend::Threads(kicklab_ring::NotifierKind::Futex), false),
    ] {
        let idles = crate::pingpong::default_idles(be);
        let runs = crate::pingpong::run_rounds(
            be,
            &idles,
            requests,
            work,
            true,
            PINGPONG_ROUNDS,
            progress,
        )?;
        if van_riel {
            lead = pingpong_lead(&runs);
        }
        let _ = write!(
            tables,
            "<pre>{}</pre>",
            html_escape(&crate::pingpong::table(be, &runs, van_riel).join("\n"))
        );
    }
    pp = format!("{lead}{pp}{tables}");
    // The emulated guest: the irqfd path, KVM's own halt polling and HLT
    // exits; slow instructions, so longer work and fewer requests.
    let emulated = Backend::Kvm(KvmOptions {
        guest: kicklab_testbed::kvm::guest::GuestMode::Emulated,
        ..KvmOptions::default()
    });
    let runs = crate::pingpong::run_rounds(
        emulated,
        &crate::pingpong::default_idles(emulated),
        (a.real_messages / 90).max(100),
        std::time::Duration::from_micros(20),
        true,
        PINGPONG_ROUNDS,
        progress,
    )?;
    let _ = write!(
        pp,
        "<p>The same with the guest in emulated real mode (<code>{}</code>): \
         {}. Here halt polling is KVM's own (<code>KVM_CAP_HALT_POLL</code>) and <code>no-hlt-exit</code> is \
         <code>KVM_CAP_X86_DISABLE_EXITS</code>.</p><pre>{}</pre>",
        CommandLine::new("pingpong")
            .arg(Flag::Backend, "kvm")
            .arg(Flag::Guest, "emulated")
            .arg(Flag::Work, "20us"),
        kicklab_report::text_html(crate::pingpong::guest_line(kicklab_testbed::kvm::guest::GuestMode::Emulated)),
        html_escape(&crate::pingpong::table(emulated, &runs, false).join("\n"))
    );
    pp.push_str(
        "<p>Van Riel's rates are for Java threads messaging inside one guest on bare metal; his lever was where the \
         idle vCPU waits (scheduled out, halted in place, never leaving the guest). Here the responder's halt is an \
         exit to the VMM, so the guest's own polling (haltpoll, poll) removes the exit and the wake-up and gives the \
         big step; host halt polling only saves the vCPU thread's sleep, a small part of the cost on this machine.</p>",
    );
    let ping = Section {
        id: "pingpong".into(),
        heading: "Message passing: idle strategies (van Riel 2013, Denali)".into(),
        html: pp,
        figures: vec![],
        layout: kicklab_report::Layout::Summary,
    };
    let mut out = vec![calib];
    out.extend(vals);
    out.push(ping);
    Ok((out, measured))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_idle_chart_draws_the_curve_against_log_gap() {
        let mut p = Profile::of_means("futex", [2e3, 2e3, 3e3, 3e3]);
        let base = kicklab_model::IdlePoint::of(&p);
        p.idle_curve = [5e3, 50e3, 500e3]
            .into_iter()
            .map(|g| kicklab_model::IdlePoint {
                gap_ns: g,
                sp: Stat::constant(g / 10.0),
                ..base
            })
            .collect();
        let c = idle_chart(&p, "futex");
        assert_eq!(c.series.len(), 6);
        assert_eq!(c.series[0].points.len(), 3);
        // x is log10 of the gap in us; S in us.
        assert!((c.series[0].points[1].0 - 50f64.log10()).abs() < 1e-12);
        assert!((c.series[0].points[1].1 - 5.0).abs() < 1e-12);
        let labels: Vec<&str> = c.marks.iter().map(|m| m.label.as_str()).collect();
        assert_eq!(labels, ["5us", "50us", "500us"]);
        assert!(c
            .to_svg(kicklab_report::FIG_W, kicklab_report::FIG_H)
            .unwrap()
            .contains("S_P (mean)"));
        assert_eq!(idle_table(&p, "futex").to_csv().lines().count(), 4);
    }
}
