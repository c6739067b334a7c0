"""Antenna pointing axis (docs/benchmarks.md §3): structure frequencies against the engine's
modal analysis, and the cascaded servo against its spec."""
from __future__ import annotations

import math

import control as ct
import numpy as np
import pytest

from controllers.laws.antenna_servo import AntennaServoController
from controllers.design.antenna_servo import design_servo, pointing_axis_plant, servo_margins
from controllers.evaluation.metrics import move_metrics
from mbdcore.models.antenna import AntennaStructure, PointingAxisBlock, pointing_axis_system
from mbdcore.multibody.modal import modal_analysis

STEP = 1e-3          # rad
H = 1e-3             # s, controller sample time = communication step


@pytest.fixture(scope="module")
def structure():
    return AntennaStructure.from_engine()


def engine_frequencies(locked):
    s = pointing_axis_system(n_motors=2, locked_rotor=locked)
    f = modal_analysis(s).frequencies
    # drop the charge coordinates (no stiffness: 0 Hz) and, free, the rigid rotation
    return f[f > 1e-3]


def test_locked_rotor_modes_are_at_2_and_7_hz_and_match_the_modal_analysis(structure):
    f_model = structure.coupled_frequencies(2, 1.37e7, 3000.0, 1.8e-4, locked_rotor=True)
    f_engine = engine_frequencies(locked=True)
    assert f_model[0] == pytest.approx(2.0, abs=0.01)
    assert 4.0 < f_model[1] < 8.0 and f_model[1] == pytest.approx(7.0, abs=0.01)
    np.testing.assert_allclose(f_model[:5], f_engine[:5], rtol=1e-6)


def test_free_free_modes_match_the_modal_analysis(structure):
    f_model = structure.coupled_frequencies(2, 1.37e7, 3000.0, 1.8e-4, locked_rotor=False)
    assert f_model[0] < 1e-6                                   # rigid rotation
    np.testing.assert_allclose(f_model[1:6], engine_frequencies(locked=False)[:5], rtol=1e-6)


def test_structure_inertia_is_the_sum_of_its_parts(structure):
    # hub + beams (rho A L^3 / 3) + tip masses (m L^2) + tip inertias
    J = 2e4 + 200 * 5**3 / 3 + 3e3 * 25 + 5e3 + 50 * 4**3 / 3 + 400 * 16 + 50
    assert structure.axis_inertia == pytest.approx(J, rel=1e-9)
    assert structure.zeta[1:] == pytest.approx(0.01)


@pytest.fixture(scope="module")
def design(structure):
    plant = pointing_axis_plant(structure)
    gains = design_servo(structure)
    return plant, gains, servo_margins(gains, plant, H)


def test_rate_and_position_loops_have_the_margins(design):
    _, _, margins = design
    for loop in ("rate", "position"):
        assert margins[loop]["gain_margin_db"] >= 6.0
        assert margins[loop]["phase_margin_deg"] >= 45.0


def test_linear_closed_loop_has_zero_step_error_and_bounded_ramp_error(design):
    plant, g, _ = design
    # the cascade in continuous time on the linear flexible model, wired by name
    pos = ct.ss([[0]], [[g.ki_pos, 0, -g.ki_pos]], [[1]], [[g.kp_pos * g.beta, g.feedforward,
                                                        -g.kp_pos]],
                inputs=["r", "rdot", "axis_angle"], outputs=["w_cmd"], name="pos")
    rate = ct.ss([[0]], [[g.ki_rate, -g.ki_rate]], [[1]], [[g.kp_rate, -g.kp_rate]],
                 inputs=["w_cmd", "rate_measured"], outputs=["current_ref"], name="rate")
    plant = plant[[0, 1], 0]                                     # current -> encoder, tach
    loop = ct.interconnect([plant, pos, rate], inplist=["r", "rdot"], outlist=["axis_angle"],
                           inputs=["r", "rdot"], outputs=["axis_angle"])
    assert np.all(np.real(ct.poles(loop)) < 0)
    assert ct.dcgain(loop[0, 0]) == pytest.approx(1.0, abs=1e-9)   # zero step error
    t = np.linspace(0, 60, 6001)
    ramp = np.squeeze(ct.forced_response(loop, t, np.vstack([1e-3 * t, 1e-3 + 0 * t])).outputs)
    err = 1e-3 * t - ramp
    # bounded: the setpoint weight leaves a constant lag kp (1 - beta) / ki times the rate
    lag = g.kp_pos * (1 - g.beta) / g.ki_pos * 1e-3
    assert np.abs(err).max() <= 1.2 * lag
    assert err[-1] == pytest.approx(lag, rel=1e-4)


def closed_loop(T, reference, wind=lambda t: 0.0, controller=None, **plant_params):
    plant = PointingAxisBlock(**plant_params)
    ctrl = AntennaServoController(**(controller or {}))
    rows = []
    for k in range(int(round(T / H))):
        t = k * H
        r, rd = reference(t)
        out = plant.outputs()
        ctrl.set_inputs({"reference_angle": r, "reference_rate": rd,
                         "axis_angle": out["axis_angle"], "speed1": out["speed1"],
                         "speed2": out["speed2"]})
        plant.set_inputs({"current_ref": ctrl.outputs()["current_ref"],
                          "reference_angle": r, "wind_torque": wind(t)})
        rows.append((t, out["axis_angle"], out["pointing_error"], r))
        ctrl.do_step(t, H)
        plant.do_step(t, H)
    return np.array(rows)


def test_step_of_one_milliradian_meets_the_spec():
    """Spec (ours, from Gawronski's PI-controlled DSN axes: settling of seconds, small
    overshoot): overshoot <= 10 %, settling to 2 % within 3 s."""
    rows = closed_loop(6.0, lambda t: (STEP, 0.0))
    m = move_metrics(rows[:, 0], rows[:, 1], 0.0, STEP)
    assert m["overshoot"] <= 0.10
    assert m["settling_time"] <= 3.0


def test_step_error_vanishes_without_coulomb_friction():
    # no friction in the motors, none compensated
    rows = closed_loop(12.0, lambda t: (STEP, 0.0), controller={"friction_current": 0.0},
                       coulomb_friction=0.0)
    assert abs(rows[-1, 1] - STEP) < 1e-3 * STEP


NOMINAL_FRICTION_CURRENT = 0.02 / 0.49          # A, Tc / Kt of the drive's motors


def hunting(estimate):
    """Largest |error| [rad] from 10 s to 60 s after a 1 mrad step, with the Coulomb
    friction compensation at ``estimate`` times the motors' Tc/Kt."""
    rows = closed_loop(60.0, lambda t: (STEP, 0.0),
                       controller={"friction_current": estimate * NOMINAL_FRICTION_CURRENT})
    calm = rows[rows[:, 0] >= 10.0]
    return np.abs(STEP - calm[:, 1]).max()


@pytest.mark.slow
def test_coulomb_friction_compensation_bounds_the_friction_limit_cycle():
    """With Coulomb friction (0.02 N m per motor) the step error cannot be held at zero:
    at rest the motors stick (the tanh law creeps at w_c T/Tc), and the rate and position
    integrators of the cascade, seeing a stuck plant, make three integrators in the loop
    (its local equilibrium is unstable), so the servo hunts around the target —
    16.5 urad (1.6 % of the step) without compensation.  The compensation
    Tc_hat/Kt tanh(w_cmd / 1e-5 rad/s) leaves only the friction it misses, and the
    hunting shrinks with it.  Measured up to 120 s (docs/antenna.md): 2.9 urad with the
    nominal estimate, at most 4.4 urad with the estimate 20 % off either way (the
    over-compensated side is worse: the compensation's own switching is the relay then).
    Bound: 5 urad = 0.5 % of the step for an estimate within +-20 %; without
    compensation the cycle is over twice that."""
    without = hunting(0.0)
    with_compensation = {x: hunting(x) for x in (0.8, 1.0, 1.2)}
    print(f"\nhunting after a 1 mrad step (10..60 s): no compensation {1e6 * without:.1f} urad; "
          + ", ".join(f"{x:.1f} Tc: {1e6 * e:.2f} urad" for x, e in with_compensation.items()))
    assert without > 10e-6
    for err in with_compensation.values():
        assert err < 0.005 * STEP


def test_ramp_error_is_the_linear_lag():
    rate = math.radians(0.5)                                   # 0.5 deg/s
    rows = closed_loop(5.0, lambda t: (rate * t, rate))
    calm = rows[(rows[:, 0] > 3.5) & (rows[:, 0] < 5)]
    g = AntennaServoController().params
    lag = g["kp_pos"] * (1 - g["beta"]) / g["ki_pos"] * rate     # linear steady lag
    np.testing.assert_allclose(calm[:, 3] - calm[:, 1], lag, rtol=0.05)


def gust(t, peak=5e3, start=1.0, length=1.0):
    """1-cos wind-gust torque on the dish [N m]."""
    if start <= t < start + length:
        return peak * (1 - math.cos(2 * math.pi * (t - start) / length)) / 2
    return 0.0


def test_wind_gust_pointing_error_is_reported_and_rejected():
    rows = closed_loop(6.0, lambda t: (0.0, 0.0), wind=gust)
    err = rows[:, 2]
    peak = np.abs(err).max()
    print(f"\nwind gust 5 kN m (1-cos, 1 s) on the dish: peak pointing error "
          f"{1e6 * peak:.1f} urad, rms {1e6 * np.sqrt(np.mean(err ** 2)):.1f} urad")
    assert 1e-6 < peak < 5e-3
    assert np.abs(err[rows[:, 0] > 5.0]).max() < 0.1 * peak
