"""kicklab from Python: the closed-form model, the exact event simulator,
sweeps, strategy advice, the control study and real runs of a
producer/consumer pair that synchronises with notifications.

Every function is the ``kicklab`` command of the same name, with the
command's flags as keyword arguments (``--mode-p`` is ``mode_p=``) and
the same defaults: the paper's Fig. 4 set-up, ``len=256, kp=1, kc=1,
wp="1us", wc="1.1us", np="2.4us", nc="0.2us", sp="3.9us", sc="0.2us"``.
Results are what the command's ``--json`` prints, as a dict, or what its
CSV holds, as a pandas DataFrame: the same fields and the same numbers,
to the last bit, for the same arguments and seed.

Parameters of the pair (keyword arguments of every function):

``len``, ``kp``, ``kc``
    Whole numbers: the queue's slots L, and the thresholds k_P, k_C.
``wp``, ``wc``, ``np``, ``nc``, ``sp``, ``sc``, ``vp``, ``vc``
    Costs W, N, S, V of P and C: a string as the command line takes it
    (``"1.1us"``, ``"250ns"``, ``"exp:2us"``, ``"uniform:0.8us,1.2us"``,
    ``"phases:0.5us@5000+3us@5000"``, ``"mix:0.01:1us+50us"``) or a
    number of nanoseconds.

Wait strategies (``mode=``, ``strategy=``) are strings as the command
line takes them: ``notify``, ``poll``, ``spin:5us``, ``sleep:20us``,
``halt-poll``, ``haltpoll``, ``hybrid``, ``defer``, ``coalesce:8,20us``,
``adaptive``, ... (``docs/control.md``).

Bad input raises ``ValueError`` naming the keyword, in the command
line's words (``kp (k_P): 300 must be between 1 and L = 256``); a failure
that is not the input's raises ``RuntimeError``.

Example::

    >>> import kicklab
    >>> kicklab.model(wp="2us")["regime"]
    'FC'
"""

from __future__ import annotations

import io
import json
import math
import os
import warnings
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Optional, Sequence, Tuple, TypedDict, Union

import numpy as _np
import pandas as _pd

from . import _kicklab
from ._inputs import (
    PARAMS,
    _U32,
    _array_values,
    _duration_text,
    _fits_in_memory,
    _flag,
    _is_array,
    _items,
    _optional_text,
    _params,
    _path,
    _profile,
    _text,
    _whole,
)

if TYPE_CHECKING:
    from typing_extensions import Unpack

__version__: str = _kicklab.__version__

__all__ = [
    "PARAMS",
    "KicklabWarning",
    "PairParams",
    "ArrayParams",
    "model",
    "model_array",
    "sim",
    "sweep",
    "map",
    "advise",
    "control",
    "calibrate",
    "run",
    "__version__",
]


#: A duration or a cost: a string the command line takes, or nanoseconds.
Duration = Union[str, float, int]

#: A whole number (or its text).
Count = Union[int, str]

#: A calibration profile: a path to ``kicklab calibrate --save``'s file, or
#: the dict :func:`calibrate` returns (or its ``"profile"`` entry).
ProfileLike = Union[str, "os.PathLike[str]", Mapping[str, Any], None]


class PairParams(TypedDict, total=False):
    """The pair's parameters as keyword arguments (all optional; defaults:
    the paper's Fig. 4 set-up)."""

    len: Count
    kp: Count
    kc: Count
    wp: Duration
    wc: Duration
    np: Duration
    nc: Duration
    sp: Duration
    sc: Duration
    vp: Duration
    vc: Duration


class ArrayParams(TypedDict, total=False):
    """The pair's parameters for :func:`model_array`: each a scalar as in
    :class:`PairParams` or an array of numbers (ns for costs)."""

    len: Any
    kp: Any
    kc: Any
    wp: Any
    wc: Any
    np: Any
    nc: Any
    sp: Any
    sc: Any
    vp: Any
    vc: Any


class KicklabWarning(UserWarning):
    """What the command line prints as ``warning:`` lines on stderr: a
    simulation over a partial round, a disturbed real run, real runs that
    could not take the CPU lock (``TMPDIR`` unusable)."""


def _warn(lines: Iterable[str]) -> None:
    for line in lines:
        warnings.warn(line, KicklabWarning, stacklevel=3)


def _say_unlocked() -> None:
    """Once per process, after real runs: the CPU lock's file could not be
    used (``TMPDIR`` missing, read-only or full), so a kicklab run started
    beside this one will not wait for it."""
    note = _kicklab.unlocked_note()
    if note:
        warnings.warn(note, KicklabWarning, stacklevel=3)


# --- the commands ---------------------------------------------------------


def model(
    mode: str = "notify", profile: ProfileLike = None, **params: Unpack[PairParams]
) -> dict[str, Any]:
    """The closed forms: ``kicklab model --json``.

    Parameters
    ----------
    mode:
        ``"notify"`` (sleep and be woken) or ``"poll"`` (spin: regime GP);
        other strategies have no closed form (use :func:`sim`).
    profile:
        A calibration profile (:func:`calibrate`'s dict or a saved file):
        its N, S and V replace the defaults and its ring cost per message
        is added to W, as ``--profile`` does. Keywords given still win.
    **params:
        The pair (:data:`PARAMS`). Costs that are distributions enter by
        their means. Given any as arrays (numpy, pandas, lists), this is
        :func:`model_array`.

    Returns
    -------
    dict
        ``regime``, ``T_ns``, ``E_ns``, ``E_p_ns``, ``E_c_ns``, ``m``,
        ``round_messages``, ``round_ns``, the counts over one round
        (``messages``, ``notifications_p``, ...), ``predicates``,
        ``throughput_per_s``, ``mode``, ``params`` (and ``other``, a
        bistable pair's other operating point; with a ``profile``, at an FC
        or FP point, ``race``: the point with the batch race drawn, as
        ``kicklab model --profile F --json`` has it).

    Examples
    --------
    >>> p = kicklab.model(wp="2us")
    >>> p["regime"], p["T_ns"]
    ('FC', 4400.0)
    """
    if any(_is_array(v) for v in params.values()):
        return model_array(mode=mode, profile=profile, **params)
    text = _kicklab.model_json(_params("model", params), _text("mode", mode), _profile(profile))
    result: dict[str, Any] = json.loads(text)
    return result


def model_array(
    mode: str = "notify",
    profile: ProfileLike = None,
    errors: str = "raise",
    **params: Unpack[ArrayParams],
) -> dict[str, Any]:
    """The closed forms over arrays of parameters, vectorised: the model at
    every point of the broadcast of the array arguments (numpy rules).

    Parameters
    ----------
    mode:
        ``"notify"`` or ``"poll"``.
    profile:
        As for :func:`model`.
    errors:
        ``"raise"``: a point whose parameters make no pair raises
        ``ValueError`` naming the parameter and the point's flat index;
        ``"nan"``: that point is NaN in every array and ``""`` in
        ``regime``.
    **params:
        The pair: arrays of numbers (costs in ns; ``len``, ``kp``, ``kc``
        whole numbers) broadcast together, and scalars as for
        :func:`model` (strings too, a distribution by its mean).

    Returns
    -------
    dict of numpy arrays, all of the broadcast shape
        ``T_ns``, ``E_ns``, ``E_p_ns``, ``E_c_ns``, ``throughput_per_s``
        and ``m`` (float64, ``m`` NaN where the regime defines none), and
        ``regime`` (strings).

    The loop runs in Rust without the GIL: a million points take a fraction
    of a second.

    Examples
    --------
    >>> r = kicklab.model_array(wp=np.linspace(100, 3000, 5))
    >>> r["regime"]
    array(['FP', 'FP', 'FC', 'FC', 'FC'], dtype='<U8')
    """
    if errors not in ("raise", "nan"):
        raise ValueError(f"errors: invalid value '{errors}': use 'raise' or 'nan'")
    scalars: dict[str, Any] = {}
    arrays: dict[str, Any] = {}
    for name, value in params.items():
        if _is_array(value):
            if name not in PARAMS:
                _params("model_array", {name: value})
            arrays[name] = _array_values(name, value)
        else:
            scalars[name] = value
    try:
        shape = _np.broadcast_shapes(*(a.shape for a in arrays.values()))
    except (ValueError, RuntimeError) as e:
        shapes = ", ".join(f"{k} {a.shape}" for k, a in arrays.items())
        names = ", ".join(arrays)
        raise ValueError(f"{names}: the arrays do not broadcast together ({shapes}): {e}") from None
    n = math.prod(shape)
    _fits_in_memory(n, len(arrays))
    flat = {
        k: _np.ascontiguousarray(_np.broadcast_to(a, shape), dtype=_np.float64).tobytes()
        for k, a in arrays.items()
    }
    columns, names = _kicklab.model_arrays(
        _params("model_array", scalars), _text("mode", mode), flat, n, errors == "nan", _profile(profile)
    )

    def f64(b: bytes) -> Any:
        return _np.frombuffer(b, dtype=_np.float64).reshape(shape).copy()

    t = f64(columns[0])
    lut = _np.full(256, "", dtype="<U8")
    lut[: len(names)] = names
    codes = _np.frombuffer(columns[5], dtype=_np.uint8).reshape(shape)
    with _np.errstate(divide="ignore", invalid="ignore"):
        # No rate where T is 0 (as model()'s None).
        throughput = _np.where(t > 0, 1e9 / t, _np.nan)
    return {
        "regime": lut[codes],
        "T_ns": t,
        "E_ns": f64(columns[1]),
        "E_p_ns": f64(columns[2]),
        "E_c_ns": f64(columns[3]),
        "m": f64(columns[4]),
        "throughput_per_s": throughput,
    }


def sim(
    mode: str = "notify",
    mode_p: str | None = None,
    mode_c: str | None = None,
    messages: int = 1_000_000,
    seed: int = 1,
    latency: Duration | None = None,
    warmup: int | None = None,
    record_latency: bool = True,
    start: str = "empty",
    profile: ProfileLike = None,
    **params: Unpack[PairParams],
) -> dict[str, Any]:
    """One simulation run: ``kicklab sim --json``.

    Parameters
    ----------
    mode:
        How both parties wait (any strategy).
    mode_p, mode_c:
        How P (C) waits, overriding ``mode`` for that party.
    messages:
        Messages measured after the warm-up.
    seed:
        Seed of the random cost streams (one stream per cost).
    latency:
        Bound on the p99 message latency that ``adaptive`` keeps unless
        its mode gives one (default 100us).
    warmup:
        Messages consumed before measuring (default ``messages // 10 + 4 * len``).
    record_latency:
        Record per-message latency (``False`` is ``--no-latency``: faster).
    start:
        ``"empty"`` (the model's start) or ``"full"`` (a full queue, P
        asleep).
    profile:
        A calibration profile: its N, S, V with their measured spread, its
        ring cost added to W, start-ups scaled by idle time.
    **params:
        The pair (:data:`PARAMS`); costs may be distributions.

    Returns
    -------
    dict
        ``T_ns``, ``E_ns``, ``E_p_ns``, ``E_c_ns``, ``messages``,
        ``notifications_p``/``_c``, ``sleeps_p``/``_c``, ``latency_ns``
        (``p50``, ``p99``, ``max``, ``mean``), ``window``, ``events``,
        ``sim_time_ns``, ``totals``, ``mode_p``, ``mode_c``, ``seed``,
        ``start`` and ``predicted`` (the model's point, or ``None``).
        A run over a partial round warns (:class:`KicklabWarning`).
    """
    text, notes = _kicklab.sim_json(
        _params("sim", params),
        _text("mode", mode),
        _optional_text("mode_p", mode_p),
        _optional_text("mode_c", mode_c),
        None if latency is None else _duration_text("latency", latency),
        _whole("messages", messages),
        None if warmup is None else _whole("warmup", warmup),
        _whole("seed", seed),
        _flag("record_latency", record_latency),
        _text("start", start),
        _profile(profile),
    )
    _warn(notes)
    result: dict[str, Any] = json.loads(text)
    return result


def _chunks(client: Any, chunks: Any) -> None:
    """Refuses ``chunks`` without a ``client`` (it would be ignored); the
    count itself is checked where the work is split."""
    if chunks is not None and client is None:
        raise ValueError("chunks: splits the work over a dask client's workers; give client= too")
    if client is not None and not all(hasattr(client, a) for a in ("submit", "gather", "nthreads")):
        raise TypeError(
            f"client: expected a dask.distributed.Client, got {type(client).__name__}"
        )


def _frame(csv: str) -> _pd.DataFrame:
    """A CSV text as the DataFrame ``pandas.read_csv`` makes of the file."""
    return _pd.read_csv(io.StringIO(csv))


def sweep(
    vary: str = "wp=0.1us..3us:100",
    mode: str = "notify",
    messages: int = 50_000,
    seed: int = 1,
    profile: ProfileLike = None,
    client: Any = None,
    chunks: int | None = None,
    **params: Unpack[PairParams],
) -> _pd.DataFrame:
    """Vary one parameter; model and simulator at every point:
    ``kicklab sweep``'s ``sweep.csv`` as a DataFrame.

    Parameters
    ----------
    vary:
        ``NAME=FROM..TO:POINTS``, NAME one of len, kp, kc, wp, wc, np, nc,
        sp, sc (``"wp=0.1us..3us:100"``, ``"kc=1..64:64"``).
    mode:
        How both parties wait (polling is always run alongside).
    messages:
        Messages simulated per point (after the warm-up).
    seed:
        Seed of the random cost streams.
    profile:
        A calibration profile: its N, S, V (means) where not given.
    client:
        A ``dask.distributed.Client``: the points are split into chunks
        computed on its workers (which need ``kicklab`` installed); the
        result is the local run's, to the bit, for the same arguments and
        seed. Every input is checked before anything is submitted.
    chunks:
        With ``client``: how many chunks (default: twice the workers'
        threads; at most one per point).
    **params:
        The pair (:data:`PARAMS`).

    Returns
    -------
    pandas.DataFrame
        One row per point: the swept value (column named after it, ns for
        durations), ``regime``, ``m``, ``T_model``, ``E_model``,
        ``T_sim``, ``E_sim``, ``T_gp``, ``E_gp``, ``T_sim_poll``,
        ``E_sim_poll``, ``T_ss_formula``, ``E_ss_formula``, ``T_ss_best``,
        ``E_ss_best``, ``notifications_p``, ``notifications_c``,
        ``sim_messages``, ``latency_p50``, ``latency_p99``: equal to
        ``pandas.read_csv("sweep.csv")`` of ``kicklab sweep`` with the same
        arguments.

    Examples
    --------
    >>> df = kicklab.sweep("wp=0.1us..3us:30", messages=20_000)
    >>> df.plot(x="wp", y=["T_model", "T_sim"])  # doctest: +SKIP
    """
    args = _params("sweep", params)
    vary, mode = _text("vary", vary), _text("mode", mode)
    messages = _whole("messages", messages)
    seed = _whole("seed", seed)
    prof = _profile(profile)
    _chunks(client, chunks)
    if client is None:
        return _frame(_kicklab.sweep_csv(args, vary, mode, messages, seed, prof))
    from ._dask import sweep_csv_on

    return _frame(sweep_csv_on(client, chunks, args, vary, mode, messages, seed, prof))


# The most points a map takes, its layers together (``kicklab map``'s),
# and the most layers (each is a map of its own, computed in turn).
_MAX_MAP_POINTS = 1_000_000
_MAX_MAP_LAYERS = 1000


def map(
    x: str = "wp=0.1us..3us:60",
    y: str = "wc=0.1us..3us:60",
    z: str | None = None,
    mode: str = "notify",
    messages: int = 20_000,
    seed: int = 1,
    profile: ProfileLike = None,
    client: Any = None,
    chunks: int | None = None,
    **params: Unpack[PairParams],
) -> _pd.DataFrame:
    """A regime map: the regime, T and E over a grid of two parameters,
    the closed forms beside the simulator: ``kicklab map``'s ``map.csv`` as
    a DataFrame.

    Parameters
    ----------
    x, y:
        The grid's columns and rows, ``NAME=FROM..TO:POINTS`` as in
        :func:`sweep` (two different parameters).
    z:
        A third parameter, ``NAME=FROM..TO:POINTS``, for a 3-D grid: one
        map per value, stacked, with a first column named after it (the
        value in ns, or the count). ``None``: a 2-D map. At most 1000
        layers and a million points in all.
    mode:
        How both parties wait.
    messages:
        Messages simulated per point; 0: the model only (no ``T_sim_ns``).
    seed:
        Seed of the random cost streams.
    profile:
        A calibration profile: its N, S, V (means) where not given.
    client:
        A ``dask.distributed.Client``: the grid is split into chunks of
        rows computed on its workers (which need ``kicklab`` installed);
        the result is the local run's, to the bit, for the same arguments
        and seed.
    chunks:
        With ``client``: how many chunks (default: four per worker thread;
        at most one per point).
    **params:
        The pair (:data:`PARAMS`).

    Returns
    -------
    pandas.DataFrame
        One row per point, ``y`` outer and ``x`` inner: the two varied
        values (columns named after them, ns for durations), ``regime``,
        ``T_model_ns``, ``E_model_ns``, ``T_sim_ns``, ``E_sim_ns``: equal
        to ``pandas.read_csv("map.csv")`` of ``kicklab map`` with the same
        arguments.

    Examples
    --------
    >>> df = kicklab.map("wp=0.5us..3us:6", "wc=0.5us..3us:6", messages=5_000)
    >>> df.pivot(index="wc", columns="wp", values="regime")  # doctest: +SKIP
    """
    x, y, mode = _text("x", x), _text("y", y), _text("mode", mode)
    messages = _whole("messages", messages)
    seed = _whole("seed", seed)
    prof = _profile(profile)
    _chunks(client, chunks)
    if z is None:
        args = _params("map", params)
        if client is None:
            points = _kicklab.map_len(x, y)
            return _frame(_kicklab.map_chunk_csv(args, x, y, mode, messages, seed, 0, points, True, prof))
        from ._dask import map_csv_on

        return _frame(map_csv_on(client, chunks, args, x, y, mode, messages, seed, prof))
    name, values, is_count = _kicklab.vary_values(_text("z", z), "z")
    if name in (_kicklab.vary_values(x, "x")[0], _kicklab.vary_values(y, "y")[0]):
        raise ValueError("z: vary another parameter than x and y")
    if len(values) > _MAX_MAP_LAYERS:
        raise ValueError(f"z: {len(values)} layers: at most {_MAX_MAP_LAYERS} (a map each)")
    total = len(values) * _kicklab.map_len(x, y)
    if total > _MAX_MAP_POINTS:
        raise ValueError(
            f"z: {len(values)} layers of {_kicklab.map_len(x, y)} points are {total}: "
            f"at most {_MAX_MAP_POINTS} in a map"
        )
    if params.get(name) is not None:
        raise ValueError(f"z: varies {name}, also given as {name}=")
    layers = [_params("map", {**params, name: int(v) if is_count else v}) for v in values]
    # Every layer's pair checked first (no point computed), a refusal named
    # as the layer's, as sweep names its point: `z: at vp=3us: ...`.
    for v, a in zip(values, layers):
        try:
            _kicklab.map_chunk_csv(a, x, y, mode, messages, seed, 0, 0, True, prof)
        except ValueError as e:
            raise ValueError(f"z: at {name}={int(v) if is_count else v}: {e}") from None
    if client is None:
        points = _kicklab.map_len(x, y)
        texts = [_kicklab.map_chunk_csv(a, x, y, mode, messages, seed, 0, points, True, prof) for a in layers]
    else:
        from ._dask import map_layers_on

        texts = map_layers_on(client, chunks, layers, x, y, mode, messages, seed, prof)
    frames = []
    for v, text in zip(values, texts):
        f = _frame(text)
        f.insert(0, name, int(v) if is_count else v)
        frames.append(f)
    return _pd.concat(frames, ignore_index=True)


def advise(
    latency: Duration = "100us",
    messages: int = 200_000,
    seed: int = 1,
    exhaustive: bool = False,
    profile: ProfileLike = None,
    mechanisms: str = "all",
    **params: Unpack[PairParams],
) -> dict[str, Any]:
    """The wait strategy to use for a pair and a workload, searched with the
    simulator: ``kicklab advise --json``.

    Parameters
    ----------
    latency:
        Bound on the p99 message latency (publish to end of consumption).
    messages:
        Messages simulated per candidate.
    seed:
        Seed of the random cost streams.
    exhaustive:
        Search every family over a fine grid (slower).
    profile:
        A calibration profile (as for :func:`sim`).
    mechanisms:
        The real mechanisms to give settings for (``advise --for``):
        ``kvm-host``, ``guest``, ``napi``, ``vhost``, ``qemu``,
        ``virtio-net``, ``io-uring`` separated by commas, ``all`` or
        ``none``.
    **params:
        The pair and its workload (W_P, W_C may be distributions).

    Returns
    -------
    dict
        ``strategy`` (a ``mode=`` string), ``predicted`` (its ``T_ns``,
        ``E_ns``, ``latency_p99_ns``), ``reason``, ``alternatives`` (every
        candidate, best first), ``knobs`` (per mechanism: its best
        ``settings``, ``predicted``, ``commands``, ``default`` and
        ``alternatives``).
    """
    text = _kicklab.advise_json(
        _params("advise", params),
        _duration_text("latency", latency),
        _whole("messages", messages),
        _whole("seed", seed),
        _flag("exhaustive", exhaustive),
        _profile(profile),
        _text("mechanisms", mechanisms),
    )
    result: dict[str, Any] = json.loads(text)
    return result


def control(
    range: str | Tuple[Duration, Duration] = "0.2us..3us",
    points: int = 15,
    workloads: str | Sequence[str] = ("const", "exp", "phases"),
    messages: int = 200_000,
    latency: Duration = "100us",
    seed: int = 1,
    profile: ProfileLike = None,
    **params: Unpack[PairParams],
) -> _pd.DataFrame:
    """Every wait strategy against polling over the Fig. 4 sweep, simulated
    (the paper's Fig. 5, extended): ``kicklab control``'s ``control.csv``
    as a DataFrame.

    Parameters
    ----------
    range:
        W_P from..to: ``"0.2us..3us"`` or a pair ``("0.2us", 3000)``.
    points:
        Points of the sweep.
    workloads:
        Any of ``const`` (the paper's), ``exp`` (exponential W_P and W_C),
        ``phases`` (W_P 0.5us <-> 3us every 5000 messages), ``mix`` (one
        message in 100 takes 50x longer), as a list or comma-separated.
    messages:
        Messages per run (after the warm-up).
    latency:
        Bound on the p99 message latency that ``adaptive`` keeps.
    seed:
        Seed of the random cost streams.
    profile:
        A calibration profile: its N, S, V (means) where not given.
    **params:
        The pair's L, k, N, S (W comes from the workload; W_C's mean is
        the consumer's).

    Returns
    -------
    pandas.DataFrame
        One row per workload, W_P and strategy: ``workload``, ``w_p_ns``,
        ``w_c_ns``, ``strategy``, ``T_ns``, ``E_ns``, ``excess_ns``,
        ``latency_p50_ns``, ``latency_p99_ns``, ``latency_max_ns``,
        ``kicks_per_message``, ``wakeups_per_message``,
        ``settle_messages``. ``df.attrs["passed"]`` says whether every
        target of the study held.
    """
    if isinstance(range, str):
        range_text = _text("range", range)
    else:
        pair = _items(range)
        if pair is None or len(pair) != 2:
            raise TypeError(
                f"range: expected 'FROM..TO' or a pair (from, to), got {type(range).__name__}"
                + ("" if pair is None else f" of {len(pair)}")
            )
        lo, hi = pair
        range_text = f"{_duration_text('range', lo)}..{_duration_text('range', hi)}"
    if isinstance(workloads, str):
        names = workloads.split(",")
    else:
        items = _items(workloads)
        if items is None or not all(isinstance(w, str) for w in items):
            raise TypeError("workloads: expected a comma-separated string or a list of strings")
        names = items
    csv, passed = _kicklab.control_csv(
        _params("control", params),
        range_text,
        _whole("points", points, _U32),
        [_text("workloads", w).strip() for w in names],
        _whole("messages", messages),
        _duration_text("latency", latency),
        _whole("seed", seed),
        _profile(profile),
    )
    df = _frame(csv)
    df.attrs["passed"] = passed
    return df


_DEFAULT_GAPS = ("5us", "10us", "20us", "50us", "100us", "200us", "500us")


def calibrate(
    backend: str = "futex",
    samples: int = 400,
    gap: Duration = "50us",
    rounds: int = 6,
    gaps: str | Sequence[Duration] | None = _DEFAULT_GAPS,
    overhead_runs: int = 5,
    reference_runs: int = 3,
    save: str | os.PathLike[str] | None = None,
    direction: Optional[str] = None,
    halt_poll: Optional[Duration] = None,
    guest: Optional[str] = None,
) -> dict[str, Any]:
    """Measure this machine's notification costs N and start-up costs S for a
    backend: ``kicklab calibrate --json``. Runs real threads (or a KVM
    guest) for seconds; the result is a profile for ``profile=``.

    Parameters
    ----------
    backend:
        ``futex``, ``eventfd``, ``pipe`` (two host threads with that
        notifier) or ``kvm`` (one party in a tiny KVM guest).
    samples:
        Notifications per direction per round (10 to 1 000 000).
    gap:
        How long the woken party idles before each notification.
    rounds:
        Most rounds before giving up on stable medians (within 5%).
    gaps:
        The idle gaps of the idle curve (one round each); ``None``,
        ``()`` or ``"none"`` for none.
    overhead_runs:
        Runs of a polling pair with no work, for the ring's cost per
        message (0: not measured).
    reference_runs:
        Runs of the two reference pairs that time N and the wake-up inside
        runs (0: none; the command line always does 3).
    save:
        Write the profile (JSON) here, as ``--save`` does.
    direction, halt_poll, guest:
        kvm only (refused with another backend, as the command line
        refuses ``--direction``): which side the guest is (``tx``, the
        default: it produces), host halt polling (default 0: off),
        ``user`` (the default) or ``emulated`` guest.

    Returns
    -------
    dict
        ``backend``, ``NP_ns``, ``NC_ns``, ``SP_ns``, ``SC_ns``, ``VP_ns``,
        ``VC_ns``, ``overhead_ns``, ``idle_curve``, ``stable``, ... and
        ``profile`` (the whole profile, what ``profile=`` takes).
    """
    if gaps is None or (isinstance(gaps, str) and gaps.strip() == "none"):
        gap_list: list[str] = []
    elif isinstance(gaps, str):
        gap_list = [g.strip() for g in _text("gaps", gaps).split(",")]
    else:
        items = _items(gaps)
        if items is None:
            raise TypeError(
                f"gaps: expected a comma-separated string or a list of durations, got {type(gaps).__name__}"
            )
        gap_list = [_duration_text("gaps", g) for g in items]
    text = _kicklab.calibrate_json(
        _text("backend", backend),
        None if direction is None else _text("direction", direction),
        None if halt_poll is None else _duration_text("halt_poll", halt_poll),
        None if guest is None else _text("guest", guest),
        _whole("samples", samples),
        _duration_text("gap", gap),
        _whole("rounds", rounds),
        gap_list,
        _whole("overhead_runs", overhead_runs, _U32),
        _whole("reference_runs", reference_runs, _U32),
        None if save is None else _path("save", save),
    )
    _say_unlocked()
    result: dict[str, Any] = json.loads(text)
    return result


def run(
    backend: str = "futex",
    strategy: str = "notify",
    messages: int = 200_000,
    seed: int = 1,
    batch: int = 1,
    profile: ProfileLike = None,
    direction: Optional[str] = None,
    halt_poll: Optional[Duration] = None,
    guest: Optional[str] = None,
    strategy_p: Optional[str] = None,
    strategy_c: Optional[str] = None,
    latency: Optional[Duration] = None,
    flush: str = "full",
    **params: Unpack[PairParams],
) -> dict[str, Any]:
    """Run the pair for real: two pinned threads (or a thread and a KVM guest)
    over a shared-memory ring: ``kicklab run --json``.

    Parameters
    ----------
    backend:
        ``futex``, ``eventfd``, ``pipe`` or ``kvm`` (as :func:`calibrate`).
    strategy:
        How both threads wait, any strategy :func:`sim` takes (``notify``,
        ``poll``, ``spin:5us``, ``sleep:20us``, ``halt-poll``, ``adaptive``,
        ...); a KVM guest waits by notify, poll and spin in its own code
        and by the others through its VMM (an exit per wait), so its side
        takes any but ``coalesce``.
    strategy_p, strategy_c:
        One party's strategy, over ``strategy``.
    latency:
        The p99 latency bound an ``adaptive`` without one keeps (100us).
    messages:
        Messages measured (after a warm-up of a tenth as many).
    seed:
        Seed for random W_P / W_C.
    batch:
        Send combining: the producer publishes (and kicks at most once)
        every ``batch`` messages (1 to L), or sooner when the ring fills or
        by ``flush``. With kvm the guest combines in tx, the host in rx.
    flush:
        When a partial batch goes out as well: ``full``, ``timer:20us``
        (once the first held message is that old) or ``on-interrupt``
        (also when the consumer's kick wakes the producer).
    profile:
        The backend's calibration profile (:func:`calibrate`'s dict or a
        saved file), for the prediction; without one the backend is
        calibrated quickly first (seconds).
    direction, halt_poll, guest:
        kvm only, as for :func:`calibrate`.
    **params:
        The pair: L, k and W (the work the threads spin; may be
        distributions); N, S and V are the machine's.

    Returns
    -------
    dict
        The measured ``T_ns``, ``E_ns``, counts, ``lost``,
        ``duplicated_or_reordered``, ``pinned``, CPUs, ``warnings`` and
        ``disturbed``, ``backend``, ``strategy`` (None where ``strategy_p``
        and ``strategy_c`` both replace it and differ), ``strategy_p``,
        ``strategy_c``, ``batch``, ``flush``, ``latency_ns`` (from each
        message's write; threads, and kvm tx), ``predicted``
        (the model with the profile's costs, or the simulator where there is
        no closed form: ``predicted["source"]``) and ``profile``. A disturbed run also warns (:class:`KicklabWarning`).
    """
    text, notes = _kicklab.run_json(
        _params("run", params),
        _text("backend", backend),
        None if direction is None else _text("direction", direction),
        None if halt_poll is None else _duration_text("halt_poll", halt_poll),
        None if guest is None else _text("guest", guest),
        _text("strategy", strategy),
        _whole("messages", messages),
        _whole("seed", seed),
        _whole("batch", batch, _U32),
        _profile(profile),
        _optional_text("strategy_p", strategy_p),
        _optional_text("strategy_c", strategy_c),
        None if latency is None else _duration_text("latency", latency),
        _text("flush", flush),
    )
    if notes:
        notes.append("this measurement is disturbed: its numbers are not the pair's alone")
    _warn(notes)
    _say_unlocked()
    result: dict[str, Any] = json.loads(text)
    return result
