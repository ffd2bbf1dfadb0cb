//! Hardening of the thread backend: busy work and joins that the watchdog
//! can end, a watchdog that measures progress rather than the whole run,
//! huge inputs refused with typed errors instead of panics, error messages
//! in terms of parameters, and honest placement reports. (The KVM cases
//! are in `kvm.rs`.)

use std::time::{Duration, Instant};

use kicklab_model::{Cost, Params, WaitMode};
use kicklab_ring::NotifierKind;
use kicklab_testbed::pingpong::{pingpong, Idle, PingPongConfig};
use kicklab_testbed::{
    calibrate_backend, run_pair, Backend, Calibration, PairConfig, Setting, TestbedError,
};

const HOUR_NS: f64 = 3.6e12;

fn cfg(wp_ns: f64, wc_ns: f64, messages: u64, stall: Duration) -> PairConfig {
    PairConfig {
        params: Params {
            len: 16,
            k_p: 1,
            k_c: 1,
            w_p: Cost::Const(wp_ns),
            w_c: Cost::Const(wc_ns),
            ..Params::default()
        },
        mode_p: WaitMode::Notify,
        mode_c: WaitMode::Notify,
        backend: Backend::Threads(NotifierKind::Futex),
        messages,
        warmup: 0,
        seed: 1,
        timeout: stall,
        batch: 1,
        flush: kicklab_testbed::Flush::Full,
        latency: false,
        record: 0,
    }
}

fn pp(work: Duration, messages: u64, stall: Duration) -> PingPongConfig {
    PingPongConfig {
        backend: Backend::Threads(NotifierKind::Futex),
        idle: Idle::Poll,
        messages,
        work,
        requester_polls: true,
        timeout: stall,
    }
}

fn assert_hang(r: Result<impl std::fmt::Debug, TestbedError>, took: Duration) {
    let e = r.expect_err("an hour of work per message cannot finish");
    assert!(matches!(e, TestbedError::Hang(_)), "{e}");
    assert!(took < Duration::from_secs(5), "took {took:?}: {e}");
}

#[test]
fn an_hour_of_consumer_work_ends_in_a_hang_error() {
    let t = Instant::now();
    let r = run_pair(&cfg(100.0, HOUR_NS, 100, Duration::from_millis(300)));
    assert_hang(r, t.elapsed());
}

#[test]
fn an_hour_of_producer_work_ends_in_a_hang_error() {
    let t = Instant::now();
    let r = run_pair(&cfg(HOUR_NS, 100.0, 100, Duration::from_millis(300)));
    assert_hang(r, t.elapsed());
}

#[test]
fn polling_parties_are_stopped_too() {
    let mut c = cfg(HOUR_NS, 100.0, 100, Duration::from_millis(300));
    (c.mode_p, c.mode_c) = (WaitMode::Poll, WaitMode::Poll);
    let t = Instant::now();
    assert_hang(run_pair(&c), t.elapsed());
}

#[test]
fn pingpong_with_an_hour_of_work_ends_in_a_hang_error() {
    let t = Instant::now();
    let r = pingpong(&pp(
        Duration::from_secs(3600),
        10,
        Duration::from_millis(300),
    ));
    assert_hang(r, t.elapsed());
}

/// The stall limit bounds the time without progress, not the run: a run
/// many times longer than it succeeds while it keeps moving.
#[test]
fn a_run_longer_than_the_stall_limit_succeeds() {
    let stall = Duration::from_millis(250);
    let t = Instant::now();
    let r = run_pair(&cfg(300e3, 300e3, 3000, stall)).expect("a healthy run");
    let took = t.elapsed();
    assert_eq!((r.lost, r.duplicated_or_reordered), (0, 0));
    assert!(took > 3 * stall, "the run took only {took:?}");
}

#[test]
fn a_pingpong_longer_than_the_stall_limit_succeeds() {
    let stall = Duration::from_millis(250);
    let t = Instant::now();
    let r = pingpong(&pp(Duration::from_micros(300), 2000, stall)).expect("a healthy run");
    assert_eq!(r.messages, 2000);
    assert!(
        t.elapsed() > 3 * stall,
        "the run took only {:?}",
        t.elapsed()
    );
}

fn limit_on(r: Result<impl std::fmt::Debug, TestbedError>, what: Setting) -> TestbedError {
    let e = r.expect_err("refused");
    assert!(
        matches!(&e, TestbedError::Limit { what: w, .. } if *w == what),
        "expected a limit on {what}, got {e:?}"
    );
    e
}

#[test]
fn huge_inputs_are_refused_with_typed_errors() {
    let stall = Duration::from_secs(2);
    let mut c = cfg(100.0, 100.0, 100, stall);
    c.params.len = u32::MAX;
    limit_on(run_pair(&c), Setting::Len);

    let mut c = cfg(100.0, 100.0, u64::MAX, stall);
    c.warmup = 10;
    limit_on(run_pair(&c), Setting::Messages);

    let mut c = cfg(100.0, 100.0, 100, stall);
    c.mode_p = WaitMode::Spin { budget_ns: 1e30 };
    limit_on(run_pair(&c), Setting::Strategy);
    c.mode_p = WaitMode::Sleep {
        period_ns: f64::NAN,
    };
    limit_on(run_pair(&c), Setting::Strategy);

    let mut c = cfg(100.0, 100.0, 100, stall);
    c.timeout = Duration::MAX;
    limit_on(run_pair(&c), Setting::Timeout);

    let be = Backend::Threads(NotifierKind::Futex);
    limit_on(
        calibrate_backend(
            be,
            &Calibration::new(100_000_000_000, Duration::from_micros(50), 1),
        ),
        Setting::Samples,
    );
    limit_on(
        calibrate_backend(be, &Calibration::new(10, Duration::MAX, 1)),
        Setting::Gap,
    );
    let mut curve = Calibration::new(10, Duration::from_micros(50), 1);
    curve.gaps.push(Duration::MAX);
    limit_on(calibrate_backend(be, &curve), Setting::Gaps);

    limit_on(pingpong(&pp(Duration::MAX, 10, stall)), Setting::Work);
    limit_on(
        pingpong(&pp(Duration::from_micros(1), u64::MAX, stall)),
        Setting::Messages,
    );
    let mut p = pp(Duration::from_micros(1), 10, stall);
    p.idle = Idle::PollThenHalt(Duration::MAX);
    limit_on(pingpong(&p), Setting::Idle);
}

#[test]
fn errors_speak_of_parameters_not_flags() {
    let stall = Duration::from_secs(2);
    let be = Backend::Threads(NotifierKind::Futex);
    let mut errors = vec![
        run_pair(&cfg(100.0, 100.0, 0, stall)).unwrap_err(),
        calibrate_backend(be, &Calibration::new(usize::MAX, Duration::ZERO, 1)).unwrap_err(),
        pingpong(&pp(Duration::ZERO, 0, stall)).unwrap_err(),
    ];
    let mut kvm_only = pp(Duration::ZERO, 10, stall);
    kvm_only.idle = Idle::NoHltExit;
    errors.push(pingpong(&kvm_only).unwrap_err());
    let mut bad_len = cfg(100.0, 100.0, 10, stall);
    bad_len.params.k_p = 100; // more than L
    let model = run_pair(&bad_len).unwrap_err();
    assert!(!model.to_string().contains("--"), "a flag in `{model}`");
    for e in errors {
        let msg = e.to_string();
        assert!(!msg.contains("--"), "a flag in `{msg}`");
        assert!(e.param().is_some(), "no parameter named in `{msg}`");
    }
}

/// Two runs at once share the CPUs: neither may claim a CPU of its own.
#[test]
fn overlapping_runs_do_not_claim_their_own_cpus() {
    let run = || run_pair(&cfg(50e3, 50e3, 4000, Duration::from_secs(5))).unwrap();
    let (a, b) = std::thread::scope(|s| {
        let a = s.spawn(run);
        let b = s.spawn(run);
        (a.join().unwrap(), b.join().unwrap())
    });
    for r in [a, b] {
        assert!(r.concurrent_runs >= 1, "{r:?}");
        assert!(!r.pinned, "{r:?}");
        // The pin calls themselves say where each party went.
        if kicklab_testbed::clock::cpus() >= 2 {
            assert_eq!((r.cpu_p, r.cpu_c), (Some(0), Some(1)), "{r:?}");
        }
    }
}

/// The thread calibration still measures under its watchdog, with V, the
/// idle curve and the ring's overhead.
#[test]
fn thread_calibration_measures_all_four_costs() {
    let mut c = Calibration::new(50, Duration::from_micros(50), 1);
    c.gaps = vec![Duration::from_micros(50), Duration::from_micros(5)];
    c.overhead_runs = 2;
    c.overhead_messages = 20_000;
    let p = calibrate_backend(Backend::Threads(NotifierKind::Futex), &c).expect("a calibration");
    for s in [p.np, p.nc, p.sp, p.sc] {
        assert_eq!(s.n, 50);
        assert!(s.median_ns > 0.0, "{s:?}");
    }
    // V is within [0, N] per sample, so its mean is within N's.
    for (v, n) in [(p.vp, p.np), (p.vc, p.nc)] {
        let v = v.expect("V derived");
        assert!(
            v.mean_ns >= 0.0 && v.mean_ns <= n.mean_ns + 1e-6,
            "{v:?} {n:?}"
        );
    }
    // R = N + S_wall = V + S, sample by sample, so on the means too.
    for (n, s, v, s_v) in [(p.np, p.sc, p.vp, p.sc_v), (p.nc, p.sp, p.vc, p.sp_v)] {
        let r = n.mean_ns + s.mean_ns;
        let r_v = v.unwrap().mean_ns + s_v.unwrap().mean_ns;
        assert!((r - r_v).abs() < 1e-6 * r.abs().max(1.0), "{r} {r_v}");
    }
    // The curve: ascending, the main gap's point the main costs.
    let gaps: Vec<f64> = p.idle_curve.iter().map(|q| q.gap_ns).collect();
    assert_eq!(gaps, vec![5e3, 50e3]);
    assert_eq!(p.idle_curve[1].np, p.np);
    assert_eq!(p.idle_curve[0].np.n, 50);
    let o = p.overhead.expect("overhead measured");
    assert_eq!(o.n, 2);
    assert!(o.mean_ns > 0.0 && o.mean_ns < 10e3, "{o:?}");
    // And each pace-setter's, with its peer asleep: a sample per run.
    for o in [p.overhead_p, p.overhead_c] {
        let o = o.expect("measured with the overhead");
        assert_eq!(o.n, 2);
        assert!(o.median_ns.abs() < 10e3, "{o:?}");
    }
}
