"""The DC drive motor against the closed-form DC-motor values (docs/benchmarks.md §3)."""
from __future__ import annotations

import math

import numpy as np
import pytest

from mbdcore.blocks import ParameterError
from mbdcore.multibody.constraints import AngleDriver, constant_rate
from mbdcore.models.drive import (DCMotorBlock, DCMotorBody, GearTrain, MotorVoltage,
    electrical_time_constant, motor_parameters, smooth_dead_zone, stall_torque, steady_speed)
from mbdcore.dae.simulate import simulate
from mbdcore.multibody.system import System

VOLTS = 48.0


def run_block(block, t_end, h, **inputs):
    block.set_inputs(inputs)
    t, out = [0.0], [block.outputs()]
    for k in range(int(round(t_end / h))):
        block.do_step(k * h, h)
        t.append((k + 1) * h)
        out.append(block.outputs())
    return np.array(t), {key: np.array([o[key] for o in out]) for key in out[0]}


def test_block_free_shaft_reaches_the_closed_form_steady_speed():
    m = DCMotorBlock(gear_stiffness=0.0, gear_damping=0.0, substeps=100)
    _, out = run_block(m, 0.15, 1e-3, voltage=VOLTS)
    w_ss = steady_speed(VOLTS)
    assert w_ss == pytest.approx((0.49 * 48 - 3.07 * 0.02) / (3.07 * 1e-4 + 0.49 * 0.487))
    assert out["speed1"][-1] == pytest.approx(w_ss, rel=1e-6)
    # at steady state the electromagnetic torque only covers friction
    assert out["torque1"][-1] == pytest.approx(1e-4 * w_ss + 0.02, rel=1e-6)


def test_block_locked_rotor_gives_the_stall_torque_and_the_electrical_time_constant():
    tau = electrical_time_constant()
    assert tau == pytest.approx(6.57e-3 / 3.07)
    m = DCMotorBlock(locked_rotor=1, substeps=20)
    t, out = run_block(m, 20 * tau, tau / 10, voltage=VOLTS)
    i_inf = VOLTS / 3.07
    np.testing.assert_allclose(out["current1"], i_inf * (1 - np.exp(-t / tau)),
                               rtol=0, atol=1e-6 * i_inf)
    assert out["current1"][10] == pytest.approx(i_inf * (1 - math.exp(-1)), rel=1e-6)
    assert out["torque1"][-1] == pytest.approx(stall_torque(VOLTS), rel=1e-6)


def test_voltage_is_clipped_to_the_supply():
    m = DCMotorBlock(gear_stiffness=0.0, gear_damping=0.0, substeps=100)
    _, out = run_block(m, 0.15, 1e-3, voltage=1000.0)
    assert out["speed1"][-1] == pytest.approx(steady_speed(310.0), rel=1e-6)


def test_current_amplifier_is_first_order_at_its_bandwidth():
    wc = 2000.0
    m = DCMotorBlock(command="current", locked_rotor=1, current_bandwidth=wc, substeps=50)
    t, out = run_block(m, 5e-3, 1e-4, current_ref=5.0)
    np.testing.assert_allclose(out["current1"], 5.0 * (1 - np.exp(-wc * t)), atol=5e-6)
    # commands above the peak current are clipped
    m = DCMotorBlock(command="current", locked_rotor=1, substeps=50)
    _, out = run_block(m, 0.02, 1e-3, current_ref=100.0)
    assert out["current1"][-1] == pytest.approx(9.0, rel=1e-6)


def test_counter_torque_pair_preloads_the_gears_against_each_other():
    m = DCMotorBlock(n_motors=2, command="current", bias_current=1.0, backlash=1e-5,
                     gear_damping=5e4, substeps=50)
    _, out = run_block(m, 1.0, 1e-3, current_ref=0.0)
    # no net torque on the clamped axis, each gear loaded by N Kt i_b (minus friction)
    assert abs(out["axis_torque"][-1]) < 1e-6 * abs(out["gear_torque1"][-1])
    n_kt = 3000 * 0.49
    assert out["gear_torque1"][-1] == pytest.approx(n_kt * 1.0, rel=0.05)
    assert out["gear_torque2"][-1] == pytest.approx(-n_kt * 1.0, rel=0.05)


def test_dead_zone_is_smooth_odd_and_exact_outside():
    x = np.linspace(-1e-3, 1e-3, 2001)
    y = smooth_dead_zone(x, 2e-4, 1e-7)
    np.testing.assert_allclose(y, -smooth_dead_zone(-x, 2e-4, 1e-7), atol=1e-18)
    sharp = np.sign(x) * np.maximum(np.abs(x) - 2e-4, 0.0)
    assert np.abs(y - sharp).max() <= 1e-7 * math.log(2) * 1.0001
    assert np.all(np.diff(y) >= 0)
    assert np.array_equal(smooth_dead_zone(x, 0.0, 1e-7), x)


# -- the motor as an element of the multibody engine ------------------------------------
def motor_system(locked=False, **motor):
    s = System()
    s.add(DCMotorBody("motor", **motor))
    s.add_force(MotorVoltage("motor", "u"))
    if locked:
        s.add_joint(AngleDriver("ground", "motor", constant_rate(0.0, 0.0), name="lock"))
    s.set_input("u", VOLTS)
    return s


def test_engine_motor_reaches_the_steady_speed():
    s = motor_system()
    res = simulate(s, 0.12, 2e-5, method="rk4", record_every=500)
    assert res["d(motor.phi)"][-1] == pytest.approx(steady_speed(VOLTS), rel=1e-6)
    assert res["d(motor.charge)"][-1] == pytest.approx(
        (1e-4 * steady_speed(VOLTS) + 0.02) / 0.49, rel=1e-6)


def test_engine_motor_locked_rotor_current_rises_with_L_over_R():
    tau = electrical_time_constant()
    s = motor_system(locked=True)
    res = simulate(s, 20 * tau, tau / 200, method="rk4")
    i_inf = VOLTS / 3.07
    i = res["d(motor.charge)"]
    assert i[200] == pytest.approx(i_inf * (1 - math.exp(-1)), rel=1e-6)
    assert 0.49 * i[-1] == pytest.approx(stall_torque(VOLTS), rel=1e-6)
    # the multiplier of the lock is the torque it holds the rotor with
    assert res["lambda(lock.torque)"][-1] == pytest.approx(stall_torque(VOLTS), rel=1e-6)


def test_engine_gear_train_matches_the_block():
    """Motor + gear on a clamped load: engine element and block agree."""
    s = motor_system(viscous_friction=1e-4)
    s.add_body("load", mass=1.0, inertia=50.0)
    s.ground.add_marker("O", (0.0, 0.0))
    s.body("load").add_marker("O", (0.0, 0.0))
    from mbdcore.multibody.constraints import Revolute
    s.add_joint(Revolute("ground.O", "load.O", name="pin"))
    s.add_joint(AngleDriver("ground", "load", constant_rate(0.0, 0.0), name="clamp"))
    s.add_force(GearTrain("motor", "ground", "load", ratio=100.0, gear_stiffness=1e4,
                          gear_damping=50.0, name="gear"))
    res = simulate(s, 0.05, 1e-5, method="rk4", record_every=100)
    b = DCMotorBlock(ratio=100.0, gear_stiffness=1e4, gear_damping=50.0, substeps=100)
    _, out = run_block(b, 0.05, 1e-3, voltage=VOLTS)
    np.testing.assert_allclose(res["d(motor.charge)"], out["current1"], atol=1e-8 * 20)
    np.testing.assert_allclose(res["motor.phi"], out["angle1"], atol=1e-9)


def test_bad_parameters_are_named():
    with pytest.raises(ParameterError, match="resistance"):
        motor_parameters(resistance=-1.0)
    with pytest.raises(ParameterError, match="n_motors"):
        DCMotorBlock(n_motors=3)


@pytest.mark.parametrize("method", ["gill", "treanor", "gill-tableau"])
def test_block_steps_with_any_ode_method_of_the_table(method):
    """The drive block is stepped by the method table: other fourth-order methods give
    the same move as RK4."""
    ref = DCMotorBlock(ratio=100.0, gear_stiffness=1e4, gear_damping=50.0, substeps=100)
    other = DCMotorBlock(ratio=100.0, gear_stiffness=1e4, gear_damping=50.0, substeps=100,
                         method=method)
    _, a = run_block(ref, 0.02, 1e-3, voltage=VOLTS)
    _, b = run_block(other, 0.02, 1e-3, voltage=VOLTS)
    # the start crosses the friction regularisation (Tc / (w_c J_m) h = 1.1): the methods'
    # errors differ there at the 1e-6 level, and the difference does not grow after
    np.testing.assert_allclose(b["angle1"], a["angle1"], rtol=1e-5, atol=1e-9)
    np.testing.assert_allclose(b["current1"], a["current1"], rtol=1e-5, atol=1e-8)
    assert a["current1"].max() > 1.0
