"""Controllers of the two-link flexible arm on the closed-loop benchmark (BENCHMARKS.md §1).

Residual vibration: peak-to-peak end-effector deflection (controllers.validation) over
the second after the reference reaches the target.
"""
from __future__ import annotations

import control as ct
import numpy as np
import pytest

from controllers.design import DesignError, lqr, loop_margins, modal_table
from controllers.input_shaping import (ShapedQuinticTrajectory, convolve, residual_vibration_ratio,
                                       shaper)
from controllers.ioadapters import SignalNameError, block_iosys, linearize_arm
from controllers.joint_pd import JointPDController
from controllers.lqr import MEASURED, ArmLQGController, design_arm_lqg
from controllers.trajectory import QuinticJointTrajectory, quintic
from controllers.validation import closed_loop_move, move_report
from mbdcore.blocks import ParameterError
from mbdcore.manipulator import FlexibleManipulatorBlock

H = 1e-3
MOVE_TIME = 2.0


def pd_loop_modes():
    """Modes of the arm (linear, theta = 0) under the default joint PD."""
    plant = linearize_arm(outputs=("theta1", "theta2", "omega1", "omega2"))
    c = JointPDController().params
    G = np.zeros((2, 4))
    G[0, 0], G[1, 1], G[0, 2], G[1, 3] = c["kp1"], c["kp2"], c["kd1"], c["kd2"]
    return plant, ct.ss([], [], [], -G, inputs=plant.output_labels, outputs=["tau1", "tau2"])


@pytest.fixture(scope="module")
def pd_baseline():
    result = closed_loop_move(JointPDController(), QuinticJointTrajectory(), stop_time=3.0)
    return move_report(result, MOVE_TIME)


def test_shapers_cancel_their_mode():
    for kind in ("zv", "zvd", "ei"):
        a, t = shaper(kind, 0.5, 0.02)
        assert a.sum() == pytest.approx(1.0)
        assert residual_vibration_ratio(a, t, 0.5, 0.02) < (0.06 if kind == "ei" else 1e-12)
    a, t = convolve(shaper("zv", 0.5), shaper("zv", 2.0))
    assert residual_vibration_ratio(a, t, 2.0) < 1e-12 and len(a) == 4
    with pytest.raises(ValueError, match="unknown shaper 'zvdd'"):
        shaper("zvdd", 1.0)


def test_input_shaping_removes_the_residual_vibration_of_joint_pd(pd_baseline):
    plant, pd = pd_loop_modes()
    closed = ct.ss(plant.A + plant.B @ pd.D @ plant.C, plant.B, plant.C, 0)
    first = [m for m in modal_table(closed) if m["damping"] < 0.1][0]   # the link mode
    assert first["frequency"] == pytest.approx(0.426, abs=2e-3)
    ref = ShapedQuinticTrajectory(shaper="zv", move_time=1.42, frequency1=first["frequency"],
                                  zeta1=first["damping"])
    assert ref.duration <= 1.3 * MOVE_TIME
    stop = np.ceil((ref.duration + 1.0) / H) * H
    shaped = move_report(closed_loop_move(JointPDController(), ref, stop_time=stop), ref.duration)
    assert pd_baseline["residual_vibration"] == pytest.approx(0.31, abs=0.02)   # 31 cm
    assert shaped["residual_vibration"] < pd_baseline["residual_vibration"] / 10
    for i in (1, 2):
        assert abs(shaped[f"final_error{i}"]) < 0.02


def test_designed_loops_have_margins(pd_baseline):
    # The joint PD of the demo (not designed here) has no phase crossover at all, but
    # only 39 deg (joint 1, at the 0.43 Hz link mode) and 36 deg (joint 2, crossover near
    # 300 Hz where the 1 ms hold lags) of phase margin on the sampled model: measured,
    # reported in issue 6, below the 45 deg asked of the designed loops.
    plant, pd = pd_loop_modes()
    pd_margins = loop_margins(ct.c2d(plant, H), pd)
    assert [r["gain_margin_db"] for r in pd_margins] == [np.inf, np.inf]
    assert [round(r["phase_margin_deg"]) for r in pd_margins] == [39, 36]
    design = design_arm_lqg()
    sampled = ct.c2d(linearize_arm(outputs=MEASURED), H)
    for r in loop_margins(sampled, design.controller()):
        assert r["gain_margin_db"] >= 6 and r["gain_reduction_db"] <= -6, r
        assert r["phase_margin_deg"] >= 45, r


def test_lqg_damps_the_link_modes(pd_baseline):
    """Measured, not tuned to pass: LQG cuts the residual vibration tenfold in the
    window after the 2 s move, but its joints are still 15-20 % short of the target
    at 3 s (see the report of issue 6): the default weights trade joint stiffness for
    link damping."""
    lqg = ArmLQGController()
    report = move_report(closed_loop_move(lqg, QuinticJointTrajectory(), stop_time=3.0), MOVE_TIME)
    assert report["residual_vibration"] < pd_baseline["residual_vibration"] / 10
    reg = modal_table(ct.ss(np.array(lqg.Ad) - np.array(lqg.Bd) @ lqg.K, np.zeros((12, 1)),
                            np.zeros((1, 12)), 0, H))
    assert reg[0]["damping"] > 0.5                   # PD leaves it at 0.005


def test_same_controller_in_python_control_master_and_fmu(tmp_path):
    from fmu.build import build_fmu
    from fmu.master import FMUComponent

    design = design_arm_lqg().to_json()
    stop = 0.3
    n = int(round(stop / H))
    master = closed_loop_move(ArmLQGController(design=design), QuinticJointTrajectory(),
                              stop_time=stop)
    fmu = build_fmu(ArmLQGController, tmp_path, model_name="ArmLQGControllerTest")
    as_fmu = closed_loop_move(FMUComponent("ctrl", fmu, parameters={"design": design}),
                              QuinticJointTrajectory(), stop_time=stop)
    # python-control: both blocks as discrete-time systems, the reference as input
    ctrl = block_iosys(ArmLQGController(design=design), H, name="ctrl")
    arm = block_iosys(FlexibleManipulatorBlock(), H, name="arm")
    refs = [f"{k}{i}_ref" for i in (1, 2) for k in ("theta", "omega", "alpha")]
    loop = ct.interconnect([ctrl, arm], inplist=[f"ctrl.{r}" for r in refs],
                           outlist=["arm.theta1", "arm.w1", "ctrl.tau1"],
                           connections=[[f"ctrl.{m}", f"arm.{m}"] for m in MEASURED]
                           + [["arm.tau1", "ctrl.tau1"], ["arm.tau2", "ctrl.tau2"]])
    t = H * np.arange(n + 1)
    r = np.array([[quintic(tk, 0.0, end, MOVE_TIME)[j] for tk in t]
                  for end in (0.2617993877991494, 0.17453292519943295) for j in range(3)])
    resp = ct.input_output_response(loop, t, r, np.r_[ctrl.x0, arm.x0])
    for res in (master, as_fmu):
        np.testing.assert_allclose(res["arm.theta1"], resp.outputs[0], rtol=0, atol=1e-12)
        np.testing.assert_allclose(res["arm.w1"], resp.outputs[1], rtol=0, atol=1e-12)
        np.testing.assert_allclose(res["ctrl.tau1"], resp.outputs[2], rtol=0, atol=1e-10)
    assert np.abs(master["arm.w1"]).max() > 1e-3     # something happened


def test_bad_design_requests_are_named():
    plant = ct.c2d(linearize_arm(), H)
    with pytest.raises(DesignError, match=r"not stabilisable from inputs tau2: uncontrollable mode.*\(0 Hz"):
        lqr(plant[:, 1], {"theta1": 1.0}, {"tau2": 1.0})
    with pytest.raises(DesignError, match=r"Q \(state weight\) has shape \(3, 3\); expected \(12, 12\)"):
        lqr(plant, np.eye(3), np.eye(2))
    with pytest.raises(DesignError, match=r"R \(input weight\) has shape \(1,\)"):
        lqr(plant, np.eye(12), [1.0])
    with pytest.raises(SignalNameError, match="'tip'.*theta1"):
        lqr(plant, {"tip": 1.0}, {"tau1": 1.0, "tau2": 1.0})
    with pytest.raises(DesignError, match="every input.*needs a weight"):
        lqr(plant, {"theta1": 1.0}, {"tau1": 1.0})
    with pytest.raises(DesignError, match="weight of 'w1' = -1.0"):
        lqr(plant, {"w1": -1.0}, {"tau1": 1.0, "tau2": 1.0})
    with pytest.raises(SignalNameError, match="'strain1'"):
        design_arm_lqg(measured=("theta1", "strain1"))
    with pytest.raises(DesignError, match="not detectable from outputs w1"):
        design_arm_lqg(measured=("w1",), measurement_noise={"w1": 1e-4})
    with pytest.raises(ParameterError, match="'design'"):
        ArmLQGController(design='{"dt": 0.001}')
    with pytest.raises(ParameterError, match="'design'"):
        ArmLQGController(design="not json")
