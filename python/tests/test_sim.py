"""kicklab.sim, kicklab.advise and kicklab.control against the binary."""

from __future__ import annotations

import io
import warnings

import pandas as pd
import pytest

import kicklab

SIM_CASES = [
    ({"messages": 20_000}, ["--messages", "20000"]),
    ({"wp": "exp:2us", "messages": 50_000, "seed": 7}, ["--wp", "exp:2us", "--messages", "50000", "--seed", "7"]),
    (
        {"mode": "spin:5us", "wp": "exp:1us", "wc": "normal:1.1us,0.2us", "messages": 30_000},
        ["--mode", "spin:5us", "--wp", "exp:1us", "--wc", "normal:1.1us,0.2us", "--messages", "30000"],
    ),
    (
        {"mode_p": "poll", "mode_c": "sleep:20us", "messages": 20_000},
        ["--mode-p", "poll", "--mode-c", "sleep:20us", "--messages", "20000"],
    ),
    (
        {"mode": "adaptive", "latency": "50us", "wp": "exp:1.5us", "messages": 30_000},
        ["--mode", "adaptive", "--latency", "50us", "--wp", "exp:1.5us", "--messages", "30000"],
    ),
    (
        {"vp": "1.2us", "wp": "0.95us", "start": "full", "messages": 20_000},
        ["--vp", "1.2us", "--wp", "0.95us", "--start", "full", "--messages", "20000"],
    ),
    (
        {"wp": "phases:0.5us@5000+3us@5000", "warmup": 1000, "record_latency": False, "messages": 20_000},
        ["--wp", "phases:0.5us@5000+3us@5000", "--warmup", "1000", "--no-latency", "--messages", "20000"],
    ),
    (
        {"mode": "coalesce:8,20us", "wp": "mix:0.01:1us+50us", "messages": 20_000},
        ["--mode", "coalesce:8,20us", "--wp", "mix:0.01:1us+50us", "--messages", "20000"],
    ),
]


@pytest.mark.parametrize("kwargs,flags", SIM_CASES)
def test_sim_is_the_cli_json(cli, kwargs, flags):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", kicklab.KicklabWarning)
        assert kicklab.sim(**kwargs) == cli.json("sim", *flags)


def test_sim_warns_over_a_partial_round(cli):
    with pytest.warns(kicklab.KicklabWarning, match="a round is 40 messages"):
        kicklab.sim(messages=1000)
    assert "a round is 40 messages" in cli.run("sim", "--messages", "1000").stderr


def test_sim_errors():
    with pytest.raises(ValueError, match="^messages: need at least 1 message"):
        kicklab.sim(messages=0)
    with pytest.raises(ValueError, match="^messages: invalid value '-1'"):
        kicklab.sim(messages=-1)
    with pytest.raises(ValueError, match="^mode_c: invalid value 'nap'"):
        kicklab.sim(mode_c="nap")
    with pytest.raises(ValueError, match="^start: invalid value 'half'"):
        kicklab.sim(start="half")
    with pytest.raises(ValueError, match="^latency: invalid value '5 parsecs'"):
        kicklab.sim(mode="adaptive", latency="5 parsecs")
    with pytest.raises(ValueError, match=r"^kc \(k_C\)"):
        kicklab.sim(len=4, kc=5)


def test_advise_is_the_cli_json(cli):
    got = kicklab.advise(latency="50us", messages=20_000, wp="exp:1us")
    assert got == cli.json("advise", "--latency", "50us", "--messages", "20000", "--wp", "exp:1us")
    assert got["strategy"] == got["alternatives"][0]["strategy"]
    assert [k["mechanism"] for k in got["knobs"]][:2] == ["kvm-host", "guest"]
    napi = kicklab.advise(messages=20_000, wp="2us", mechanisms="napi,vhost")
    assert napi == cli.json("advise", "--messages", "20000", "--wp", "2us", "--for", "napi,vhost")
    assert [k["mechanism"] for k in napi["knobs"]] == ["napi", "vhost"]
    assert "napi_defer_hard_irqs" in napi["knobs"][0]["settings"]


def test_advise_errors():
    with pytest.raises(ValueError, match="^messages: need at least 1000 messages"):
        kicklab.advise(messages=0)
    with pytest.raises(ValueError, match="^latency: "):
        kicklab.advise(latency=0)
    with pytest.raises(ValueError, match="^mechanisms: invalid value 'nap'.*kvm-host"):
        kicklab.advise(mechanisms="nap")
    with pytest.raises(TypeError, match="^mechanisms: expected a string"):
        kicklab.advise(mechanisms=["napi"])


def test_control_is_the_cli_csv(cli, tmp_path):
    flags = ["--points", "3", "--messages", "20000", "--workload", "const,mix", "--range", "0.5us..2us"]
    p = cli.run("control", *flags, "--out", str(tmp_path))
    assert p.returncode == 0, p.stderr
    want = pd.read_csv(tmp_path / "control.csv")
    got = kicklab.control(range=("0.5us", 2000), points=3, messages=20_000, workloads=["const", "mix"])
    pd.testing.assert_frame_equal(got, want, check_exact=True)
    assert got.attrs["passed"] in (True, False)
    assert set(got["workload"]) == {"const", "mix"}
    same = kicklab.control(range="0.5us..2us", points=3, messages=20_000, workloads="const,mix")
    pd.testing.assert_frame_equal(same, want, check_exact=True)


def test_control_errors():
    with pytest.raises(ValueError, match="^workloads: invalid value 'gamma'"):
        kicklab.control(workloads="gamma")
    with pytest.raises(ValueError, match="^range: invalid value '3us..1us'"):
        kicklab.control(range="3us..1us")
    with pytest.raises(ValueError, match="^points: 1 to 1000 points"):
        kicklab.control(points=0)
