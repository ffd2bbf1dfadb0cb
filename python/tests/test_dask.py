"""kicklab.sweep(..., client=...) on a distributed.LocalCluster: the points
computed in chunks on worker processes give the local run's DataFrame, to
the bit, for the same seed."""

from __future__ import annotations

import pandas as pd
import pytest

import kicklab
from kicklab._dask import bounds

distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    ) as cluster, distributed.Client(cluster) as c:
        yield c


@pytest.mark.parametrize(
    "kwargs",
    [
        {"vary": "wp=0.1us..3us:40", "wp": "exp:1us", "wc": "exp:1.1us", "messages": 20_000, "seed": 5},
        {"vary": "kc=1..64:9", "mode": "spin:2us", "len": 64, "np": "exp:2.4us", "messages": 10_000},
        {"vary": "wc=0.5us..2us:3", "mode": "adaptive", "messages": 10_000},
    ],
)
def test_cluster_sweep_is_the_local_sweep(client, kwargs):
    local = kicklab.sweep(**kwargs)
    for chunks in (None, 1, 4, 1000):
        spread = kicklab.sweep(client=client, chunks=chunks, **kwargs)
        pd.testing.assert_frame_equal(spread, local, check_exact=True)


def test_cluster_sweep_checks_inputs_before_submitting(client):
    with pytest.raises(ValueError, match=r"^vary: at kp=300: k_P"):
        kicklab.sweep("kp=1..300:3", client=client)
    with pytest.raises(ValueError, match="^chunks: invalid value '0'"):
        kicklab.sweep("wp=1us..2us:2", client=client, chunks=0)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"x": "wp=0.2us..3us:7", "y": "wc=0.2us..3us:5", "wp": "exp:1us", "messages": 5_000, "seed": 3},
        {"x": "kc=1..64:4", "y": "np=1us..20us:3", "mode": "spin:2us", "messages": 5_000},
        {"x": "wp=0.2us..3us:6", "y": "wc=0.2us..3us:6", "messages": 0},
    ],
)
def test_cluster_map_is_the_local_map(client, kwargs):
    local = kicklab.map(**kwargs)
    for chunks in (None, 1, 3, 1000):
        spread = kicklab.map(client=client, chunks=chunks, **kwargs)
        pd.testing.assert_frame_equal(spread, local, check_exact=True)


def test_a_3d_map_stacks_the_2d_maps_and_the_cluster_gives_the_same(client):
    kw = {"x": "wp=0.2us..3us:4", "y": "wc=0.2us..3us:3", "messages": 3_000, "seed": 2}
    cube = kicklab.map(z="kc=1..64:3", **kw)
    assert list(cube.columns[:3]) == ["kc", "wp", "wc"]
    assert len(cube) == 3 * 12
    for k, layer in cube.groupby("kc", sort=False):
        want = kicklab.map(kc=int(k), **kw)
        got = layer.drop(columns="kc").reset_index(drop=True)
        pd.testing.assert_frame_equal(got, want, check_exact=True)
    for chunks in (None, 1, 5):
        pd.testing.assert_frame_equal(kicklab.map(z="kc=1..64:3", client=client, chunks=chunks, **kw), cube, check_exact=True)
    # A duration axis: the value in ns.
    d = kicklab.map(z="np=1us..4us:2", **kw)
    assert sorted(d["np"].unique()) == [1000.0, 4000.0]
    with pytest.raises(ValueError, match="^z: vary another parameter than x and y"):
        kicklab.map(z="wp=1us..2us:2", **kw)
    with pytest.raises(ValueError, match="^z: varies kc, also given as kc="):
        kicklab.map(z="kc=1..4:2", kc=3, **kw)


def test_cluster_map_checks_inputs_before_submitting(client):
    with pytest.raises(ValueError, match=r"^x, y: at kp=300, wc=1us: k_P"):
        kicklab.map("kp=1..300:3", "wc=1us..2us:2", client=client)
    with pytest.raises(ValueError, match="^y: vary another parameter than x"):
        kicklab.map("wp=1us..2us:2", "wp=1us..3us:2", client=client)


def test_bounds_cover_every_point_once():
    for points in (1, 2, 7, 100):
        for chunks in (1, 3, 8, 500):
            b = bounds(points, chunks)
            assert b[0][0] == 0 and b[-1][1] == points
            assert all(a < z for a, z in b)
            assert all(b[i][1] == b[i + 1][0] for i in range(len(b) - 1))


def test_cluster_runs_are_checked_before_anything_is_submitted(client, monkeypatch):
    # Points whose runs would take the simulated clock past its range: a
    # worker would refuse them at once, but only after the work was sent.
    def refuse(*args, **kwargs):
        raise AssertionError("a chunk was submitted")

    monkeypatch.setattr(client, "submit", refuse)
    with pytest.raises(ValueError, match=r"^messages: simulated time ran past"):
        kicklab.sweep("wp=0.5s..1s:2", messages=10_000_000, client=client)
    with pytest.raises(ValueError, match=r"^messages: simulated time ran past"):
        kicklab.map("wp=0.5s..1s:2", "wc=1us..2us:2", messages=10_000_000, client=client)
