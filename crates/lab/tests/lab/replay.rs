//! `replay` over every recorded machine in `data/machines/`: each recorded
//! validation is read whole, forecast from its own profile, and judged;
//! the judgement is recomputed here from the printed bands and the
//! recorded repetitions. A recording made of the forecast's own central
//! values is covered exactly, which a misread field would break.

use std::path::PathBuf;

use kicklab_lab::replay::replay;

use super::{each_edit_is_refused, Edit};

fn machines() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../data/machines")
}

#[test]
fn every_recorded_validation_replays_and_its_judgement_adds_up() {
    let sets = replay(&machines()).expect("the recorded sets replay");
    assert!(sets.len() >= 3, "futex, kvm tx and kvm rx at least");
    for s in &sets {
        let recorded: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&s.file).unwrap()).unwrap();
        let points = recorded["points"].as_array().unwrap();
        assert_eq!(s.points.len(), points.len(), "{}", s.file);
        assert_eq!(s.backend, recorded["backend"].as_str().unwrap());
        let (mut covered, mut measured) = (0, 0);
        for (p, r) in s.points.iter().zip(points) {
            assert_eq!(p.wp_ns, r["wp_ns"].as_f64().unwrap());
            let f = &p.forecast;
            assert!(
                f.t_band_ns[0] <= f.t_ns && f.t_ns <= f.t_band_ns[1],
                "{f:?}"
            );
            assert!(f.e_band_ns[0] <= f.e_band_ns[1], "{f:?}");
            let shares: f64 = f.operating_points.iter().map(|o| o.share).sum();
            assert!((shares - 1.0).abs() < 1e-9, "{f:?}");
            if f.knife_edge {
                assert!(f.operating_points.len() > 1, "{f:?}");
            }
            for k in ["T_real_min_ns", "T_real_ns", "T_real_max_ns"] {
                let t = r[k].as_f64().unwrap();
                measured += 1;
                covered += usize::from(f.t_band_ns[0] <= t && t <= f.t_band_ns[1]);
            }
        }
        #[allow(clippy::cast_precision_loss)]
        let coverage = covered as f64 / measured as f64;
        assert!((s.summary.coverage - coverage).abs() < 1e-12, "{}", s.file);
        assert_eq!(s.summary.points, points.len());
    }
}

#[test]
fn a_recording_of_the_forecasts_own_values_is_covered_exactly() {
    let sets = replay(&machines()).unwrap();
    let s = &sets[0];
    let dir = std::env::temp_dir().join(format!("kicklab-replay-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut recorded: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&s.file).unwrap()).unwrap();
    for (p, r) in s
        .points
        .iter()
        .zip(recorded["points"].as_array_mut().unwrap())
    {
        for k in ["T_real_min_ns", "T_real_ns", "T_real_max_ns"] {
            r[k] = serde_json::json!(p.forecast.t_ns);
        }
    }
    let name = PathBuf::from(&s.file);
    let name = name.file_name().unwrap().to_str().unwrap();
    std::fs::write(dir.join(name), recorded.to_string()).unwrap();
    std::fs::copy(
        PathBuf::from(&s.file).with_file_name(name.replace("validate-", "profile-")),
        dir.join(name.replace("validate-", "profile-")),
    )
    .unwrap();
    let again = replay(&dir).unwrap();
    assert_eq!(again[0].summary.coverage, 1.0);
    assert!(again[0].summary.median_err_t < 1e-12);
    // A link back to the folder (a loop) and a second link to the same
    // recording: each recording is replayed once.
    std::os::unix::fs::symlink(&dir, dir.join("loop")).unwrap();
    std::os::unix::fs::symlink(
        dir.join(name),
        dir.join(name.replace("validate-", "validate-again-")),
    )
    .unwrap();
    let linked = replay(&dir).unwrap();
    assert_eq!(
        linked.len(),
        1,
        "{:?}",
        linked.iter().map(|s| &s.file).collect::<Vec<_>>()
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_regime_whose_rounds_run_from_one_message_to_dozens_is_a_knife_edge() {
    // The EPYC host's KVM rx guest, W_P 200 ns: FP at every corner of the
    // calibrated spread, but with one message a kick at some and batches
    // at others; its repetitions spread up to 2x nearby.
    let sets = replay(&machines().join("dev-epyc-2c-nested/2026-12-07-validate")).unwrap();
    let rx = sets
        .iter()
        .find(|s| s.file.ends_with("validate-kvm-rx.json"))
        .unwrap();
    let f = &rx.points[0].forecast;
    assert_eq!(rx.points[0].wp_ns, 200.0);
    assert!(f.knife_edge, "{f:?}");
    let fp: Vec<_> = f
        .operating_points
        .iter()
        .filter(|o| o.name == "FP")
        .collect();
    assert_eq!(fp.len(), 2, "{f:?}");
    assert_eq!(fp[1].round_messages, Some(1), "{f:?}");
    assert!(fp[0].round_messages.unwrap() > 1, "{f:?}");
    assert!(fp[1].t_ns > 2.0 * fp[0].t_ns, "{f:?}");
    assert_eq!((f.t_band_ns[0], f.t_band_ns[1]), (fp[0].t_ns, fp[1].t_ns));
    assert!(
        f.describe().contains("(a kick a message)"),
        "{}",
        f.describe()
    );
    // A regime whose T holds within 2x across the corners stays one
    // point: the second machine's KVM tx guest at W_P 3 us (one kick a
    // message, 37.5-51.6 us).
    let xeon = replay(&machines().join("xeon-2c-nested/2026-11-28a")).unwrap();
    let tx = xeon
        .iter()
        .find(|s| s.file.ends_with("validate-kvm-tx.json"))
        .unwrap();
    let last = tx.points.last().unwrap();
    assert_eq!(last.wp_ns, 3000.0);
    let f = &last.forecast;
    assert!(!f.knife_edge, "{f:?}");
    assert_eq!(f.operating_points.len(), 1, "{f:?}");
    assert!(f.t_band_ns[1] < 2.0 * f.t_band_ns[0], "{f:?}");
}

#[test]
fn a_folder_without_recordings_or_with_a_foreign_file_is_refused() {
    let dir = std::env::temp_dir().join(format!("kicklab-replay-bad-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let e = replay(&dir).unwrap_err().to_string();
    assert!(e.contains("no validate-*.json"), "{e}");
    std::fs::write(dir.join("validate-futex.json"), "{\"backend\": 1}").unwrap();
    let e = replay(&dir).unwrap_err().to_string();
    assert!(e.contains("profile-futex.json"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_recording_with_impossible_values_is_refused_naming_the_file_and_field() {
    let set = machines().join("xeon-2c-nested/2026-11-28a");
    let cases: [(Edit, &str); 7] = [
        (|v| v["points"][0]["wp_ns"] = 1e300.into(), "point 0: wp_ns"),
        (
            |v| v["points"][2]["wp_ns"] = (-1.0).into(),
            "point 2: wp_ns is -1, not a duration",
        ),
        (
            |v| v["points"] = serde_json::json!([]),
            "`points` is empty: nothing to judge",
        ),
        (
            |v| v["points"][1]["T_real_ns"] = (-5.0).into(),
            "point 1: T_real_ns is -5",
        ),
        (
            |v| v["points"][1]["T_real_max_ns"] = "x".into(),
            "point 1: T_real_max_ns is \"x\"",
        ),
        (|v| v["params"] = "x".into(), "`params` is \"x\""),
        (
            |v| v["params"] = serde_json::json!({"w_c": "3599s", "n_p": "3599s"}),
            "point 0 (wp_ns 200ns) cannot be forecast",
        ),
    ];
    each_edit_is_refused(
        &set,
        "validate-futex.json",
        "profile-futex.json",
        &cases,
        replay,
    );
}
