# SPDX-License-Identifier: MIT
"""Shared fixtures: one context per test module (config files and RAYO_*
variables ignored, so the machine's settings do not steer the tests) and a
seeded random generator whose seed is printed (RAYO_CONFORM_SEED repeats it)."""
import os
import sys
import time

import numpy as np
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import rayo  # noqa: E402  (the package of this tree, not an installed one)


@pytest.fixture(scope="module")
def ctx():
    with rayo.Context(config_files=False, environment=False) as c:
        yield c


@pytest.fixture
def rng():
    seed = int(os.environ.get("RAYO_CONFORM_SEED", "0"), 0) or time.time_ns() % 2**32
    print(f"seed {seed} (set RAYO_CONFORM_SEED to repeat)")
    return np.random.default_rng(seed)
