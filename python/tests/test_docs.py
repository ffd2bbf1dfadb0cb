"""The examples in the package's docstrings run and print what they say."""

from __future__ import annotations

import doctest

import numpy as np

import kicklab


def test_docstring_examples():
    r = doctest.testmod(kicklab, globs={"kicklab": kicklab, "np": np}, optionflags=doctest.ELLIPSIS)
    assert r.attempted >= 5
    assert r.failed == 0


def test_everything_public_is_documented():
    for name in kicklab.__all__:
        obj = getattr(kicklab, name)
        if callable(obj):
            assert obj.__doc__ and len(obj.__doc__) > 40, name
