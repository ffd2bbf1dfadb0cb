"""Sweeps spread over a ``dask.distributed`` cluster.

The points of a sweep are independent: each is simulated with the sweep's
seed and its own parameters alone, so a chunk of points computed on a
worker is exactly what the whole sweep computes on those rows
(``_kicklab.sweep_chunk_csv``), and the chunks' CSV rows, in order, make
the whole sweep's CSV text. Every input is checked here, before anything is
submitted.
"""

from __future__ import annotations

import numbers
from typing import Any

from . import _kicklab


def chunk_rows(
    args: dict[str, str],
    vary: str,
    mode: str,
    messages: int,
    seed: int,
    profile: tuple[str, str] | None,
    start: int,
    stop: int,
) -> str:
    """Rows ``start..stop`` of the sweep's CSV, without the header (what a
    worker runs)."""
    return _kicklab.sweep_chunk_csv(args, vary, mode, messages, seed, start, stop, False, profile)


def bounds(points: int, chunks: int) -> list[tuple[int, int]]:
    """``points`` split into ``chunks`` contiguous ranges of nearly equal
    size (none empty)."""
    chunks = max(1, min(chunks, points))
    return [(points * i // chunks, points * (i + 1) // chunks) for i in range(chunks)]


def gather_csv(client: Any, chunks: int | None, per_thread: int, header: str, points: int, rows: Any, *args: Any) -> str:
    """``header`` and the rows of ``points`` points computed in chunks on
    ``client``'s workers: ``rows(*args, start, stop)`` for each chunk, in
    order. ``chunks`` None: ``per_thread`` per worker thread."""
    if chunks is None:
        threads = sum(client.nthreads().values()) or 1
        chunks = per_thread * threads
    elif isinstance(chunks, bool) or not isinstance(chunks, numbers.Integral):
        raise TypeError(f"chunks: expected a whole number, got {type(chunks).__name__}")
    elif chunks < 1:
        raise ValueError(f"chunks: invalid value '{chunks}': need a whole number >= 1")
    chunks = int(chunks)
    futures = [client.submit(rows, *args, a, b, pure=False) for a, b in bounds(points, chunks)]
    parts: list[str] = client.gather(futures)
    return header + "".join(parts)


def sweep_csv_on(
    client: Any,
    chunks: int | None,
    args: dict[str, str],
    vary: str,
    mode: str,
    messages: int,
    seed: int,
    profile: tuple[str, str] | None,
) -> str:
    """The sweep's CSV text, its points computed in chunks on ``client``'s
    workers."""
    # Checks every input and every point, and gives the header line.
    header = _kicklab.sweep_chunk_csv(args, vary, mode, messages, seed, 0, 0, True, profile)
    points = _kicklab.sweep_len(vary)
    return gather_csv(client, chunks, 2, header, points, chunk_rows, args, vary, mode, messages, seed, profile)


def map_rows(
    args: dict[str, str],
    x: str,
    y: str,
    mode: str,
    messages: int,
    seed: int,
    profile: tuple[str, str] | None,
    start: int,
    stop: int,
) -> str:
    """Points ``start..stop`` of the map's CSV, without the header (what a
    worker runs)."""
    return _kicklab.map_chunk_csv(args, x, y, mode, messages, seed, start, stop, False, profile)


def map_csv_on(
    client: Any,
    chunks: int | None,
    args: dict[str, str],
    x: str,
    y: str,
    mode: str,
    messages: int,
    seed: int,
    profile: tuple[str, str] | None,
) -> str:
    """The map's CSV text, its points computed in chunks on ``client``'s
    workers."""
    # Checks every input and every point (an empty chunk), and gives the
    # header line.
    header = _kicklab.map_chunk_csv(args, x, y, mode, messages, seed, 0, 0, True, profile)
    points = _kicklab.map_len(x, y)
    return gather_csv(client, chunks, 4, header, points, map_rows, args, x, y, mode, messages, seed, profile)


def map_layers_on(
    client: Any,
    chunks: int | None,
    layers: list[dict[str, str]],
    x: str,
    y: str,
    mode: str,
    messages: int,
    seed: int,
    profile: tuple[str, str] | None,
) -> list[str]:
    """A 3-D map: the CSV text of the map of each parameter set in
    ``layers``, every layer's points computed in chunks on ``client``'s
    workers, all submitted before any is gathered."""
    points = _kicklab.map_len(x, y)
    # Checks every layer's inputs and points, and gives their header lines.
    headers = [_kicklab.map_chunk_csv(a, x, y, mode, messages, seed, 0, 0, True, profile) for a in layers]
    if chunks is None:
        threads = sum(client.nthreads().values()) or 1
        chunks = max(1, 4 * threads // len(layers))
    elif isinstance(chunks, bool) or not isinstance(chunks, numbers.Integral):
        raise TypeError(f"chunks: expected a whole number, got {type(chunks).__name__}")
    elif chunks < 1:
        raise ValueError(f"chunks: invalid value '{chunks}': need a whole number >= 1")
    chunks = int(chunks)
    futures = [
        [client.submit(map_rows, a, x, y, mode, messages, seed, profile, s, e, pure=False) for s, e in bounds(points, chunks)]
        for a in layers
    ]
    gathered: list[list[str]] = client.gather(futures)
    return [h + "".join(rows) for h, rows in zip(headers, gathered)]
