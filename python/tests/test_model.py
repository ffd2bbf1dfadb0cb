"""kicklab.model and kicklab.model_array against `kicklab model --json`."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import kicklab

CASES = [
    ({}, []),
    ({"wp": "2us"}, ["--wp", "2us"]),
    ({"wp": 2000}, ["--wp", "2000"]),
    ({"wp": "exp:2us", "wc": "uniform:0.8us,1.2us"}, ["--wp", "exp:2us", "--wc", "uniform:0.8us,1.2us"]),
    ({"len": 8, "kp": 4, "kc": 2, "wp": "1.5us"}, ["--len", "8", "--kp", "4", "--kc", "2", "--wp", "1.5us"]),
    ({"wp": "1us", "wc": "1us"}, ["--wp", "1us", "--wc", "1us"]),
    ({"vp": "1.2us", "wp": "0.9us"}, ["--vp", "1.2us", "--wp", "0.9us"]),
    ({"np": "5us", "sp": 100, "sc": "1us", "nc": "0.5us"}, ["--np", "5us", "--sp", "100", "--sc", "1us", "--nc", "0.5us"]),
    ({"mode": "poll", "wp": "2.5us"}, ["--mode", "poll", "--wp", "2.5us"]),
]


@pytest.mark.parametrize("kwargs,flags", CASES)
def test_model_is_the_cli_json(cli, kwargs, flags):
    assert kicklab.model(**kwargs) == cli.json("model", *flags)


def test_defaults_are_fig4():
    p = kicklab.model()
    assert p["params"] == {
        "len": 256, "k_p": 1, "k_c": 1, "w_p": "1000ns", "w_c": "1100ns",
        "n_p": "2400ns", "n_c": "200ns", "s_p": "3900ns", "s_c": "200ns",
    }
    assert p["regime"] == "FP" and p["mode"] == "notify"
    fc = kicklab.model(wp="2us")
    assert (fc["regime"], fc["m"], fc["T_ns"]) == ("FC", 1, 4400.0)


def test_numbers_are_nanoseconds():
    assert kicklab.model(wp=2000) == kicklab.model(wp="2us") == kicklab.model(wp=np.float64(2000.0))
    assert kicklab.model(len=np.int64(16)) == kicklab.model(len="16")


@pytest.mark.parametrize(
    "kwargs,flags",
    [
        ({"kp": 300}, ["--kp", "300"]),
        ({"wp": "1.1xs"}, ["--wp", "1.1xs"]),
        ({"wc": "gamma:1us"}, ["--wc", "gamma:1us"]),
        ({"len": -1}, ["--len", "-1"]),
        ({"len": "abc"}, ["--len", "abc"]),
        ({"vp": "3us"}, ["--vp", "3us"]),
        ({"mode": "bogus"}, ["--mode", "bogus"]),
        ({"mode": "sleep:20us"}, ["--mode", "sleep:20us"]),
    ],
)
def test_errors_name_the_parameter_as_the_cli_names_the_flag(cli, kwargs, flags):
    with pytest.raises(ValueError) as e:
        kicklab.model(**kwargs)
    line = cli.error("model", *flags)
    name = next(iter(kwargs))
    # The keyword `mode` is the command line's --strategy (--mode its alias).
    flag = {"mode": "strategy"}.get(name, name)
    msg = str(e.value)
    assert msg.startswith(f"{name}: ") or msg.startswith(f"{name} ("), msg
    # The same words: the CLI's line less "error: " and the flag syntax.
    words = line.removeprefix("error: ").replace(f" for '--{flag} <{flag.upper()}>'", "")
    words = words.replace(f"--{flag} ", f"{name} ").replace(f"--{flag}: ", f"{name}: ")
    if words.startswith("invalid value"):
        words = f"{name}: {words}"
    assert msg.replace("kicklab.sim()", "`kicklab sim`") == words


def test_bad_keywords_and_types():
    with pytest.raises(TypeError, match="unexpected keyword argument 'wq'"):
        kicklab.model(wq="1us")
    with pytest.raises(TypeError, match="wp: expected a duration"):
        kicklab.model(wp=True)
    with pytest.raises(ValueError, match="mode: the model covers notify and poll"):
        kicklab.model(mode="spin:5us")


def test_profile_dict_and_file(tmp_path):
    prof = {
        "backend": "futex",
        "cpus": 2,
        "tsc_ghz": 2.0,
        "gap_ns": 50000.0,
    }
    # A profile that is not one says so, naming the keyword.
    with pytest.raises(ValueError, match="profile: the dict given is not a kicklab profile"):
        kicklab.model(profile=prof)
    with pytest.raises(ValueError, match="profile: cannot read"):
        kicklab.model(profile=tmp_path / "missing.json")


# --- model_array ---------------------------------------------------------


def test_array_matches_scalar_model_bit_for_bit():
    wp = np.linspace(100.0, 3000.0, 37)
    r = kicklab.model_array(wp=wp)
    for i, x in enumerate(wp):
        p = kicklab.model(wp=float(x))
        assert r["regime"][i] == p["regime"]
        assert r["T_ns"][i] == p["T_ns"]
        assert r["E_ns"][i] == p["E_ns"]
        assert r["E_p_ns"][i] == p["E_p_ns"]
        assert r["E_c_ns"][i] == p["E_c_ns"]
        assert r["throughput_per_s"][i] == p["throughput_per_s"]
        assert (np.isnan(r["m"][i]) and p["m"] is None) or r["m"][i] == p["m"]


def test_array_broadcasts_and_mixes_scalars():
    wp = np.array([500.0, 1000.0, 2000.0])[:, None]
    kc = np.array([1, 4, 16, 64])
    r = kicklab.model_array(wp=wp, kc=kc, wc="1.1us", len=128, mode="notify")
    assert r["T_ns"].shape == (3, 4) and r["regime"].shape == (3, 4)
    for i in range(3):
        for j in range(4):
            p = kicklab.model(wp=float(wp[i, 0]), kc=int(kc[j]), len=128)
            assert (r["regime"][i, j], r["T_ns"][i, j], r["E_ns"][i, j]) == (p["regime"], p["T_ns"], p["E_ns"])


def test_model_dispatches_arrays_and_takes_series_and_lists():
    s = pd.Series([1000.0, 2000.0])
    a = kicklab.model(wp=s)
    b = kicklab.model_array(wp=[1000, 2000])
    assert list(a["regime"]) == list(b["regime"]) == ["FP", "FC"]
    np.testing.assert_array_equal(a["T_ns"], b["T_ns"])


def test_array_of_a_scalar_is_zero_dimensional():
    r = kicklab.model_array(wp="2us")
    assert r["T_ns"].shape == () and r["T_ns"] == 4400.0 and r["regime"] == "FC"


def test_array_errors():
    with pytest.raises(ValueError, match=r"kp \(k_P\): 300 must be between 1 and L = 256 \(at flat index 1\)"):
        kicklab.model_array(kp=np.array([1, 300]))
    r = kicklab.model_array(kp=np.array([1, 300, 2]), errors="nan")
    assert list(r["regime"]) == ["FP", "", "FP"]
    assert np.isnan(r["T_ns"][1]) and not np.isnan(r["T_ns"][2])
    with pytest.raises(ValueError, match="W_P"):
        kicklab.model_array(wp=np.array([1000.0, -5.0]))
    with pytest.raises(ValueError, match="len: invalid value '2.5'"):
        kicklab.model_array(len=np.array([2.5]))
    with pytest.raises(ValueError, match="do not broadcast"):
        kicklab.model_array(wp=np.zeros(3), wc=np.zeros(4))
    with pytest.raises(ValueError, match="errors"):
        kicklab.model_array(wp=np.zeros(3), errors="ignore")


def test_array_is_fast():
    import time

    wp = np.random.default_rng(1).uniform(100.0, 5000.0, 200_000)
    t = time.perf_counter()
    r = kicklab.model_array(wp=wp, wc=1100.0)
    assert time.perf_counter() - t < 10.0
    assert np.isfinite(r["T_ns"]).all()
