"""What the package does with input the command line refuses or reads in
one way only: each case here was once accepted, ignored or read
differently by one of the two."""

from __future__ import annotations

import datetime
import json
import re
import time

import numpy as np
import pytest

import kicklab


def _stat(ns: float) -> dict[str, float]:
    return {"median_ns": ns, "mean_ns": ns, "p10_ns": ns, "p90_ns": ns, "sigma_log": 0.0, "n": 1}


def _profile() -> dict[str, object]:
    """A profile whose ring costs differ by who sleeps: a polling pair's
    (50 ns) against the pace-setter's with its peer asleep (90, 110 ns)."""
    costs = {"NP": 2400.0, "NC": 200.0, "SP": 3900.0, "SC": 200.0}
    prof: dict[str, object] = {k: _stat(v) for k, v in costs.items()}
    prof.update({f"{k}_cpu": _stat(v) for k, v in costs.items()})
    prof.update(
        backend="futex",
        gap_ns=50_000.0,
        rounds=1,
        stable=True,
        tsc_ghz=0.0,
        cpus=2,
        overhead=_stat(50.0),
        overhead_p=_stat(90.0),
        overhead_c=_stat(110.0),
    )
    return prof


def test_a_profile_adds_the_ring_cost_the_command_line_adds(cli, tmp_path):
    path = tmp_path / "p.json"
    path.write_text(json.dumps(_profile()))
    for mode in ("notify", "poll"):
        got = kicklab.model(mode=mode, profile=path, wp="2us")
        assert got == cli.json("model", "--mode", mode, "--profile", str(path), "--wp", "2us")
    # Notify pairs take the ring's cost with the peer asleep (90, 110 ns).
    assert kicklab.model(profile=path, wp="2us")["params"]["w_p"] == "2090ns"
    arr = kicklab.model_array(profile=path, wp=np.array([2000.0]))
    assert arr["T_ns"][0] == kicklab.model(profile=path, wp=2000.0)["T_ns"]
    sim = kicklab.sim(messages=20_000, profile=path, wp="2us")
    assert sim == cli.json("sim", "--messages", "20000", "--profile", str(path), "--wp", "2us")


def test_a_profile_with_a_spread_gives_the_batch_race_the_command_line_gives(cli, tmp_path):
    prof = _profile()
    # C's effective start-up spread over 2.563 us between p10 and p90: a
    # normal's sd of 1 us.
    prof["SC"] = {**_stat(200.0), "p10_ns": -1000.0, "p90_ns": 1563.103}
    path = tmp_path / "p.json"
    path.write_text(json.dumps(prof))
    got = kicklab.model(profile=path, wp="2us")
    assert got == cli.json("model", "--profile", str(path), "--wp", "2us")
    assert got["regime"] == "FC" and got["race"]["regime"] == "FC"
    assert got["race"]["spread_ns"][1] == pytest.approx(1000.0, rel=1e-6)
    # Drawn, some kicks carry more messages than the means' batch.
    assert got["race"]["round_messages"] > got["round_messages"]
    assert got["race"]["T_ns"] < got["T_ns"]
    assert "race" not in kicklab.model(profile=path, wp="2us", mode="poll")


def test_a_latency_bound_is_above_0():
    with pytest.raises(ValueError, match="^latency: .*a latency bound must be > 0"):
        kicklab.sim(messages=1000, mode="adaptive", latency=0)
    with pytest.raises(ValueError, match="^latency: "):
        kicklab.advise(latency="0us")


def test_advise_blames_a_profile_whose_ring_cost_alone_is_past_its_search(cli, tmp_path):
    prof = _profile()
    prof["overhead"] = _stat(1e9)
    path = tmp_path / "slow-ring.json"
    path.write_text(json.dumps(prof))
    out = cli.run("advise", "--profile", str(path))
    assert out.returncode == 2
    assert out.stderr.startswith("error: --profile: its ring cost per message (1s) added to W_P (1us)")
    with pytest.raises(ValueError, match=r"^profile: its ring cost per message \(1s\) added to W_P \(1us\)"):
        kicklab.advise(profile=path)


def test_a_count_with_blanks_is_refused_as_the_command_line_refuses_it(cli):
    out = cli.run("model", "--len", " 256 ")
    assert out.returncode == 2 and "` 256 ` is not a whole number (digits only" in out.stderr
    with pytest.raises(ValueError, match="^len: invalid value ' 256 ': ` 256 ` is not a whole number \\(digits only"):
        kicklab.model(len=" 256 ")
    assert kicklab.model(len="256") == kicklab.model(len=256)


def test_a_count_swept_past_its_whole_numbers_is_refused():
    with pytest.raises(ValueError, match="^vary: len takes whole numbers: 10 points over 1..4"):
        kicklab.sweep("len=1..4:10", messages=100)
    with pytest.raises(ValueError, match="^x: kc takes whole numbers"):
        kicklab.map("kc=1..4:10", "wc=0.5us..3us:2", messages=0)
    with pytest.raises(ValueError, match="^z: kc takes whole numbers"):
        kicklab.map("wp=1us..2us:2", "wc=0.5us..3us:2", z="kc=1..4:10", messages=0)


def test_a_constant_for_the_swept_parameter_is_refused_and_a_distribution_keeps_its_shape():
    with pytest.raises(ValueError, match="^wp: sweep sets W_P itself"):
        kicklab.sweep("wp=0.1us..3us:3", wp="5us", messages=1000)
    with pytest.raises(ValueError, match="^wc: map sets W_C itself"):
        kicklab.map("wp=1us..2us:2", "wc=1us..2us:2", wc=2000, messages=0)
    with pytest.raises(ValueError, match="^wp: control sets W_P itself"):
        kicklab.control(points=2, messages=1000, workloads="const", wp="exp:5us")
    shaped = kicklab.sweep("wp=1.5us..2us:2", wp="exp:1us", messages=20_000)
    constant = kicklab.sweep("wp=1.5us..2us:2", messages=20_000)
    assert shaped["wp_ns"].tolist() == constant["wp_ns"].tolist() == [1500, 2000]
    assert (abs(constant["T_sim_ns"] - constant["T_model_ns"]) <= 1e-6 * constant["T_model_ns"]).all()
    assert (abs(shaped["T_sim_ns"] - shaped["T_model_ns"]) > 0.01 * shaped["T_model_ns"]).all()


def test_a_control_range_has_one_value_per_point():
    with pytest.raises(ValueError, match="^range: .*FROM == TO is one W_P"):
        kicklab.control(points=3, range="1us..1us", messages=1000, workloads="const")
    with pytest.raises(ValueError, match="^range: "):
        kicklab.control(points=2, range="1us...3us", messages=1000, workloads="const")
    with pytest.raises(TypeError, match="^range: expected 'FROM..TO' or a pair"):
        kicklab.control(range=(1000,))
    with pytest.raises(TypeError, match="^workloads: "):
        kicklab.control(workloads=[5])


def test_a_maps_layers_count_toward_its_size():
    started = time.monotonic()
    with pytest.raises(ValueError, match="^z: 100000 layers: at most 1000"):
        kicklab.map("wp=0.5us..3us:3", "wc=0.5us..3us:3", z="vp=0..1us:100000", messages=0)
    with pytest.raises(ValueError, match="^z: .* at most 1000000 in a map"):
        kicklab.map("wp=0.5us..3us:300", "wc=0.5us..3us:300", z="vp=0..1us:20", messages=0)
    assert time.monotonic() - started < 5


def test_array_keywords_take_real_numbers_and_timedeltas():
    by_ns = kicklab.model_array(wp=np.array([1000.0, 2000.0]))
    by_td = kicklab.model_array(wp=np.array([1, 2], dtype="timedelta64[us]"))
    assert (by_td["T_ns"] == by_ns["T_ns"]).all()
    assert kicklab.model(wp=datetime.timedelta(microseconds=2))["T_ns"] == kicklab.model(wp="2us")["T_ns"]
    assert kicklab.model(wp=np.timedelta64(2, "us"))["T_ns"] == kicklab.model(wp="2us")["T_ns"]
    for bad in ([True, False], np.array([1000 + 5j]), np.ma.masked_array([1000.0, 2000.0], mask=[0, 1])):
        with pytest.raises(TypeError, match="^wp: "):
            kicklab.model_array(wp=bad)
    with pytest.raises(ValueError, match="^wp: .*below a picosecond"):
        kicklab.model_array(wp=[1e-300])
    # No rate where T is 0, as model()'s None.
    zero = kicklab.model_array(wp=[0.0], wc=0, np=0, nc=0, sp=0, sc=0)
    assert np.isnan(zero["throughput_per_s"][0])
    assert kicklab.model(wp=0, wc=0, np=0, nc=0, sp=0, sc=0)["throughput_per_s"] is None


def test_keywords_of_the_wrong_type_are_named():
    for call, name in [
        (lambda: kicklab.model(mode=None), "mode"),
        (lambda: kicklab.sim(start=None), "start"),
        (lambda: kicklab.sweep(None), "vary"),
        (lambda: kicklab.map(None), "x"),
        (lambda: kicklab.sim(record_latency="no"), "record_latency"),
        (lambda: kicklab.advise(exhaustive="no"), "exhaustive"),
    ]:
        with pytest.raises(TypeError, match=f"^{name}: expected"):
            call()
    assert kicklab.model(len=256.0) == kicklab.model(len=256)
    with pytest.raises(ValueError, match="^len: expected a whole number, got 256.5"):
        kicklab.model(len=256.5)
    with pytest.raises(ValueError, match="^wp: .* too large"):
        kicklab.model(wp=10**400)
    with pytest.raises(ValueError, match="^chunks: .*give client= too"):
        kicklab.sweep("wp=1us..2us:2", chunks=3)
    with pytest.raises(ValueError, match="^profile: the dict given is not a kicklab profile"):
        kicklab.model(profile={"a": np.int64(1)})


def test_the_save_path_and_kvm_options_are_checked_before_measuring(tmp_path):
    started = time.monotonic()
    with pytest.raises(ValueError, match="^save: cannot write"):
        kicklab.calibrate(samples=10, save=tmp_path / "missing" / "p.json")
    # Any value, the kvm default included: the command line refuses
    # `--direction tx` beside `--backend futex` the same way.
    for keyword, value in [("direction", "rx"), ("direction", "tx"), ("halt_poll", 0), ("guest", "user")]:
        with pytest.raises(ValueError, match=f"^{keyword}: a kvm option"):
            kicklab.calibrate(samples=10, **{keyword: value})
        with pytest.raises(ValueError, match=f"^{keyword}: a kvm option"):
            kicklab.run(messages=100, **{keyword: value})
    with pytest.raises(ValueError, match="^reference_runs: at most"):
        kicklab.calibrate(samples=10, reference_runs=101)
    assert time.monotonic() - started < 5, "refused only after measuring"


def test_studies_that_would_simulate_for_hours_are_refused_first():
    started = time.monotonic()
    with pytest.raises(ValueError, match="^len \\(L\\): .* hours"):
        kicklab.control(points=15, workloads="const", messages=1000, len=16777216)
    with pytest.raises(ValueError, match="^messages: .* hours"):
        kicklab.control(points=2, workloads="const", messages=10**9)
    with pytest.raises(ValueError, match="^messages: .* hours"):
        kicklab.sweep("wp=0.1us..3us:100", messages=10**9)
    assert time.monotonic() - started < 5


def test_lists_arrays_and_generators_are_taken_alike():
    by_list = kicklab.control(range=("0.5us", "2us"), points=2, messages=1000, workloads=["const"])
    by_array = kicklab.control(
        range=np.array([500.0, 2000.0]), points=2, messages=1000, workloads=np.array(["const"])
    )
    assert by_list.equals(by_array)
    tds = [datetime.timedelta(microseconds=1), datetime.timedelta(microseconds=2)]
    assert (kicklab.model_array(wp=tds)["T_ns"] == kicklab.model_array(wp=[1000.0, 2000.0])["T_ns"]).all()
    # A 3-D map names the keyword whose range is bad.
    with pytest.raises(ValueError, match="^x: kc takes whole numbers"):
        kicklab.map("kc=1..4:10", "wc=0.5us..3us:2", z="wp=1us..2us:2", messages=0)


def test_a_negative_or_huge_count_is_refused_in_the_command_lines_words(cli):
    out = cli.run("sim", "--messages", "-1")
    assert out.returncode == 2 and "`-1` is not a whole number (digits only, no sign" in out.stderr
    with pytest.raises(ValueError, match=r"^messages: invalid value '-1': `-1` is not a whole number \(digits only, no sign"):
        kicklab.sim(messages=-1)
    out = cli.run("model", "--len", "4294967296")
    assert out.returncode == 2 and "`4294967296` is too large (at most 4294967295)" in out.stderr
    with pytest.raises(ValueError, match=r"^len: invalid value '4294967296': `4294967296` is too large \(at most 4294967295\)"):
        kicklab.model(len="4294967296")


def test_a_ring_cost_that_takes_w_out_of_range_blames_the_profile(cli, tmp_path):
    prof = _profile()
    for ring in ("overhead", "overhead_p", "overhead_c"):
        prof[ring] = _stat(3.6e12)
    path = tmp_path / "hour-ring.json"
    path.write_text(json.dumps(prof))
    want = "its ring cost per message, added to W_P (1us), takes W_P out of range"
    out = cli.run("model", "--profile", str(path))
    assert out.returncode == 2 and out.stderr.startswith(f"error: --profile: {want}"), out.stderr
    with pytest.raises(ValueError, match=rf"^profile: {re.escape(want)}"):
        kicklab.model(profile=path)


def test_timedeltas_keep_their_length_or_are_refused():
    # numpy's own conversion to ns wraps past 292 years into a plausible
    # cost; kicklab refuses the real length instead.
    for huge in (datetime.timedelta(days=213504), np.timedelta64(213504, "D")):
        with pytest.raises(ValueError, match="^wp: .*longest duration"):
            kicklab.model(wp=huge)
    with pytest.raises(ValueError, match="^wp.*longest duration"):
        kicklab.model_array(wp=[datetime.timedelta(days=213504)])
    # Years, months and a bare count have no length in ns.
    for unitless in (np.timedelta64(5, "Y"), np.timedelta64(5)):
        with pytest.raises(ValueError, match="^wp: a timedelta64 in"):
            kicklab.model(wp=unitless)
    with pytest.raises(ValueError, match="^wp: a timedelta64 in 'M'"):
        kicklab.model_array(wp=np.array([1, 2], dtype="timedelta64[M]"))
    minute = kicklab.model(wp=np.timedelta64(1, "m"))["params"]["w_p"]
    assert minute == kicklab.model(wp="60s")["params"]["w_p"]


def test_text_that_is_not_utf8_and_odd_containers_are_refused_naming_the_keyword(tmp_path):
    for call, name in [
        (lambda: kicklab.model(wp="\ud800"), "wp"),
        (lambda: kicklab.model(mode="\ud800"), "mode"),
        (lambda: kicklab.model(len="\ud800"), "len"),
        (lambda: kicklab.sweep("wp=1us..2us:2\ud800"), "vary"),
        (lambda: kicklab.calibrate(samples=10, save=str(tmp_path / "\ud800")), "save"),
        (lambda: kicklab.model_array(wp=[[1.0], [2.0, 3.0]]), "wp"),
        (lambda: kicklab.model(profile=_nested(100_000)), "profile"),
    ]:
        with pytest.raises(ValueError, match=f"^{name}: "):
            call()
    for call, name in [
        (lambda: kicklab.calibrate(samples=10, save=b"/tmp/p.json"), "save"),
        (lambda: kicklab.sweep("wp=1us..2us:2", client=object()), "client"),
    ]:
        with pytest.raises(TypeError, match=f"^{name}: "):
            call()


def _nested(depth: int) -> dict[str, object]:
    d: dict[str, object] = {}
    cur = d
    for _ in range(depth):
        nxt: dict[str, object] = {}
        cur["a"] = nxt
        cur = nxt
    return d


def test_a_sim_whose_latencies_sum_past_64_bits_returns_them():
    r = kicklab.sim(messages=100, wp="1ns", wc="1000s")
    assert r["totals"]["latency_sum_ps"] > 2**64


def test_model_array_refuses_more_points_than_memory_holds():
    # A view of one value broadcast to 10^12 points: refused before any
    # work, not copied out until the machine runs out.
    with pytest.raises(MemoryError, match="^model_array: 1000000000000 points"):
        kicklab.model_array(wp=np.broadcast_to(np.ones(1), (10**12,)))


def test_every_text_keyword_names_itself_on_text_that_is_not_utf8():
    for call, keyword in [
        (lambda: kicklab.control(range="\udcff"), "range"),
        (lambda: kicklab.control(workloads=["const", "\udcff"]), "workloads"),
        (lambda: kicklab.calibrate(gaps="5us,\udcff"), "gaps"),
    ]:
        with pytest.raises(ValueError, match=f"^{keyword}: .*not UTF-8"):
            call()


def test_refusals_name_the_keyword_given():
    # A mode with no closed form fails every point alike: refused, even
    # where errors="nan" turns a point's bad parameters into NaN.
    for wp in ([1, 2], []):
        with pytest.raises(ValueError, match="^mode: only notify and poll"):
            kicklab.model_array(wp=wp, mode="sleep:20us", errors="nan")
    with pytest.raises(ValueError, match="^warmup: "):
        kicklab.sim(messages=1, warmup=2**64 - 1)
    with pytest.raises(ValueError, match="^z: at vp=3000.0: vp \\(V_P\\)"):
        kicklab.map("wp=0.1us..3us:3", "wc=0.1us..3us:3", z="vp=0..3us:5", messages=100)
    with pytest.raises(ValueError, match="^wp, wc: the arrays do not broadcast"):
        kicklab.model_array(wp=(1000, 2000), wc=[1, 2, 3])

    class NotAClient:
        def submit(self):
            pass

        def gather(self):
            pass

    with pytest.raises(TypeError, match="^client: expected a dask.distributed.Client"):
        kicklab.sweep("wp=1us..2us:2", client=NotAClient())


def test_sim_warns_where_adaptive_misses_its_bound_as_the_command_line_does():
    with pytest.warns(kicklab.KicklabWarning, match="above the bound adaptive keeps, 0.001ns"):
        kicklab.sim(messages=100, mode="adaptive", latency="1e-3ns")
