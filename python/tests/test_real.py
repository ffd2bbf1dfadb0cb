"""kicklab.calibrate and kicklab.run: real threads, kept short (a quick
calibration, a run of 20 000 messages). Their numbers depend on the
machine, so these check the shape of the results against the binary's
JSON, the message check, and the errors."""

from __future__ import annotations

import json
import math
import warnings

import pytest

import kicklab

def _close(a, b) -> bool:
    """Equal, floats within a relative 1e-15."""
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_close(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-15)
    return a == b


QUICK = {"samples": 20, "rounds": 1, "gaps": None, "overhead_runs": 0, "reference_runs": 0}


@pytest.fixture(scope="module")
def profile(tmp_path_factory):
    """A quick futex calibration, also saved as a file."""
    path = tmp_path_factory.mktemp("profile") / "futex.json"
    p = kicklab.calibrate("futex", save=path, **QUICK)
    p["path"] = path
    return p


def test_calibrate_has_the_cli_fields(cli, profile):
    want = cli.json(
        "calibrate", "--backend", "futex", "--samples", "20", "--rounds", "1", "--gaps", "none", "--overhead-runs", "0"
    )
    got = {k: v for k, v in profile.items() if k != "path"}
    assert set(got) == set(want)
    assert got["backend"] == "futex" and got["idle_curve"] == [] and got["overhead_ns"] is None
    assert got["overhead_p_ns"] is None and got["overhead_c_ns"] is None
    # N is a call's duration on one clock; the wall S may come out
    # negative (the notifier taken off its CPU inside its call while the
    # woken thread runs: docs/calibration.md), but not the wake-up R = N + S,
    # from the start of the notification to the woken thread running.
    assert got["NP_ns"] > 0 and got["NC_ns"] > 0
    assert got["NP_ns"] + got["SC_ns"] > 0 and got["NC_ns"] + got["SP_ns"] > 0
    # The saved file is the profile.
    assert json.loads(profile["path"].read_text()) == got["profile"]


def test_run_has_the_cli_fields_and_checks_every_message(cli, profile):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", kicklab.KicklabWarning)  # a busy machine disturbs runs
        r = kicklab.run("futex", messages=20_000, profile=profile, wp="2us")
        by_file = kicklab.run("futex", strategy="spin:2us", messages=5_000, profile=profile["path"])
    want = cli.json("run", "--backend", "futex", "--messages", "5000", "--profile", str(profile["path"]))
    assert set(r) == set(want) == set(by_file)
    assert (r["lost"], r["duplicated_or_reordered"]) == (0, 0)
    assert r["backend"] == "futex" and r["strategy"] == "notify" and r["batch"] == 1
    assert r["T_ns"] >= 2000 * 0.9
    assert r["predicted"]["regime"] in ("FC", "SCS", "SS", "FP", "SPS")
    assert r["disturbed"] == bool(r["warnings"])
    # Through JSON text and serde_json's parser (as a --profile file goes
    # to the binary): equal up to the last bit of a float.
    assert _close(r["profile"]["profile"], profile["profile"])
    assert by_file["strategy"] == "spin:2us"


def test_run_send_combining(profile):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", kicklab.KicklabWarning)
        r = kicklab.run("futex", messages=8_000, profile=profile, wp="2us", batch=8, flush="timer:20us")
    assert (r["batch"], r["flush"]) == (8, "timer:20us")
    assert (r["lost"], r["duplicated_or_reordered"]) == (0, 0)
    assert r["notifications_p"] * 8 <= 8_000 + 8
    assert r["predicted"]["source"] == "sim"


def test_run_errors(profile):
    with pytest.raises(ValueError, match="^backend: invalid value 'bogus': unknown backend"):
        kicklab.run("bogus")
    with pytest.raises(ValueError, match="^strategy: invalid value 'busy': unknown strategy `busy`"):
        kicklab.run(strategy="busy", profile=profile)
    with pytest.raises(ValueError, match="^batch: at least 1 message per publish"):
        kicklab.run(batch=0, profile=profile)
    with pytest.raises(ValueError, match="^batch: 1 to L = 256 messages per publish, got 300"):
        kicklab.run(batch=300, profile=profile)
    with pytest.raises(ValueError, match="^flush: invalid value 'later': unknown flush rule `later`"):
        kicklab.run(flush="later", profile=profile)
    with pytest.raises(ValueError, match="^flush: a timer above 0 and at most 1h"):
        kicklab.run(batch=8, flush="timer:0", profile=profile)
    with pytest.raises(ValueError, match="^profile: it calibrates futex, not eventfd"):
        kicklab.run("eventfd", messages=100, profile=profile)
    with pytest.raises(ValueError, match=r"^kp \(k_P\)"):
        kicklab.run(kp=0, profile=profile)


def test_calibrate_errors():
    with pytest.raises(ValueError, match="^samples: between 10 and 1000000"):
        kicklab.calibrate(samples=5)
    with pytest.raises(ValueError, match="^rounds: between 1 and 100"):
        kicklab.calibrate(rounds=0)
    with pytest.raises(ValueError, match="^gaps: `0us`: every gap must be longer than 0"):
        kicklab.calibrate(gaps="10us,0us")
    with pytest.raises(ValueError, match="^gap: invalid value 'soon'"):
        kicklab.calibrate(gap="soon")


def test_run_takes_every_strategy_per_party(cli, profile):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", kicklab.KicklabWarning)
        r = kicklab.run("futex", messages=5_000, profile=profile, wp="3us", strategy="notify", strategy_c="sleep:20us", latency="50us")
    assert (r["lost"], r["duplicated_or_reordered"]) == (0, 0)
    assert r["strategy_p"] == "notify" and r["strategy_c"] == "sleep:20us"
    assert r["strategy"] == "notify"  # as given: P runs it
    assert r["naps_c"] > 0 and r["latency_ns"]["p99"] > 0
    assert r["predicted"]["source"] == "sim"


def test_a_lock_file_that_cannot_be_made_warns_once_and_the_run_goes_on(profile, monkeypatch):
    monkeypatch.setenv("TMPDIR", "/nonexistent/kicklab-tmp")
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        first = kicklab.run("futex", messages=2_000, profile=profile)
        kicklab.run("futex", messages=2_000, profile=profile)
    said = [str(w.message) for w in seen if "cpus.lock" in str(w.message)]
    assert len(said) == 1, said
    assert said[0].startswith("a kicklab run started beside this one will not wait for it")
    assert "/nonexistent/kicklab-tmp/kicklab-cpus.lock" in said[0]
    assert all(w.category is kicklab.KicklabWarning for w in seen)
    assert first["messages"] == 2_000
