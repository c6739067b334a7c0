"""Deployable boom (docs/benchmarks.md §4): synchronous hinges, end position, latch and the
residual vibration of a smooth profile against a bang-bang drive.

Scaling: the benchmark deploys in 60 s (examples/antenna_deployment.py); the test
deploys in 30 s at h = 0.02 s to stay fast.  Halving the time quadruples the profile's
accelerations, so the residual vibrations here are larger than in the 60-s case
(measured there: 0.3 mm smooth, 12.7 mm bang-bang peak to peak).
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from mbdcore.models.antenna import BangBangProfile, SepticProfile, simulate_deployment

DURATION, SETTLE, H = 30.0, 10.0, 0.02


@pytest.fixture(scope="module")
def smooth():
    return simulate_deployment(DURATION, SETTLE, H, profile="smooth")


@pytest.fixture(scope="module")
def bang_bang():
    return simulate_deployment(DURATION, SETTLE, H, profile="bang-bang")


def test_all_hinge_angles_stay_equal(smooth):
    assert smooth.hinge[0] == pytest.approx(math.radians(170.0), abs=1e-12)
    spread = np.abs(smooth.hinge - smooth.hinge[:, :1]).max()
    assert spread < 1e-9 and smooth.violation.max() < 1e-9


def test_the_boom_deploys_straight_and_latches(smooth):
    assert smooth.latch_time is not None and smooth.latch_time <= DURATION + 1.0
    assert abs(smooth.hinge[-1, 0]) < 1e-4
    assert smooth.tip[-1, 0] == pytest.approx(6.0, abs=1e-3)     # 4 panels of 1.5 m


def test_smooth_profile_leaves_less_residual_vibration_than_bang_bang(smooth, bang_bang):
    r_smooth, r_bang = smooth.residual_vibration(8.0), bang_bang.residual_vibration(8.0)
    print(f"\nresidual tip vibration after latching (p-p, last 8 s): smooth "
          f"{1e3 * r_smooth:.2f} mm, bang-bang {1e3 * r_bang:.2f} mm")
    assert bang_bang.latch_time is not None
    assert r_smooth < 0.25 * r_bang


@pytest.mark.parametrize("profile", [SepticProfile, BangBangProfile])
def test_profiles_are_rest_to_rest(profile):
    p = profile(3.0, 0.0, 10.0)
    assert p(0.0)[:2] == pytest.approx((3.0, 0.0))
    assert p(10.0)[:2] == pytest.approx((0.0, 0.0), abs=1e-12)
    t = np.linspace(0, 10, 2001)
    pos = np.array([p(x)[0] for x in t])
    vel = np.array([p(x)[1] for x in t])
    np.testing.assert_allclose(np.gradient(pos, t), vel, atol=2e-3)
