"""kicklab.sweep against `kicklab sweep`'s sweep.csv: the same bytes, and
the same DataFrame as pandas reads from the file."""

from __future__ import annotations

import pandas as pd
import pytest

import kicklab
from kicklab import _kicklab

SWEEPS = [
    # The target: the default sweep, seed 1.
    ({"vary": "wp=0.1us..3us:100"}, ["--vary", "wp=0.1us..3us:100"]),
    (
        {"vary": "wc=0.2us..4us:25", "wp": "exp:1us", "messages": 20_000, "seed": 3},
        ["--vary", "wc=0.2us..4us:25", "--wp", "exp:1us", "--messages", "20000", "--seed", "3"],
    ),
    (
        {"vary": "kc=1..64:16", "mode": "spin:2us", "len": 64, "messages": 10_000},
        ["--vary", "kc=1..64:16", "--mode", "spin:2us", "--len", "64", "--messages", "10000"],
    ),
    ({"vary": "np=3us..0.1us:7", "messages": 5_000}, ["--vary", "np=3us..0.1us:7", "--messages", "5000"]),
]


@pytest.mark.parametrize("kwargs,flags", SWEEPS)
def test_sweep_is_the_cli_csv(cli, tmp_path, kwargs, flags):
    p = cli.run("sweep", *flags, "--out", str(tmp_path))
    assert p.returncode == 0, p.stderr
    csv = (tmp_path / "sweep.csv").read_text()
    got = kicklab.sweep(**kwargs)
    want = pd.read_csv(tmp_path / "sweep.csv")
    pd.testing.assert_frame_equal(got, want, check_exact=True)
    # And the text itself, byte for byte.
    args = {k: str(v) for k, v in kwargs.items() if k in kicklab.PARAMS}
    text = _kicklab.sweep_csv(
        args, kwargs["vary"], kwargs.get("mode", "notify"), kwargs.get("messages", 50_000), kwargs.get("seed", 1)
    )
    assert text == csv


def test_sweep_frame():
    df = kicklab.sweep("wp=0.5us..2us:4", messages=5_000)
    assert list(df.columns[:4]) == ["wp_ns", "regime", "m", "T_model_ns"]
    assert len(df) == 4
    assert df["regime"].tolist() == ["FP", "FP", "FC", "FC"]
    assert df["T_sim_ns"].dtype == float


def test_chunks_concatenate_to_the_whole():
    args = {"wp": "exp:1us"}
    whole = _kicklab.sweep_csv(args, "wc=0.5us..2us:10", "notify", 5_000, 9)
    parts = [
        _kicklab.sweep_chunk_csv(args, "wc=0.5us..2us:10", "notify", 5_000, 9, a, b, a == 0)
        for a, b in [(0, 3), (3, 3), (3, 7), (7, 10)]
    ]
    assert "".join(parts) == whole
    assert _kicklab.sweep_len("wc=0.5us..2us:10") == 10
    with pytest.raises(ValueError, match="chunk"):
        _kicklab.sweep_chunk_csv(args, "wc=0.5us..2us:10", "notify", 5_000, 9, 5, 11, False)


def test_sweep_errors(cli):
    with pytest.raises(ValueError) as e:
        kicklab.sweep("wp=1..2")
    assert str(e.value) == "vary: `wp=1..2`: expected NAME=FROM..TO:POINTS, e.g. wp=0.1us..3us:100"
    with pytest.raises(ValueError, match=r"^vary: at kp=300: k_P"):
        kicklab.sweep("kp=1..300:3")
    assert cli.error("sweep", "--vary", "kp=1..300:3", "--out", "/tmp/kicklab-py-unused").startswith(
        "error: --vary: at kp=300: k_P"
    )
    with pytest.raises(ValueError, match="^messages: need at least 1 message per point"):
        kicklab.sweep(messages=0)
    with pytest.raises(TypeError, match="unexpected keyword argument 'vray'"):
        kicklab.sweep(vray="wp=1us..2us:2")  # type: ignore[call-arg]
