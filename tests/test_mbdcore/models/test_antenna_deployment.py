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

from mbdcore.dae.simulate import simulate
from mbdcore.models.antenna import (BangBangProfile, HingeLatch, SepticProfile,
                                    simulate_deployment)
from mbdcore.models.mechanisms import rigid_crank
from mbdcore.multibody.model_file import model_to_dict
from mbdcore.multibody.system_block import SystemBlock

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


def _latched_crank(stiffness=1e4, damping=50.0):
    """The rigid crank of docs/benchmarks.md §5 (62 N m, from rest) with a latch that
    engages when the crank reaches 1 rad and then holds it there (theta = -phi)."""
    s = rigid_crank()
    s.add_force(HingeLatch("ground.O", "crank.O", stiffness, damping, latch_angle=-1.0,
                           sign=-1.0, name="latch"))
    return s


@pytest.mark.parametrize("method", ["rk4", "generalized-alpha"])
def test_simulate_honours_events_the_latch_holds_the_crank(method):
    """Without the event the crank would spin on to 29.5 rad in 0.5 s; with it, the latch
    engages at 1 rad and the crank settles at 1 + torque/stiffness."""
    s = _latched_crank()
    r = simulate(s, 0.5, 1e-4, method)
    phi = r["crank.phi"]
    assert s.discrete_state()["latch"]["engaged"]
    assert 0.999 < s.discrete_state()["latch"]["engaged_at"] / np.sqrt(2.0 / 236.19) < 1.01
    assert phi.max() < 1.2
    assert phi[-1] == pytest.approx(1.0 + 62.0 / 1e4, abs=1e-3)


def test_latch_state_is_part_of_the_saved_state():
    s = _latched_crank()
    before = s.discrete_state()
    assert before == {"latch": {"engaged": False, "engaged_at": None}}
    simulate(s, 0.2, 1e-4, "rk4")
    assert s.discrete_state()["latch"]["engaged"]
    s.set_discrete_state(before)
    assert not s.discrete_state()["latch"]["engaged"]


def test_system_block_steps_events_and_rolls_back_the_latch():
    """As an FMU would: the block's saved state holds the latch, so a rollback to before
    the engagement disengages it and the repeated steps are the same to the bit."""
    cls = SystemBlock.configured({"model": model_to_dict(rigid_crank())})
    block = cls(method="rk4", substeps=10)
    block.system.add_force(HingeLatch("ground.O", "crank.O", 1e4, 50.0, latch_angle=-1.0,
                                      sign=-1.0, name="latch"))
    start = block.get_state()
    for k in range(200):
        block.do_step(k * 1e-3, 1e-3)
    first = block.outputs()["crank.phi"]
    assert block.system.discrete_state()["latch"]["engaged"] and first < 1.2
    block.set_state(start)
    assert not block.system.discrete_state()["latch"]["engaged"]
    for k in range(200):
        block.do_step(k * 1e-3, 1e-3)
    assert block.outputs()["crank.phi"] == first
