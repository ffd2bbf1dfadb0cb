"""Type stubs of ``kicklab._kicklab``, the Rust half of :mod:`kicklab`.

Not for direct use: :mod:`kicklab`'s functions convert arguments to the
text these take (durations and costs as the command line writes them) and
their results to dicts and DataFrames.
"""

from typing import Dict, List, Optional, Tuple

__version__: str
__all__: List[str]

#: A profile as (JSON text, where it came from, for error messages).
_Profile = Optional[Tuple[str, str]]

def model_json(params: Dict[str, str], mode: str, profile: _Profile = None) -> str:
    """``kicklab model --json``: the JSON object's text."""

def model_arrays(
    params: Dict[str, str],
    mode: str,
    arrays: Dict[str, bytes],
    n: int,
    nan_on_error: bool,
    profile: _Profile = None,
) -> Tuple[List[bytes], List[str]]:
    """The closed forms over ``n`` points: ``arrays`` holds ``n`` native
    float64 values per parameter. Returns the bytes of T, E, E_P, E_C, m
    (float64) and of the regime codes (uint8, 255: invalid), and the
    regime names by code."""

def sim_json(
    params: Dict[str, str],
    mode: str,
    mode_p: Optional[str],
    mode_c: Optional[str],
    latency: Optional[str],
    messages: int,
    warmup: Optional[int],
    seed: int,
    record_latency: bool,
    start: str,
    profile: _Profile = None,
) -> Tuple[str, List[str]]:
    """``kicklab sim --json``: the JSON object's text and the warnings."""

def sweep_csv(
    params: Dict[str, str],
    vary: str,
    mode: str,
    messages: int,
    seed: int,
    profile: _Profile = None,
) -> str:
    """``kicklab sweep``'s sweep.csv, as text."""

def sweep_len(vary: str) -> int:
    """The number of points of ``vary``."""

def sweep_chunk_csv(
    params: Dict[str, str],
    vary: str,
    mode: str,
    messages: int,
    seed: int,
    start: int,
    stop: int,
    header: bool,
    profile: _Profile = None,
) -> str:
    """Rows ``start..stop`` of :func:`sweep_csv` (with the header line when
    ``header``), computed on their own."""

def map_chunk_csv(
    params: Dict[str, str],
    x: str,
    y: str,
    mode: str,
    messages: int,
    seed: int,
    start: int,
    stop: int,
    header: bool,
    profile: _Profile = None,
) -> str:
    """Points ``start..stop`` of ``kicklab map``'s map.csv (with the header
    line when ``header``), computed on their own; ``messages`` 0: the model
    only."""

def vary_values(vary: str, keyword: str = "vary") -> Tuple[str, List[float], bool]:
    """``vary``'s parameter name, its values (ns or counts) and whether it
    is a count."""

def map_len(x: str, y: str) -> int:
    """The number of points of a map over ``x`` and ``y``."""

def advise_json(
    params: Dict[str, str],
    latency: str,
    messages: int,
    seed: int,
    exhaustive: bool,
    profile: _Profile = None,
    mechanisms: str = "all",
) -> str:
    """``kicklab advise --json``: the JSON object's text."""

def control_csv(
    params: Dict[str, str],
    range: str,
    points: int,
    workloads: List[str],
    messages: int,
    latency: str,
    seed: int,
    profile: _Profile = None,
) -> Tuple[str, bool]:
    """``kicklab control``'s control.csv as text, and whether every target
    held."""

def calibrate_json(
    backend: str,
    direction: str | None,
    halt_poll: str | None,
    guest: str | None,
    samples: int,
    gap: str,
    rounds: int,
    gaps: List[str],
    overhead_runs: int,
    reference_runs: int,
    save: Optional[str] = None,
) -> str:
    """``kicklab calibrate --json``: the JSON object's text."""

def run_json(
    params: Dict[str, str],
    backend: str,
    direction: str | None,
    halt_poll: str | None,
    guest: str | None,
    strategy: str,
    messages: int,
    seed: int,
    batch: int,
    profile: _Profile = None,
    strategy_p: Optional[str] = None,
    strategy_c: Optional[str] = None,
    latency: Optional[str] = None,
    flush: Optional[str] = None,
) -> Tuple[str, List[str]]:
    """``kicklab run --json``: the JSON object's text and the warnings."""
def unlocked_note() -> Optional[str]: ...
