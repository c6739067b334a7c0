"""The linear plant x' = A x + B u, y = C x + D u stepped in C (mbdcore/models/native/linear.c)
against its exact solution, the matrix exponential."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg as sl

from mbdcore.blocks import StepError
from mbdcore.dae.methods import make_method
from mbdcore.models.linear import LinearSystemBlock, state_space_config

pytestmark = pytest.mark.gcc

# a mass (2 kg) on a spring (800 N/m: 20 rad/s) and damper (8 N s/m) pulled through a
# first-order actuator lag (time constant 0.05 s) by a force command u [N]
A = [[0.0, 1.0, 0.0], [-400.0, -4.0, 0.5], [0.0, 0.0, -20.0]]
B = [[0.0, 0.0], [0.0, 0.5], [20.0, 0.0]]          # command, and a disturbance force
C = [[1.0, 0.0, 0.0], [-400.0, -4.0, 0.5]]         # position [m], acceleration [m/s2]
D = [[0.0, 0.0], [0.0, 0.5]]
PLANT = LinearSystemBlock.configured(state_space_config(
    A=A, B=B, C=C, D=D, inputs=["command", "disturbance"], outputs=["position", "acceleration"],
    states=["x", "v", "f"], input_units=["N", "N"], output_units=["m", "m/s2"],
    state_units=["m", "m/s", "N"]), "Plant")
X0 = np.array([0.01, -0.2, 3.0])
U = np.array([5.0, -2.0])


def exact(t: float) -> tuple[np.ndarray, np.ndarray]:
    """x(t) and y(t) from X0 with U held: expm of the plant augmented by the constant
    input, [[A, B u], [0, 0]] t, acting on (X0, 1)."""
    n = len(A)
    aug = np.zeros((n + 1, n + 1))
    aug[:n, :n] = A
    aug[:n, n] = np.asarray(B) @ U
    x = (sl.expm(aug * t) @ np.append(X0, 1.0))[:n]
    return x, np.asarray(C) @ x + np.asarray(D) @ U


def run(method: str, substeps: int, steps: int = 10, h: float = 0.05) -> PLANT:
    block = PLANT(method=method, substeps=substeps)
    block.x = X0
    block.set_inputs(dict(zip(("command", "disturbance"), U)))
    for k in range(steps):
        block.do_step(k * h, h)
    return block


@pytest.mark.parametrize("method, lowest", [("rk4", 3.95), ("gill", 3.95), ("treanor", 3.6)])
def test_the_plant_converges_to_the_matrix_exponential_with_fourth_order(method, lowest):
    """0.5 s in 10 communication steps of 50 ms, 4..32 substeps, all in the kernel's C
    loop: the error of the state and of the outputs against expm falls 16-fold per
    halving of the step (Treanor measured 3.7-4.0 here: its fitted decay rates make its
    error constant vary with h).

    Errors relative per state component, and for an output relative to the sum of the
    magnitudes of its terms (the acceleration is a near-cancelling sum: -0.2 m/s2 out of
    terms of 2.5)."""
    x_ref, y_ref = exact(0.5)
    scale = np.abs(C) @ np.abs(x_ref) + np.abs(D) @ np.abs(U)
    errors = []
    for substeps in (4, 8, 16, 32):
        block = run(method, substeps)
        y = np.array([block.outputs()[name] for name in ("position", "acceleration")])
        errors.append(max((np.abs(block.x - x_ref) / np.abs(x_ref)).max(),
                          (np.abs(y - y_ref) / scale).max()))
    orders = np.log2(np.array(errors[:-1]) / errors[1:])
    print(f"{method}: relative errors {errors}, orders {orders}")
    assert errors[-1] < 1e-6 and errors[0] > 1e-5                   # resolved, not round-off
    assert np.all((orders > lowest) & (orders < 4.2))
    assert block.time == pytest.approx(0.5, abs=1e-15)


@pytest.mark.parametrize("method", ["rk4", "gill", "treanor"])
def test_the_c_loop_takes_the_python_steppers_steps_bit_for_bit(method):
    """Three communication steps of 7 substeps in one C call each equal 21 steps of the
    Python stepper over the same right-hand side (Gill's round-off register carried from
    one call to the next; Treanor's fitted rates active: the actuator lag decays)."""
    block = PLANT(method=method, substeps=7)
    block.x = X0
    block.set_inputs(dict(zip(("command", "disturbance"), U)))
    rhs, args = block.derivatives()
    python = make_method(method)
    python.start(0.0, X0)
    for k in range(3):
        block.do_step(k * 0.01, 0.01)
        for _ in range(7):
            x = python.step(lambda t, y: rhs(y, *args), 0.01 / 7)
        np.testing.assert_array_equal(block.x, x)
        # Gill's round-off register, as the Python stepper carries it (RK4: none)
        np.testing.assert_array_equal(block.integrator.get_state().get("q"),
                                      python.get_state().get("q"))
    assert block.integrator.nsteps == python.nsteps == 21
    assert np.abs(block.x - X0).max() > 1e-3                           # it moved


def test_a_diverging_step_is_refused_and_the_state_kept():
    """x' = 1e200 x overflows within one RK4 step: StepError, state and time unchanged,
    and the next step from there behaves as the first."""
    block = LinearSystemBlock.configured(state_space_config(A=[[1e200]], B=[[1.0]],
                                                            C=[[1.0]], D=[[0.0]]))()
    block.x = [1.0]
    with pytest.raises(StepError, match="non-finite state"):
        block.do_step(0.0, 1e-3)
    assert block.x.tolist() == [1.0] and block.time == 0.0
    with pytest.raises(StepError):
        block.do_step(0.0, 1e-3)


def test_no_inputs_or_outputs_an_autonomous_plant_decays_as_exp():
    """A plant without inputs (B, D empty): x' = -3 x decays as e^(-3 t) to RK4's accuracy."""
    block = LinearSystemBlock.configured(state_space_config(
        A=[[-3.0]], B=np.zeros((1, 0)), C=[[2.0]], D=np.zeros((1, 0))))(substeps=20)
    block.x = [1.5]
    for k in range(100):
        block.do_step(k * 0.01, 0.01)
    assert block.x[0] == pytest.approx(1.5 * np.exp(-3.0), rel=1e-10)
    assert block.outputs() == {"y0": pytest.approx(3.0 * np.exp(-3.0), rel=1e-10)}
