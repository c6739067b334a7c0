"""Restart at input discontinuities (issue 12, item 3): declared breakpoints in
``simulate`` and held-input jumps at the communication points of the blocks."""
import numpy as np
import pytest

from mbdcore.dae.problem import ConstrainedProblem
from mbdcore.dae.simulate import _step_plan, simulate
from mbdcore.integrators import PiecewiseInput
from mbdcore.models import FlexibleManipulatorBlock
from mbdcore.models.manipulator import bang_bang_torque
from mbdcore.models.mechanisms import slider_crank
from mbdcore.multibody.model_file import model_to_dict
from mbdcore.multibody.system_block import SystemBlock

T_STEP = 0.31      # [s], off the grid of every h below


class StepForceOscillator(ConstrainedProblem):
    """x'' = (F - k x)/m (m = 1 kg, k = 4 pi^2 N/m: 1 Hz), F [N] the input ``"F"``."""

    n, m = 1, 0
    stiffness = 4 * np.pi ** 2

    def __init__(self):
        self.force = 0.0

    def mass_matrix(self, q):
        return np.eye(1)

    def forces(self, t, q, v):
        return np.array([self.force - self.stiffness * q[0]])

    def force_jacobians(self, t, q, v):
        return np.array([[-self.stiffness]]), np.zeros((1, 1))

    def set_input(self, name, value):
        self.force = float(value)

    def initial_state(self):
        return np.zeros(1), np.zeros(1)

    def energy(self, t, q, v):
        return 0.5 * v[0] ** 2 + 0.5 * self.stiffness * q[0] ** 2


class StepForce:
    """1 N from ``T_STEP`` on, the jump declared by its ``breakpoints`` attribute."""

    breakpoints = (T_STEP,)

    def __call__(self, t):
        return {"F": 1.0 if t >= T_STEP else 0.0}


def step_error(method, h, **kw):
    """|x(1 s) - exact| [m] under the 1 N step at T_STEP."""
    r = simulate(StepForceOscillator(), 1.0, h, method, **kw)
    exact = (1 - np.cos(2 * np.pi * (1.0 - T_STEP))) / StepForceOscillator.stiffness
    return abs(r.q[-1, 0] - exact)


@pytest.mark.parametrize("method, order", [("rk4", 4), ("generalized-alpha", 2),
                                           ("bdf2", 2)])
def test_off_grid_force_step_converges_with_the_method_order(method, order):
    """With the jump declared (step split at 0.31 s, integrator restarted there) the
    error falls as h^p from h = 0.02 s to 0.004 s; sampled and held without it, the
    step acts up to a step late and the error is 10-100x larger."""
    declared = [step_error(method, h, inputs=StepForce()) for h in (0.02, 0.004)]
    observed = np.log(declared[0] / declared[1]) / np.log(5.0)
    assert observed > order - 0.25, declared
    undeclared = step_error(method, 0.004, inputs=lambda t: StepForce()(t))
    assert undeclared > 10 * declared[1]


def test_breakpoint_argument_equals_the_inputs_attribute_and_either_side_convention():
    """``breakpoints=`` and an ``inputs.breakpoints`` attribute are the same; a schedule
    that switches at t <= t_b (left-continuous) gives the same result as one switching
    at t < t_b, as the step starting at t_b samples just above it."""
    h = 0.02
    a = simulate(StepForceOscillator(), 1.0, h, "generalized-alpha", inputs=StepForce())
    b = simulate(StepForceOscillator(), 1.0, h, "generalized-alpha",
                 inputs=lambda t: {"F": float(t > T_STEP)}, breakpoints=[T_STEP])
    np.testing.assert_array_equal(a.q, b.q)
    np.testing.assert_allclose(a.t, h * np.arange(51), rtol=0, atol=1e-15)  # regular grid


def test_a_breakpoint_an_ulp_off_a_grid_point_is_that_grid_point():
    """3 x 0.1 rounds to 0.30000000000000004: the jump at 0.3 is at step 3 (no sliver
    step), restarted there, with the inputs sampled above both."""
    plan = _step_plan(0.0, 0.1, 6, [0.3, 0.45])
    assert len(plan) == 7                                  # only 0.45 splits a step
    assert [s.restart for s in plan] == [False, False, False, True, False, True, False]
    assert plan[3].sample > max(0.3, 3 * 0.1) and plan[3].h == 0.1
    assert plan[4].t == 0.4 and plan[4].k_end is None
    assert plan[5].t == 0.45 and plan[5].k_end == 5 and not plan[5].grid
    assert [s.k_end for s in _step_plan(0.0, 0.1, 6, [])] == [1, 2, 3, 4, 5, 6]


def torque_schedule(t):
    """A held crank torque [N m] that jumps at 0.1 s."""
    return 2.0 if t < 0.1 else -3.0


def test_system_block_with_a_held_input_jump_equals_simulate_with_the_breakpoint():
    """A SystemBlock (generalized-alpha, 4 substeps of a 10 ms communication step) whose
    held torque jumps at a communication point restarts there: it equals ``simulate``
    with the jump declared, and not the run that carries the pre-jump acceleration
    across."""
    H, n_sub = 0.01, 4
    block = SystemBlock.configured({"model": model_to_dict(slider_crank()),
                                    "inputs": ["tau"], "outputs": ["crank.phi"]})(
        method="generalized-alpha", substeps=n_sub)
    phi = []
    for k in range(20):
        block.set_inputs({"tau": torque_schedule(k * H)})
        block.do_step(k * H, H)
        phi.append(block.outputs()["crank.phi"])

    def run(breakpoints):
        r = simulate(slider_crank(), 0.2, H / n_sub, "generalized-alpha", rho_inf=0.8,
                     inputs=lambda t: {"tau": torque_schedule(t)}, breakpoints=breakpoints)
        return r["crank.phi"][n_sub::n_sub]
    np.testing.assert_allclose(phi, run([0.1]), rtol=0, atol=1e-12)
    assert np.abs(np.array(phi) - run(None)).max() > 1e-7


def test_a_multistep_block_restarts_at_an_input_jump():
    """The arm block with BDF3 under the bang-bang torques (jumps at the communication
    points 0.3 s, 0.6 s) against RK4 at 40 substeps: restarted at the jumps its error
    falls as the substep cubed (about 8x from 2 to 4 substeps); carrying the pre-jump
    history across (the restart switched off) it is O(h), 1.6e-3 and 7e-4 rad."""
    H, t_end = 0.01, 0.8

    def angles(method, substeps, memory=True):
        block = FlexibleManipulatorBlock(method=method, substeps=substeps)
        block.integrator.memory = memory        # False: as before the restart
        out = []
        for k in range(int(round(t_end / H))):
            block.set_inputs(dict(zip(("tau1", "tau2"), bang_bang_torque(k * H))))
            block.do_step(k * H, H)
            out.append([block.outputs()["theta1"], block.outputs()["theta2"]])
        return np.array(out)
    ref = angles("rk4", 40)
    errors = [np.abs(angles("bdf3", n) - ref).max() for n in (2, 4)]
    assert errors[0] / errors[1] > 6.0 and errors[1] < 5e-5, errors
    assert np.abs(angles("bdf3", 4, memory=False) - ref).max() > 20 * errors[1]


@pytest.mark.parametrize("method", ["rk4", "generalized-alpha"])
def test_progress_is_told_every_grid_point_not_the_split_steps(method, capsys):
    """With no wall-clock spacing the callback sees t0 + k h for every k (the step split
    at the breakpoint 0.31 s is not a point of its own), ending at t0 + t_end; the driver
    prints nothing."""
    seen = []
    r = simulate(StepForceOscillator(), 1.0, 0.04, method, inputs=StepForce(),
                 progress=lambda t, stop: seen.append((t, stop)), progress_interval=0.0)
    assert [t for t, _ in seen] == [k * 0.04 for k in range(26)] == list(r.t)
    assert {stop for _, stop in seen} == {25 * 0.04}
    assert capsys.readouterr() == ("", "")


@pytest.mark.parametrize("method", ["rk4", "generalized-alpha"])
def test_a_piecewise_schedule_is_the_inputs_of_its_names_with_its_jumps_declared(method):
    """The 1 N step as a PiecewiseInput named "F": the same run as the function with
    its breakpoint, to the last bit."""
    step = PiecewiseInput.constant_pieces([0.0, T_STEP], [[0.0], [1.0]], names=("F",),
                                          units=("N",))
    a = simulate(StepForceOscillator(), 1.0, 0.02, method, inputs=step)
    b = simulate(StepForceOscillator(), 1.0, 0.02, method, inputs=StepForce())
    assert np.array_equal(a.q, b.q) and np.array_equal(a.t, b.t)
