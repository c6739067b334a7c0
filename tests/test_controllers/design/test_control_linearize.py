"""The arm as a python-control system: linearisation, modal analysis, the FMU route."""
from __future__ import annotations

import control as ct
import numpy as np
import pytest

from controllers.design.adapters import (SignalNameError, arm_iosys,
    arm_modal_analysis, block_iosys, fmu_iosys, linearize_arm, linearize_fmu)
from mbdcore.models.manipulator import ARM_OUTPUTS, FlexibleManipulator, FlexibleManipulatorBlock

H = 1e-3


def flexible_frequencies(sys) -> np.ndarray:
    """Undamped natural frequencies [Hz] of the oscillating modes (one per pair)."""
    lam = np.linalg.eigvals(sys.A)
    lam = lam[lam.imag > 1e-3]
    return np.sort(np.abs(lam)) / (2 * np.pi)


@pytest.fixture(scope="module")
def model():
    return FlexibleManipulator()


def test_eigenvalues_of_the_linearised_arm_are_the_modes_of_the_model(model):
    modal = arm_modal_analysis(model).frequencies
    modal = modal[modal > 1e-3]                      # free joints: rigid modes are 0 Hz
    for jac in ("analytic", "fd"):
        lin = linearize_arm(model, jacobian=jac)
        np.testing.assert_allclose(flexible_frequencies(lin), modal, rtol=1e-3)
    # four rigid-body eigenvalues (two free joints) at the origin
    lam = np.linalg.eigvals(linearize_arm(model).A)
    assert np.sum(np.abs(lam) < 1e-6) == 4
    # locked joints: the 0.43 Hz mode (docs/benchmarks.md §1)
    assert arm_modal_analysis(model, locked_joints=True).frequencies[0] == pytest.approx(0.4306, abs=1e-3)


def test_linearize_arm_accepts_one_angle_for_both_joints(model):
    """theta=0 raised 'iteration over a 0-d array' (issue 13, item 27)."""
    np.testing.assert_array_equal(linearize_arm(model, theta=0).A,
                                  linearize_arm(model, theta=(0.0, 0.0)).A)
    np.testing.assert_array_equal(linearize_arm(model, theta=0.3).C,
                                  linearize_arm(model, theta=(0.3, 0.3)).C)
    with pytest.raises(ValueError, match=r"theta = \(0.1, 0.2, 0.3\): .*\(theta1, theta2\)"):
        linearize_arm(model, theta=(0.1, 0.2, 0.3))


def test_analytic_jacobians_equal_central_differences(model):
    theta = (0.3, -0.4)
    lin = linearize_arm(model, theta=theta)
    x0 = model.initial_state(*theta)
    eps = 1e-6
    A = np.empty_like(lin.A)
    C = np.empty_like(lin.C)
    for j in range(len(x0)):
        dx = np.zeros_like(x0)
        dx[j] = eps
        A[:, j] = (model.rhs(0, x0 + dx) - model.rhs(0, x0 - dx)) / (2 * eps)
        yp, ym = model.outputs(x0 + dx), model.outputs(x0 - dx)
        C[:, j] = [(yp[n] - ym[n]) / (2 * eps) for n in ARM_OUTPUTS]
    np.testing.assert_allclose(lin.A, A, atol=1e-6 * np.abs(A).max())
    np.testing.assert_allclose(lin.C, C, atol=1e-8)
    assert lin.input_labels == ["tau1", "tau2"] and lin.output_labels == list(ARM_OUTPUTS)
    assert lin.state_labels[:3] == ["theta1", "theta2", "delta1_1"]


def test_arm_iosys_works_with_python_control(model):
    sys = arm_iosys(model, outputs=("theta1", "w1"))
    op = ct.find_operating_point(sys, model.initial_state(0.2, 0.1), [0, 0])
    np.testing.assert_allclose(op.states[:2], [0.2, 0.1], atol=1e-12)
    t = np.linspace(0, 0.3, 31)
    resp = ct.input_output_response(sys, t, [0.2 * np.ones_like(t), 0.05 * np.ones_like(t)],
                                    solve_ivp_kwargs=dict(rtol=1e-10, atol=1e-12))
    _, x = model.simulate(lambda tt: (0.2, 0.05), 0.3, 1e-4)
    assert resp.outputs[0, -1] == pytest.approx(x[-1, 0], rel=1e-6)


def test_block_iosys_steps_like_the_block(model):
    block = FlexibleManipulatorBlock(substeps=5)
    sys = block_iosys(block, H)
    t = H * np.arange(50)
    resp = ct.input_output_response(sys, t, [0.2 * np.ones(50), -0.1 * np.ones(50)], sys.x0)
    ref = FlexibleManipulatorBlock(substeps=5)
    ref.set_inputs({"tau1": 0.2, "tau2": -0.1})
    for k in range(49):
        ref.do_step(k * H, H)
    assert resp.outputs[list(sys.output_labels).index("w1"), -1] == ref.outputs()["w1"]


def test_fmu_linearisation_matches_the_model(arm_fmu, model):
    fmu_lin = linearize_fmu(arm_fmu, H)
    lin = linearize_arm(model)
    assert fmu_lin.nstates == lin.nstates == 12
    assert fmu_lin.input_labels == lin.input_labels
    np.testing.assert_allclose(flexible_frequencies(fmu_lin), flexible_frequencies(lin), rtol=1e-2)
    # frequency response between and beside the resonances, every input-output pair
    # with a non-zero response (x_tip is second order at theta = 0)
    for f in (0.2, 1.0, 2.0, 3.5, 8.0, 25.0):
        g_fmu, g = fmu_lin(2j * np.pi * f), lin(2j * np.pi * f)
        rows = [i for i, o in enumerate(lin.output_labels) if o != "x_tip"]
        np.testing.assert_allclose(np.abs(g_fmu[rows]), np.abs(g[rows]), rtol=1e-2)
        assert np.abs(g_fmu[lin.output_labels.index("x_tip")]).max() < 1e-6


def test_fmu_as_discrete_io_system_equals_the_block(arm_fmu):
    sys = fmu_iosys(arm_fmu, H, inputs=["tau1", "tau2"], outputs=["theta1", "w1"])
    try:
        t = H * np.arange(20)
        resp = ct.input_output_response(sys, t, [0.2 * np.ones(20), 0.05 * np.ones(20)], [0])
    finally:
        sys.plant.close()
    block = FlexibleManipulatorBlock()
    block.set_inputs({"tau1": 0.2, "tau2": 0.05})
    for k in range(19):
        block.do_step(k * H, H)
    assert resp.outputs[:, -1] == pytest.approx([block.outputs()["theta1"], block.outputs()["w1"]],
                                                rel=1e-12)


def test_unknown_signal_names_are_named(arm_fmu, model):
    with pytest.raises(SignalNameError, match="'tip_x'.*x_tip"):
        arm_iosys(model, outputs=("theta1", "tip_x"))
    with pytest.raises(SignalNameError, match="'torque1'"):
        linearize_fmu(arm_fmu, H, inputs=["torque1"])
    with pytest.raises(ValueError, match="jacobian = 'exact'"):
        linearize_arm(model, jacobian="exact")
