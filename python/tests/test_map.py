"""kicklab.map against `kicklab map`'s map.csv: the same bytes, and the
same DataFrame as pandas reads from the file; chunks make the whole."""

from __future__ import annotations

import pandas as pd
import pytest

import kicklab
from kicklab import _kicklab

MAPS = [
    (
        {"x": "wp=0.2us..3us:8", "y": "wc=0.2us..3us:6", "messages": 5_000},
        ["--x", "wp=0.2us..3us:8", "--y", "wc=0.2us..3us:6", "--messages", "5000"],
    ),
    (
        {"x": "kc=1..64:5", "y": "np=1us..20us:4", "mode": "spin:2us", "wp": "exp:1us", "seed": 7, "messages": 3_000},
        [
            "--x", "kc=1..64:5", "--y", "np=1us..20us:4", "--mode", "spin:2us",
            "--wp", "exp:1us", "--seed", "7", "--messages", "3000",
        ],
    ),
    ({"x": "wp=0.2us..3us:5", "y": "sc=0.1us..10us:5", "messages": 0}, ["--x", "wp=0.2us..3us:5", "--y", "sc=0.1us..10us:5", "--messages", "0"]),
]


@pytest.mark.parametrize("kwargs,flags", MAPS)
def test_map_is_the_cli_csv(cli, tmp_path, kwargs, flags):
    p = cli.run("map", *flags, "--out", str(tmp_path))
    assert p.returncode == 0, p.stderr
    got = kicklab.map(**kwargs)
    want = pd.read_csv(tmp_path / "map.csv")
    pd.testing.assert_frame_equal(got, want, check_exact=True)
    args = {k: str(v) for k, v in kwargs.items() if k in kicklab.PARAMS}
    n = _kicklab.map_len(kwargs["x"], kwargs["y"])
    text = _kicklab.map_chunk_csv(
        args, kwargs["x"], kwargs["y"], kwargs.get("mode", "notify"), kwargs["messages"], kwargs.get("seed", 1), 0, n, True
    )
    assert text == (tmp_path / "map.csv").read_text()


def test_map_chunks_concatenate_to_the_whole():
    args = {"wp": "exp:1us"}
    x, y = "wp=0.5us..2us:5", "wc=0.5us..2us:4"
    whole = _kicklab.map_chunk_csv(args, x, y, "notify", 2_000, 9, 0, 20, True)
    parts = [_kicklab.map_chunk_csv(args, x, y, "notify", 2_000, 9, a, b, a == 0) for a, b in [(0, 3), (3, 3), (3, 11), (11, 20)]]
    assert "".join(parts) == whole
    assert whole.count("\n") == 21
    with pytest.raises(ValueError, match="chunk 5..21 is not within the map's 20 points"):
        _kicklab.map_chunk_csv(args, x, y, "notify", 2_000, 9, 5, 21, False)


def test_map_frame_and_errors():
    df = kicklab.map("wp=0.5us..3us:2", "wc=1us..2us:2", messages=2_000)
    assert list(df.columns) == ["wp", "wc", "regime", "T_model_ns", "E_model_ns", "T_sim_ns", "E_sim_ns"]
    # y outer, x inner; W_P = 3 us > W_C: FC, W_P = 0.5 us < W_C: FP.
    assert df["regime"].tolist() == ["FP", "FC", "FP", "FC"]
    with pytest.raises(ValueError, match="^x: "):
        kicklab.map("wp=1..2", "wc=1us..2us:2")
    with pytest.raises(ValueError, match="^y: vary another parameter than x"):
        kicklab.map("wc=1us..2us:2", "wc=1us..3us:2")
    with pytest.raises(ValueError, match=r"^x, y: 1001 x 1001 = 1002001 points: at most 1000000"):
        kicklab.map("wp=1us..2us:1001", "wc=1us..3us:1001")
