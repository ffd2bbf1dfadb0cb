"""The issue's Dask benchmark: a regime map with the simulator on a
2-worker LocalCluster against one worker, and one process against the
CLI's rayon map of the same points. Ratios measured in one run; prints
them, asserts nothing (a benchmark, not a test).

    python python/bench/map_bench.py            # 200 x 200, 50 000 messages a point
    python python/bench/map_bench.py --side 40  # quicker

Each Dask worker is one process with one thread and RAYON_NUM_THREADS=1,
so a worker is one core: the 2-worker figure is what a second core (or a
second machine) adds. The CLI and the in-process call use every core
(rayon).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import tempfile
import time
from pathlib import Path

import pandas as pd

import kicklab

ROOT = Path(__file__).resolve().parents[2]


def timed(f):
    t0 = time.perf_counter()
    out = f()
    return time.perf_counter() - t0, out


def cluster_map(workers: int, kw: dict) -> tuple[float, pd.DataFrame]:
    import distributed

    with distributed.LocalCluster(
        n_workers=workers,
        threads_per_worker=1,
        processes=True,
        dashboard_address=None,
        env={"RAYON_NUM_THREADS": "1"},
    ) as cluster, distributed.Client(cluster) as client:
        # Warm the workers (import kicklab there) outside the timing.
        kicklab.map("wp=1us..2us:2", "wc=1us..2us:2", messages=1000, client=client)
        return timed(lambda: kicklab.map(client=client, chunks=8 * workers, **kw))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--side", type=int, default=200, help="grid side (default 200)")
    ap.add_argument("--messages", type=int, default=50_000, help="messages a point (default 50 000)")
    ap.add_argument("--bin", default=os.environ.get("KICKLAB_BIN", str(ROOT / "target/release/kicklab")))
    a = ap.parse_args()
    x, y = f"wp=0.1us..3us:{a.side}", f"wc=0.1us..3us:{a.side}"
    kw = {"x": x, "y": y, "messages": a.messages}
    print(f"map {a.side} x {a.side}, {a.messages} messages a point, {os.cpu_count()} cores")

    with tempfile.TemporaryDirectory() as d:
        cmd = [a.bin, "map", "--x", x, "--y", y, "--messages", str(a.messages), "--out", d]
        t_cli, _ = timed(lambda: subprocess.run(cmd, check=True, capture_output=True))
        cli_df = pd.read_csv(Path(d) / "map.csv")
    t_local, local = timed(lambda: kicklab.map(**kw))
    pd.testing.assert_frame_equal(local, cli_df, check_exact=True)
    t_one, one = cluster_map(1, kw)
    t_two, two = cluster_map(2, kw)
    pd.testing.assert_frame_equal(one, local, check_exact=True)
    pd.testing.assert_frame_equal(two, local, check_exact=True)

    print(f"CLI (rayon, all cores)       {t_cli:8.2f} s")
    print(f"kicklab.map, one process     {t_local:8.2f} s   {t_local / t_cli:.2f}x the CLI (target <= 1.2x)")
    print(f"LocalCluster, 1 worker       {t_one:8.2f} s")
    print(f"LocalCluster, 2 workers      {t_two:8.2f} s   speed-up {t_one / t_two:.2f}x over 1 worker (target >= 1.7x)")
    print("the three DataFrames are the CLI's map.csv, bit for bit")


if __name__ == "__main__":
    main()
