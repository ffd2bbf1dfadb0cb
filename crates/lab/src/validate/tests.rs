//! The validation's tests: judging, rendering and the operating point.
use kicklab_model::{Params, Regime};
use kicklab_report::{ErrorBar, Style};
use kicklab_sim::Vary;
use kicklab_testbed::PairResult;

use crate::disturbance::Warning;
use crate::{Input, LabError};

mod sweep {
    use super::*;
    use crate::disturbance::tests::run;
    use crate::validate::{judge::*, render::*, run::*, types::*};
    use kicklab_model::Party;

    /// A quiet notify run of `t` per message in FC: C sleeps, P is busy
    /// all the time.
    fn notify(t: f64) -> PairResult {
        run(t, [t, 300.0], [0, 100])
    }

    /// A quiet polling run of `t` per message.
    fn poll(t: f64) -> PairResult {
        run(t, [t, t], [0, 0])
    }

    /// A point at `x` whose model says `model_t` (notify) and 1000 ns
    /// (poll), with repetitions of notify T `ts` (polling at 1000 ns) and
    /// the given warnings (those of a run in every repetition).
    fn point(x: f64, model_t: f64, ts: &[f64], warnings: Vec<Warning>) -> Point {
        Point {
            model_at_idle: None,
            model_race: (model_t, 2.0 * model_t),
            other: None,
            x,
            regime: Regime::FC,
            model: (model_t, 2.0 * model_t),
            model_median: (model_t, 2.0 * model_t),
            sim: (model_t, 2.0 * model_t),
            model_poll: (1000.0, 2000.0),
            model_wake: [4000.0, 4000.0],
            reps: ts
                .iter()
                .map(|&t| Rep {
                    notify: notify(t),
                    poll: poll(1000.0),
                    warnings: warnings
                        .iter()
                        .filter(|w| w.retry_may_help())
                        .copied()
                        .collect(),
                })
                .collect(),
            tries: u32::try_from(ts.len()).unwrap(),
            warnings,
        }
    }

    fn slow() -> Warning {
        Warning::SlowPolling {
            t_ns: 2000.0,
            floor_ns: 1000.0,
        }
    }

    #[test]
    fn spreads_are_medians_and_ranges() {
        let s = Spread::of([3.0, 1.0, 2.0]);
        assert_eq!((s.median, s.min, s.max), (2.0, 1.0, 3.0));
        assert!((s.relative() - 1.0).abs() < 1e-12);
        assert_eq!(Spread::of([1.0, 2.0, 3.0, 10.0]).median, 2.5);
        let one = Spread::of([4.0]);
        assert_eq!((one.median, one.min, one.max), (4.0, 4.0, 4.0));
        assert_eq!(one.relative(), 0.0);
        assert!(Spread::of([]).median.is_nan());
    }

    #[test]
    fn polling_under_the_floor_at_every_point_says_the_ring_moved() {
        // Polling at the model's floor: nothing to say.
        let at = point(1000.0, 1200.0, &[1200.0], vec![]);
        let s = summarize(&[at.clone(), at.clone()]);
        assert_eq!(s.poll_under_floor, None);
        assert!(!summary_text(&s).contains("ring:"));
        // 6% under it at every point: the calibration's ring cost was high.
        let mut under = at.clone();
        for r in &mut under.reps {
            r.poll = poll(940.0);
        }
        let s = summarize(&[under.clone(), under.clone()]);
        assert!((s.poll_under_floor.unwrap() - 0.06).abs() < 1e-9);
        assert!(summary_text(&s)
            .contains("polling ran under the model's floor at every point, by a median 6%"));
        // Under at one point only, or by less than RING_DRIFT: nothing.
        assert_eq!(summarize(&[under.clone(), at]).poll_under_floor, None);
        for r in &mut under.reps {
            r.poll = poll(990.0);
        }
        assert_eq!(summarize(&[under]).poll_under_floor, None);
    }

    #[test]
    fn the_summary_gives_the_runs_wake_ups_where_a_side_slept_often() {
        let at = |wake_c: f64, sleeps_c: u64| {
            let mut p = point(2000.0, 2400.0, &[2400.0], vec![]);
            p.reps[0].notify.wake_c_ns = Some(wake_c);
            p.reps[0].notify.rates.sleeps_c = sleeps_c;
            p
        };
        let s = summarize(&[at(4e3, 5000), at(15e3, 900), at(1e3, 100), at(60e3, 99)]);
        let w = s.wake_c_run_ns;
        assert_eq!((w.min, w.median, w.max), (1e3, 4e3, 15e3), "{w:?}");
        assert!(s.wake_p_run_ns.median.is_nan(), "P never slept");
        let text = summary_text(&s);
        assert!(
            text.contains("C's wake-ups in the runs took 1us to 15us (median 4us)")
                && text.contains("the model takes 4us"),
            "{text}"
        );
        assert!(
            !text.contains("P's wake-ups") && !text.contains("another state"),
            "{text}"
        );
        // Runs that met wake-ups 2.5 times the model's: said.
        let s = summarize(&[at(10e3, 5000)]);
        assert!(summary_text(&s).contains(
            "(2.50x, over twice the model's: the machine's wake-ups were in another state"
        ));
        let s = summarize(&[at(1.9e3, 5000)]);
        assert!(summary_text(&s).contains("(0.47x, under half the model's: the machine's"));
        let s = summarize(&[at(2.1e3, 5000), at(7.9e3, 5000)]);
        assert!(!summary_text(&s).contains("another state"));
    }

    #[test]
    fn the_summary_is_over_the_medians_of_the_repetitions() {
        // Repetitions 1000, 1100 (the median) and an outlier at 5000: the
        // model of 1100 is exact against the median.
        let p = point(500.0, 1100.0, &[1000.0, 5000.0, 1100.0], vec![]);
        assert_eq!(p.t_real().median, 1100.0);
        assert_eq!((p.t_real().min, p.t_real().max), (1000.0, 5000.0));
        assert_eq!(p.median_run().rates.t_ns, 1100.0);
        let q = point(1000.0, 1000.0, &[1250.0, 1250.0, 1250.0], vec![]);
        let s = summarize(&[p.clone(), q]);
        assert_eq!((s.points, s.disturbed, s.repeat), (2, 0, 3));
        assert_eq!(s.all.points, 2);
        assert!((s.all.median_err_t - 0.1).abs() < 1e-12, "{:?}", s.all);
        assert!((s.all.worst_err_t - 0.2).abs() < 1e-12, "{:?}", s.all);
        assert_eq!(s.all.median_err_t_poll, 0.0);
        assert_eq!(s.all.median_err_e_poll, 0.0);
        // Polling measured at 1250 ns (E 2500 ns) where the model says 1000
        // (2000): both errors over the measured value, 0.2.
        let mut slow = point(1000.0, 1000.0, &[1000.0], vec![]);
        slow.reps[0].poll = poll(1250.0);
        let e = summarize(&[slow]).all;
        assert!((e.median_err_t_poll - 0.2).abs() < 1e-12, "{e:?}");
        assert!((e.median_err_e_poll - 0.2).abs() < 1e-12, "{e:?}");
        assert_eq!(s.all.regimes_agree, 2, "C slept in both, as FC says");
        // The spread of the repetitions: (5000 - 1000) / 1100, and 0.
        assert!((s.median_spread_t - (4000.0 / 1100.0) / 2.0).abs() < 1e-12);
        assert_eq!(s.median_spread_t_poll, 0.0);
        let text = summary_text(&s);
        assert!(text.contains("2, 3 repetition(s) each"), "{text}");
        assert!(text.contains("0 disturbed"), "{text}");
        assert!(text.contains("median error 10%, worst 20%"), "{text}");
        assert!(text.contains("repeats:"), "{text}");
        // The section's lead says the same, in a sentence.
        let l = lead(&s);
        assert!(
            l.contains("T is 10% off the measured at the median undisturbed point (worst 20%)"),
            "{l}"
        );
        assert!(
            l.contains("at 2 of 2 points") && l.contains("comes closest here"),
            "{l}"
        );
        // The model with the batch race drawn has its own errors: here
        // exact at the first point (1100 against the median 1100), 40% over
        // at the second (1750 against 1250); E exact at both.
        let (mut p2, mut q2) = (p.clone(), point(1000.0, 1000.0, &[1250.0; 3], vec![]));
        p2.model_race = (1100.0, p2.e_real().median);
        q2.model_race = (1750.0, q2.e_real().median);
        let r = summarize(&[p2, q2]).all;
        assert!((r.median_err_t_race - 0.2).abs() < 1e-12, "{r:?}");
        assert!((r.worst_err_t_race - 0.4).abs() < 1e-12, "{r:?}");
        assert_eq!(
            (r.median_err_e_race, r.worst_err_e_race),
            (0.0, 0.0),
            "{r:?}"
        );
        assert!(summary_text(&summarize(std::slice::from_ref(&p))).contains("batch race drawn"));
        // An even count: the median is the mean of the middle two; the
        // median run the lower one.
        let even = point(0.0, 1.0, &[1000.0, 1400.0, 1200.0, 9000.0], vec![]);
        assert_eq!(even.t_real().median, 1300.0);
        assert_eq!(even.median_run().rates.t_ns, 1200.0);
    }

    #[test]
    fn disturbed_points_are_counted_left_out_then_shown_with_the_rest() {
        let good = point(500.0, 1000.0, &[1000.0], vec![]);
        let bad = point(1000.0, 1000.0, &[4000.0], vec![slow()]);
        assert!(!good.disturbed() && bad.disturbed());
        let s = summarize(&[good.clone(), bad.clone()]);
        assert_eq!((s.points, s.disturbed), (2, 1));
        assert_eq!(s.undisturbed.points, 1);
        assert_eq!(s.undisturbed.median_err_t, 0.0);
        assert_eq!(s.undisturbed.worst_err_t, 0.0);
        // No undisturbed point: no errors (NaN, null in JSON), not zeros.
        let none = summarize(std::slice::from_ref(&bad));
        assert_eq!(none.undisturbed.points, 0);
        assert!(none.undisturbed.worst_err_t.is_nan() && none.undisturbed.median_err_t.is_nan());
        assert!((s.all.worst_err_t - 0.75).abs() < 1e-12);
        let text = summary_text(&s);
        assert!(text.contains("1 disturbed (marked; left out"), "{text}");
        assert!(text.contains("median error 0%, worst 0%"), "{text}");
        assert!(
            text.contains("with the disturbed: T, notify: median error 37.5%, worst 75%"),
            "{text}"
        );
        assert!(
            !text.contains("repeats:"),
            "one repetition: no spread: {text}"
        );
        // Every point disturbed: the errors over all of them, said so.
        let s = summarize(&[bad.clone(), bad]);
        let text = summary_text(&s);
        assert!(text.contains("2 disturbed (every point"), "{text}");
        assert!(text.contains("median error 75%"), "{text}");
    }

    #[test]
    fn disturbed_repetitions_are_run_again_within_the_bound() {
        let opts = Options {
            messages: 1000,
            seed: 7,
            repeat: 2,
        };
        let notes = std::cell::RefCell::new(Vec::new());
        let note = |l: &str| notes.borrow_mut().push(l.to_string());
        // The second try is disturbed (polling twice its floor), the
        // others are quiet: one extra try.
        let mut seeds = Vec::new();
        let (reps, tries) = repetitions(
            &opts,
            1000.0,
            |seed| {
                seeds.push(seed);
                let t = if seeds.len() == 2 { 2000.0 } else { 1000.0 };
                Ok((notify(1200.0), poll(t)))
            },
            &note,
        )
        .unwrap();
        assert_eq!((reps.len(), tries), (2, 3));
        assert_eq!(seeds, [7, 8, 9], "every try its own seed");
        assert!(reps.iter().all(|r| r.warnings.is_empty()));
        assert_eq!(notes.borrow().len(), 1);
        assert!(
            notes.borrow()[0].contains("1 of 3 extra tries"),
            "{:?}",
            notes.borrow()
        );
        // Always disturbed: MAX_RETRIES extra tries, then the disturbed
        // repetitions are kept with their warnings.
        notes.borrow_mut().clear();
        let (reps, tries) = repetitions(
            &opts,
            1000.0,
            |_| Ok((run(3000.0, [1000.0, 300.0], [0, 100]), poll(1000.0))),
            &note,
        )
        .unwrap();
        assert_eq!(tries, 2 + MAX_RETRIES);
        assert_eq!(reps.len(), 2);
        assert_eq!(notes.borrow().len(), MAX_RETRIES as usize);
        for r in &reps {
            assert!(
                matches!(
                    r.warnings[..],
                    [Warning::OffCpu {
                        party: Party::P,
                        ..
                    }]
                ),
                "{:?}",
                r.warnings
            );
        }
    }

    #[test]
    fn bad_repetition_counts_are_refused() {
        let be = kicklab_testbed::Backend::Threads(kicklab_ring::NotifierKind::Futex);
        let vary = Vary::parse("wp=1us..2us:2").unwrap();
        for repeat in [0, MAX_REPEAT + 1] {
            let opts = Options {
                repeat,
                ..Options::default()
            };
            match check(&Params::default(), be, &vary, &opts) {
                Err(LabError::Input {
                    input: Input::Repeat,
                    reason,
                }) => assert!(reason.contains("repetition"), "{reason}"),
                other => panic!("{repeat}: {other:?}"),
            }
        }
        let ok = Options {
            repeat: MAX_REPEAT,
            ..Options::default()
        };
        check(&Params::default(), be, &vary, &ok).unwrap();
    }

    #[test]
    fn the_json_has_every_point_with_the_contract_fields() {
        let points = [
            point(500.0, 1000.0, &[1000.0, 1100.0, 1200.0], vec![]),
            point(1000.0, 1000.0, &[4000.0], vec![slow()]),
        ];
        let be = kicklab_testbed::Backend::Threads(kicklab_ring::NotifierKind::Futex);
        let vary = Vary::parse("wp=0.5us..1us:2").unwrap();
        let v = to_json(&points, &Params::default(), be, &vary, &Options::default());
        assert_eq!(v["backend"], "futex");
        assert!(v["direction"].is_null());
        assert_eq!(v["repeat"], DEFAULT_REPEAT);
        assert_eq!(v["summary"]["disturbed"], 1);
        let rows = v["points"].as_array().unwrap();
        assert_eq!(rows.len(), 2);
        for row in rows {
            for key in [
                "wp_ns",
                "T_model_ns",
                "T_sim_ns",
                "T_real_ns",
                "E_model_ns",
                "E_real_ns",
                "T_poll_model_ns",
                "T_poll_real_ns",
                "T_real_min_ns",
                "T_real_max_ns",
            ] {
                assert!(row[key].is_number(), "{key}: {row}");
            }
            assert!(row["regime"].is_string());
            assert!(row["disturbed"].is_boolean());
            assert!(row["repetitions"].is_u64());
            assert!(row["warnings"].is_array());
        }
        assert_eq!(rows[0]["T_real_ns"], 1100.0);
        assert_eq!(rows[0]["T_real_min_ns"], 1000.0);
        assert_eq!(rows[0]["T_real_max_ns"], 1200.0);
        assert_eq!(rows[0]["disturbed"], false);
        assert_eq!(rows[1]["disturbed"], true);
        assert_eq!(rows[1]["warnings"][0]["kind"], "slow_polling");
    }

    #[test]
    fn charts_draw_the_range_and_ring_disturbed_points() {
        let quiet = point(500.0, 1000.0, &[1000.0, 1100.0, 1200.0], vec![]);
        let (t, _) = charts(std::slice::from_ref(&quiet), "futex");
        let measured = t
            .series
            .iter()
            .find(|s| s.name.starts_with("measured, notify"))
            .unwrap();
        assert_eq!(
            measured.error_bars,
            [ErrorBar {
                x: 0.5,
                lo: 1.0,
                hi: 1.2
            }]
        );
        assert!(
            t.series.iter().all(|s| s.style != Style::Ring),
            "nothing to ring"
        );
        let bad = point(1000.0, 1000.0, &[4000.0], vec![slow()]);
        let (t, e) = charts(&[quiet, bad], "futex");
        for c in [t, e] {
            let ring = c.series.iter().find(|s| s.style == Style::Ring).unwrap();
            assert_eq!(
                ring.points.len(),
                2,
                "notify and poll of the disturbed point"
            );
            assert!(ring.points.iter().all(|p| p.0 == 1.0));
        }
        // The page section lists it.
        let page = section(
            &[point(1000.0, 1000.0, &[4000.0], vec![slow()])],
            &crate::disturbance::tests::profile(),
            "futex",
            "kicklab validate",
        )
        .unwrap();
        assert!(
            page.html.contains("1 of 1 points still disturbed"),
            "{}",
            page.html
        );
        assert!(
            page.html.contains(
                "<li>W_P 1us: disturbed in 1 of 1 repetitions, after 0 extra tries: polling took 2us/message"
            ),
            "{}",
            page.html
        );
        assert!(page.html.contains("<td class=flag>yes</td>"));
    }
}

mod operating_point {

    use crate::disturbance::tests::run;
    use crate::validate::types::*;

    #[test]
    fn the_operating_point_is_who_slept_in_most_repetitions() {
        // messages: 1000 in `run`; a side that slept 100 times slept.
        let rep = |sleeps: [u64; 2]| Rep {
            notify: run(1000.0, [1000.0, 1000.0], sleeps),
            poll: run(1000.0, [1000.0, 1000.0], [0, 0]),
            warnings: vec![],
        };
        let (p, c) = (rep([100, 0]), rep([0, 100]));
        assert_eq!(majority_sleeper(&[p.clone(), c.clone(), p.clone()]), "P");
        assert_eq!(majority_sleeper(&[c.clone(), c, p]), "C");
        assert_eq!(majority_sleeper(&[]), "none");
    }
}
