"""Ctrl-C during a long simulation: a KeyboardInterrupt within moments,
and the next call runs to its end. In a child interpreter, so that the
signal cannot reach pytest itself."""

from __future__ import annotations

import subprocess
import sys

CHILD = r"""
import os, signal, sys, threading, time, warnings
import kicklab
warnings.simplefilter("ignore")
# A process started in the background by a shell without job control (as
# CI's steps may be) inherits SIGINT ignored, and Python then installs no
# handler for it: install Python's own.
signal.signal(signal.SIGINT, signal.default_int_handler)
sent = []
def interrupt():
    sent.append(time.monotonic())
    os.kill(os.getpid(), signal.SIGINT)
threading.Timer(1.0, interrupt).start()
try:
    eval(sys.argv[1])  # hours of simulation
    print("finished")
except KeyboardInterrupt:
    print(f"interrupted after {time.monotonic() - sent[0]:.3f}")
print("next", kicklab.sim(messages=2000)["messages"] > 0)
"""


def test_ctrl_c_stops_a_long_simulation_and_the_next_call_runs():
    for call in (
        "kicklab.sim(messages=5_000_000_000)",
        'kicklab.sweep("wp=0.1us..3us:4", messages=400_000_000)',
        "kicklab.control(points=10, messages=2_000_000)",
    ):
        out = subprocess.run(
            [sys.executable, "-c", CHILD, call], capture_output=True, text=True, timeout=120
        )
        # (The child's exit status is left out: an interpreter that has
        # caught a SIGINT from a timer thread may end by it, kicklab loaded
        # or not.)
        lines = out.stdout.split("\n")
        assert lines[0].startswith("interrupted after "), (call, out.stdout, out.stderr)
        assert float(lines[0].split()[-1]) < 2.0, (call, lines[0])
        assert lines[1] == "next True", (call, out.stdout)
