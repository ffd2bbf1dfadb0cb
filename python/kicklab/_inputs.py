"""Turning the package's Python values into the command line's text, and
refusing what the command line refuses, naming the keyword: durations
and timedeltas, whole numbers, text that must be UTF-8, paths, profiles,
the arrays of :func:`kicklab.model_array` and the memory they take. What
does not live here: the commands themselves (``__init__``), the Dask
helpers (``_dask``)."""

from __future__ import annotations

import datetime
import json
import numbers
import os
from typing import Any, Mapping, Optional, Tuple

import numpy as _np
import pandas as _pd

#: The pair's parameters, in the order L, k_P, k_C, W_P, W_C, N_P, N_C,
#: S_P, S_C, V_P, V_C.
PARAMS: Tuple[str, ...] = ("len", "kp", "kc", "wp", "wc", "np", "nc", "sp", "sc", "vp", "vc")

_COUNTS = frozenset(("len", "kp", "kc"))

# The largest profile file read.
_MAX_PROFILE_BYTES = 16 << 20


def _utf8(name: str, value: str) -> str:
    """``value`` where it is UTF-8 text (a lone surrogate such as
    ``"\\ud800"`` is not, and the Rust side takes only text)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as e:
        shown = value[:40].encode("utf-8", "backslashreplace").decode("ascii", "backslashreplace")
        raise ValueError(f"{name}: {shown!r} is not UTF-8 text ({e.reason})") from None
    return value


# Nanoseconds in one of each numpy timedelta64 unit with a fixed length
# (years and months have none).
_NS_PER_UNIT = {
    "W": 7 * 86_400 * 10**9,
    "D": 86_400 * 10**9,
    "h": 3_600 * 10**9,
    "m": 60 * 10**9,
    "s": 10**9,
    "ms": 10**6,
    "us": 10**3,
    "ns": 1,
    "ps": 1e-3,
    "fs": 1e-6,
    "as": 1e-9,
}


def _ns_per(name: str, dtype: Any) -> float:
    """Nanoseconds in one tick of a timedelta64 ``dtype``; years, months
    and the generic unit (a bare count) have no fixed length."""
    unit, count = _np.datetime_data(dtype)
    if unit not in _NS_PER_UNIT:
        raise ValueError(
            f"{name}: a timedelta64 in {unit!r} has no fixed length in nanoseconds; "
            "give weeks or shorter units"
        )
    return _NS_PER_UNIT[unit] * count


def _timedelta_ns(name: str, value: Any) -> float:
    """A ``datetime.timedelta`` or ``numpy.timedelta64`` in nanoseconds,
    exactly as long as it is (numpy's own conversion to ns wraps past 292
    years)."""
    if isinstance(value, _np.timedelta64):
        if _np.isnat(value):
            raise ValueError(f"{name}: NaT is not a duration")
        return float(int(value.astype(_np.int64)) * _ns_per(name, value.dtype))
    return float((value.days * 86_400 + value.seconds) * 10**9 + value.microseconds * 1_000)


def _duration_text(name: str, value: Any) -> str:
    """A duration or cost keyword as the command line's text (numbers are
    nanoseconds, written so that they parse back to the same float;
    ``datetime.timedelta`` and ``numpy.timedelta64`` by their length)."""
    if isinstance(value, str):
        return _utf8(name, value)
    if isinstance(value, (datetime.timedelta, _np.timedelta64)):
        return repr(_timedelta_ns(name, value))
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(
            f"{name}: expected a duration or cost as a string ('1.1us', 'exp:2us'), "
            f"a number of nanoseconds or a timedelta, got {type(value).__name__}"
        )
    try:
        return repr(float(value))
    except OverflowError:
        raise ValueError(f"{name}: {str(value)[:40]}... is too large a number of nanoseconds") from None


def _count_text(name: str, value: Any) -> str:
    """A whole-number keyword as text (the Rust side checks the range); a
    float with no fraction (``256.0``) is that whole number."""
    if isinstance(value, str):
        return _utf8(name, value)
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name}: expected a whole number, got {type(value).__name__}")
    if isinstance(value, numbers.Integral):
        return str(int(value))
    v = float(value)
    if not v.is_integer():
        raise ValueError(f"{name}: expected a whole number, got {v!r}")
    return str(int(v))


def _items(value: Any) -> Optional[list[Any]]:
    """A list of the items of any iterable but a string, bytes or a
    mapping (lists, tuples, numpy arrays, generators); ``None`` for
    anything else."""
    if isinstance(value, (str, bytes, Mapping)):
        return None
    try:
        return [v.item() if isinstance(v, _np.generic) and not isinstance(v, _np.timedelta64) else v for v in value]
    except TypeError:
        return None


def _text(name: str, value: Any) -> str:
    """A keyword that takes a string (a strategy, a range, a backend)."""
    if not isinstance(value, str):
        raise TypeError(f"{name}: expected a string, got {type(value).__name__}")
    return _utf8(name, value)


def _path(name: str, value: Any) -> str:
    """A keyword that names a file: a ``str`` or ``os.PathLike`` of text."""
    path = os.fspath(value) if isinstance(value, (str, os.PathLike)) else None
    if not isinstance(path, str):
        raise TypeError(f"{name}: expected a path (str or os.PathLike of str), got {type(value).__name__}")
    return _utf8(name, path)


def _optional_text(name: str, value: Any) -> Optional[str]:
    return None if value is None else _text(name, value)


def _flag(name: str, value: Any) -> bool:
    """A keyword that takes True or False (not any truthy value: ``"no"``
    is not False)."""
    if not isinstance(value, (bool, _np.bool_)):
        raise TypeError(f"{name}: expected True or False, got {type(value).__name__}")
    return bool(value)


_U64 = 2**64 - 1
_U32 = 2**32 - 1


def _whole(name: str, value: Any, high: int = _U64) -> int:
    """A whole-number argument such as ``messages`` or ``seed``, in
    ``0..=high`` (the command line's range for it)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name}: expected a whole number, got {type(value).__name__}")
    v = int(value)
    # The command line's words for the same values (kicklab_model::parse_whole).
    if v < 0:
        raise ValueError(
            f"{name}: invalid value '{v}': `{v}` is not a whole number (digits only, no sign, e.g. 256)"
        )
    if v > high:
        raise ValueError(f"{name}: invalid value '{v}': `{v}` is too large (at most {high})")
    return v


def _params(function: str, params: Mapping[str, Any]) -> dict[str, str]:
    """The pair's keyword arguments as text; ``None`` is left out (the
    default, or the profile's)."""
    out: dict[str, str] = {}
    for name, value in params.items():
        if name not in PARAMS:
            shown = str(name).encode("utf-8", "backslashreplace").decode("utf-8")
            raise TypeError(
                f"{function}() got an unexpected keyword argument '{shown}' "
                f"(the pair's parameters are {', '.join(PARAMS)})"
            )
        if value is None:
            continue
        out[name] = _count_text(name, value) if name in _COUNTS else _duration_text(name, value)
    return out


def _profile(profile: Any) -> tuple[str, str] | None:
    """A profile as (JSON text, where it came from) for the Rust side."""
    if profile is None:
        return None
    if isinstance(profile, Mapping):
        inner = profile.get("profile")
        data = inner if isinstance(inner, Mapping) else profile
        try:
            text = json.dumps(data, allow_nan=False)
        except (TypeError, ValueError, RecursionError) as e:
            raise ValueError(f"profile: the dict given is not a kicklab profile: {e}") from None
        if len(text) > _MAX_PROFILE_BYTES:
            raise ValueError("profile: the dict given is larger than 16 MiB (a profile is tens of KiB)")
        return text, "the dict given"
    if isinstance(profile, (str, os.PathLike)):
        path = os.fspath(profile)
        try:
            # A regular file, read up to a bound (as the command line does):
            # a FIFO would block for ever and /dev/zero never ends.
            if not os.path.isfile(path):
                raise OSError("not a regular file")
            with open(path, encoding="utf-8") as f:
                text = f.read(_MAX_PROFILE_BYTES + 1)
        except (OSError, UnicodeDecodeError) as e:
            shown = path if len(path) <= 80 else f"{path[:80]}... ({len(path)} characters)"
            raise ValueError(f"profile: cannot read {shown}: {e}") from None
        if len(text) > _MAX_PROFILE_BYTES:
            raise ValueError(
                f"profile: cannot read {path}: larger than 16 MiB (a profile is tens of KiB)"
            )
        return text, path
    raise TypeError(
        f"profile: expected a path or a dict (kicklab.calibrate()'s), got {type(profile).__name__}"
    )



def _array_values(name: str, value: Any) -> Any:
    """An array keyword of :func:`model_array` as float64 (ns for costs):
    real numbers, or timedeltas by their length; booleans, complex
    numbers, strings and masked arrays are refused rather than read as
    numbers."""
    if isinstance(value, _np.ma.MaskedArray):
        raise TypeError(f"{name}: a masked array; fill or drop the masked values first")
    try:
        a = _np.asarray(value)
    except (ValueError, TypeError, RuntimeError) as e:
        raise ValueError(f"{name}: not an array of numbers: {e}") from None
    if a.dtype.kind == "O" and a.size and all(isinstance(v, datetime.timedelta) for v in a.flat):
        return _np.array([_timedelta_ns(name, v) for v in a.flat], dtype=_np.float64).reshape(a.shape)
    if a.dtype.kind == "m":
        if _np.isnat(a).any():
            raise ValueError(f"{name}: NaT is not a duration")
        return a.astype(_np.int64).astype(_np.float64) * _ns_per(name, a.dtype)
    if a.dtype.kind not in "iuf":
        raise TypeError(
            f"{name}: arrays take real numbers (ns for costs) or timedeltas, got dtype {a.dtype}; "
            "give a distribution as a scalar string"
        )
    return a.astype(_np.float64, copy=False)


# Bytes a point of model_array holds at once, outputs and their copies:
# six result columns in Rust, as bytes and as numpy arrays (41 bytes each
# way), the regime names (32), the rate (8), with room to spare; and per
# array argument, its float64 values three times.
_BYTES_PER_POINT = 200
_BYTES_PER_ARRAY_POINT = 24


def _fits_in_memory(n: int, arrays: int) -> None:
    """Refuses a model_array of ``n`` points that would not fit in the
    memory the machine has available (Linux's MemAvailable; unchecked
    where it cannot be read): a MemoryError before the work, not the
    process killed in the middle of it."""
    need = n * (_BYTES_PER_POINT + _BYTES_PER_ARRAY_POINT * arrays)
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            avail = next(int(line.split()[1]) * 1024 for line in f if line.startswith("MemAvailable:"))
    except (OSError, StopIteration, ValueError, IndexError):
        return
    if need > avail:
        raise MemoryError(
            f"model_array: {n} points need about {need >> 20} MiB, and {avail >> 20} MiB "
            "of memory is available; compute them in slices"
        )


def _is_array(value: Any) -> bool:
    return isinstance(value, (_np.ndarray, _pd.Series, list, tuple))
