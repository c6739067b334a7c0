"""Where the energy of a run goes (mbdcore.multibody.energy): a DC motor driving a load
through a compliant gear against a torsion spring-damper.  The kinetic energy gained
equals the work of every element to the integrator's accuracy (the residual falls as
h^2); each element's work is its own: the motor's losses equal R i^2 + b w^2 + Tc w
tanh(w/wc) integrated from the recorded currents and speeds; the supply's work is V
times the charge that went through."""
from __future__ import annotations

import numpy as np
import pytest

from mbdcore.dae.simulate import simulate
from mbdcore.models.drive import DCMotorBody, GearTrain, MotorVoltage
from mbdcore.multibody.constraints import Revolute
from mbdcore.multibody.energy import element_powers, energy_balance
from mbdcore.multibody.forces import RotationalSpringDamper
from mbdcore.multibody.system import System

VOLTS = 24.0


def drive_system() -> System:
    s = System()
    s.add(DCMotorBody("motor", viscous_friction=1e-4))
    s.add_force(MotorVoltage("motor", "u", name="supply"))
    s.add_body("load", mass=1.0, inertia=2.0)
    s.ground.add_marker("O", (0.0, 0.0))
    s.body("load").add_marker("O", (0.0, 0.0))
    s.add_joint(Revolute("ground.O", "load.O", name="pin"))
    s.add_force(GearTrain("motor", "ground", "load", ratio=50.0, gear_stiffness=2e3,
                          gear_damping=5.0, name="gear"))
    s.add_force(RotationalSpringDamper("ground", "load", 40.0, 2.0, name="spring"))
    s.set_input("u", VOLTS)
    return s


def run(h: float):
    s = drive_system()
    r = simulate(s, 0.3, h, "generalized-alpha", rho_inf=0.9, iteration="newton")
    return s, r, energy_balance(s, r.t, r.q, r.v)


@pytest.fixture(scope="module")
def runs():
    return {h: run(h) for h in (2e-3, 1e-3)}


def test_the_kinetic_energy_gained_is_the_work_of_every_element(runs):
    """T(t) - T(0) = sum of the works, to the integrator's second order: the residual
    falls by 4 when h halves (3 to 5 allowed: the asymptotic range), and at 1 ms it is
    below 1 % of what the supply delivered."""
    (_, _, coarse), (_, _, fine) = runs[2e-3], runs[1e-3]
    supplied = fine.sources(["supply"])[-1]
    assert supplied > 1.0                          # about 3 J go in over 0.3 s
    ratio = abs(coarse.residual()[-1]) / abs(fine.residual()[-1])
    assert 3.0 < ratio < 5.0
    assert abs(fine.residual()).max() < 1e-2 * supplied
    # the balance the deployment is judged by: supplied = kinetic + potentials + losses
    stored = fine.kinetic[-1] - fine.kinetic[0] + sum(
        fine.potential[n][-1] - fine.potential[n][0] for n in fine.potential)
    lost = sum(fine.dissipated(n)[-1] for n in fine.work if n != "supply")
    assert supplied == pytest.approx(stored + lost, abs=abs(fine.residual()[-1]) * 1.000001)


def test_each_elements_work_is_its_own(runs):
    """The motor body's losses, integrated independently from the recorded current and
    speed (trapezoid, the same rule): R i^2 + b w^2 + Tc w tanh(w/wc) - (Kt - Ke) i w
    (the project's motor has Kt = 0.49 N m/A and Ke = 0.487 V s/rad, so the conversion
    is not quite lossless); the supply delivered V times the charge through it, to the
    trapezoid's O(h^2)."""
    s, r, balance = runs[1e-3]
    p = s.body("motor").params
    w, i = r["d(motor.phi)"], r["d(motor.charge)"]
    loss = (p["resistance"] * i ** 2 + p["viscous_friction"] * w ** 2
            + p["coulomb_friction"] * w * np.tanh(w / p["friction_speed"])
            - (p["torque_constant"] - p["emf_constant"]) * i * w)
    integrated = np.concatenate([[0.0], np.cumsum(0.5 * np.diff(r.t) * (loss[1:] + loss[:-1]))])
    np.testing.assert_allclose(balance.dissipated("motor"), integrated, rtol=1e-12,
                               atol=1e-12 * integrated[-1])
    charge = r["motor.charge"] - r["motor.charge"][0]
    # trapezoid of i vs the integrator's own charge: both second order in h
    np.testing.assert_allclose(balance.work["supply"], VOLTS * charge, rtol=0,
                               atol=1e-3 * VOLTS * charge[-1])


def test_the_inputs_held_over_a_step_are_the_ones_its_work_is_counted_with():
    """A supply switched off half-way: with the switch given as held inputs, the supply's
    work stops growing there (the rows after it add V = 0)."""
    s = drive_system()
    half = simulate(s, 0.05, 1e-3, "generalized-alpha", rho_inf=0.9, iteration="newton",
                    inputs=lambda t: {"u": VOLTS if t < 0.025 - 1e-12 else 0.0})
    held = [(0.0, {"u": VOLTS}, None), (0.025, {"u": 0.0}, None)]
    balance = energy_balance(s, half.t, half.q, half.v, held)
    k = int(np.searchsorted(half.t, 0.025 - 1e-12))
    assert balance.work["supply"][k] > 0.0
    assert np.all(balance.work["supply"][k:] == balance.work["supply"][k])
    powers = element_powers(s, half.t[-1], half.q[-1], half.v[-1], {"u": 0.0})
    assert powers["supply"] == 0.0 and set(powers) >= {"motor", "load", "gear", "spring"}


#: the output grid (and the controller's sampling) of the error-controlled runs [s]:
#: coarse against the motor's electrical time constant L/R (about 2 ms) and the gear's
#: period, so the steps between its points carry the accuracy
GRID = 0.02


def adaptive_run(rtol: float, record_steps: bool):
    """The drive under error-controlled generalized-alpha on a 20 ms grid, its supply set
    by a sampled controller (24 V, reversed to -12 V from 0.15 s: a held input that
    jumps at a sample), and its energy balance over the rows it recorded."""
    s = drive_system()
    held = []

    def controller(t, q, v):
        u = {"u": VOLTS if t < 0.15 - 1e-9 else -0.5 * VOLTS}
        held.append((t, u, s.discrete_state()))
        return u
    r = simulate(s, 0.3, GRID, "generalized-alpha", rho_inf=0.9, iteration="newton",
                 adaptive=True, rtol=rtol, atol=1e-2 * rtol, feedback=controller,
                 record_steps=record_steps)
    return r, energy_balance(s, r.t, r.q, r.v, held)


@pytest.fixture(scope="module")
def adaptive_runs():
    return {rtol: adaptive_run(rtol, True) for rtol in (1e-4, 1e-6)}


def test_an_error_controlled_run_recorded_at_its_steps_balances_its_energy(adaptive_runs):
    """With ``record_steps=True`` the rows are the accepted steps (the grid points among
    them), so the trapezoid of the element powers runs over the steps taken: the
    residual falls with the tolerance as the steps' h^2 does, h ~ rtol^(1/3) (third
    order local error), i.e. rtol^(2/3): 21.5x over two decades, an observed exponent of
    0.5 to 0.8 allowed (the coarse tolerance is not yet asymptotic), and at 1e-6 it is
    below 1e-3 of the supplied energy (about 4.8 J)."""
    (coarse, b_coarse), (fine, b_fine) = adaptive_runs[1e-4], adaptive_runs[1e-6]
    for r in (coarse, fine):
        assert len(r.t) == r.stats["accepted_steps"] + 1
        assert np.all(np.diff(r.t) > 0.0)
        grid = GRID * np.arange(16)
        # the grid points are rows: the steps land on them (to the sum's rounding)
        assert np.abs(r.t[np.searchsorted(r.t, grid - 1e-12)] - grid).max() < 1e-14
    supplied = b_fine.sources(["supply"])[-1]
    assert supplied > 1.0
    exponent = np.log(abs(b_coarse.residual()[-1] / b_fine.residual()[-1])) / np.log(100.0)
    assert 0.5 < exponent < 0.8
    assert abs(b_fine.residual()).max() < 1e-3 * supplied


def test_the_trapezoid_over_the_grid_of_an_error_controlled_run_misses_the_steps(
        adaptive_runs):
    """The same run recorded on its 20 ms grid only: the trapezoid over the grid's rows
    integrates powers that change within a row (the motor's current rises in 2 ms), a
    residual of order 10 % of the supply, more than 100 times the balance over the
    steps at rtol = 1e-6, whatever the tolerance."""
    _, b_steps = adaptive_runs[1e-6]
    r, b_grid = adaptive_run(1e-6, False)
    assert len(r.t) == 16 and r.stats["accepted_steps"] > 100
    assert abs(b_grid.residual()[-1]) > 100.0 * abs(b_steps.residual()[-1])


@pytest.mark.parametrize("kwargs, words", [
    ({"method": "rk4"}, "record_steps=True records the steps a DAE method"),
    ({"record_every": 2}, "record_every = 2 contradicts it"),
    ({"record_steps": 1}, "record_steps = 1: accepted True or False"),
])
def test_record_steps_is_refused_where_it_cannot_mean_the_steps(kwargs, words):
    options = {"method": "generalized-alpha", "record_steps": True, **kwargs}
    with pytest.raises(ValueError, match=words):
        simulate(drive_system(), 0.01, 1e-3, **options)
