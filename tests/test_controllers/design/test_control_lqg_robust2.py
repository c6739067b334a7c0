"""A robustness-oriented LQG for the arm (``design_arm_lqg_robust``) against the default one.

The default LQG (tests/test_controllers/design/test_control_lqg_robust.py) loses its link-mode damping off the
design model: its observer barely corrects the 2.63 Hz mode (link 2 bending) and its
regulator damps it by only 0.06.  The robust option adds

* a penalty on that mode's amplitude (``mode_weights={2.63: 1e3}``,
  :func:`controllers.design.modal_weight`), and
* process noise on the modal rates of link 1 and of link 2's first mode (1e-5 (m/s)^2
  per step, :func:`controllers.design.process_noise_covariance`), so the observer
  trusts the measured tip deflections for those modes.

Robustness is the least damping of the linear closed loop over the arms of
``arm_plant_grid()``: payload 0.08, 0.1, 0.125, 0.15 kg x EI 0.9, 1.0, 1.1 of nominal
(:func:`controllers.design.robustness_scan`).  Move time and residual vibration as in
tests/test_controllers/design/test_control_arm.py (``settled_move``).

What is not met, measured: "every closed-loop mode damped > 0.02".  The 16 Hz mode
(link 1's second mode; the plant has no structural damping) is nearly unreachable from
the torques (modal input gain 0.04 against 44 for the 4.7 Hz mode): the robust design,
like the default one, leaves it almost undamped (4.4e-5 at worst, never negative on
the grid).  Penalising its amplitude too (``modal_weight(plant, 16.1)``, tried with
process noise 1e-4 on every modal rate) raised it to 0.0105 with weight 1e4 and to
0.033 with 5e4, but the phase margin at tau2 fell to 1.3 deg and 0.8 deg.  Process
noise on ``delta2_2_rate`` as well costs about 25 deg of phase margin at tau2.  So the
target is asserted for the modes below 10 Hz, the ones the torques reach, and the 16 Hz
mode is asserted not to be destabilised.
"""
from __future__ import annotations

import control as ct
import numpy as np
import pytest

from controllers.design.errors import DesignError
from controllers.design.lq import modal_weight, process_noise_covariance
from controllers.design.margins import loop_margins
from controllers.design.robustness import robustness_scan
from controllers.design.adapters import SignalNameError, linearize_arm
from controllers.laws.joint_pd import JointPDController
from controllers.design.arm_lqg import (DEFAULT_PROCESS_NOISE, MEASURED, arm_plant_grid,
    design_arm_lqg, design_arm_lqg_robust)
from controllers.laws.arm_lqg import ArmLQGController, FlexibleArmReference
from controllers.laws.trajectory import QuinticJointTrajectory
from controllers.design import (closed_loop_move, end_effector_deflection,
    peak_to_peak_2d, settled_move)
from support.models import PERTURBED, JointPDWithFeedforward

H = 1e-3
STOP = 6.0


@pytest.fixture(scope="module")
def designs():
    return {"default": design_arm_lqg(), "robust": design_arm_lqg_robust()}


@pytest.fixture(scope="module")
def grid():
    return arm_plant_grid()


def test_process_noise_by_state_name_extends_the_input_form():
    """Named inputs give B W B^T as before; a named state adds its variance on the
    diagonal; unknown names and negative variances are refused by name."""
    sampled = ct.c2d(linearize_arm(outputs=MEASURED), H)
    B = np.asarray(sampled.B)
    for by_input in (DEFAULT_PROCESS_NOISE, [1.0, 1.0]):
        np.testing.assert_allclose(process_noise_covariance(sampled, by_input), B @ B.T,
                                   rtol=1e-12, atol=0)
    W = process_noise_covariance(sampled, {**DEFAULT_PROCESS_NOISE, "delta2_1_rate": 1e-5})
    i = sampled.state_labels.index("delta2_1_rate")
    assert W[i, i] - (B @ B.T)[i, i] == pytest.approx(1e-5, rel=1e-12)
    with pytest.raises(SignalNameError, match="'delta3_1_rate'"):
        process_noise_covariance(sampled, {"delta3_1_rate": 1.0})
    with pytest.raises(DesignError, match="'delta1_1' = -1.0"):
        process_noise_covariance(sampled, {"delta1_1": -1.0})
    with pytest.raises(DesignError, match="no oscillating mode .* within 20 % of 9 Hz"):
        modal_weight(sampled, 9.0)


def test_robust_design_keeps_the_link_modes_damped_on_every_arm_of_the_grid(designs, grid):
    """Least damped closed-loop mode below 10 Hz over the 12 arms, measured: default
    -0.0037 at 2.23 Hz (payload 0.15 kg, EI -10 %: unstable); robust +0.066 at 3.10 Hz
    (0.08 kg, EI +10 %).  Over every mode the robust loop's least damped is the 16 Hz
    mode at 4.4e-5 (module docstring)."""
    default = robustness_scan(designs["default"], grid, max_frequency=10.0)
    assert default.min_damping < 0 and default.worst == (0.15, 0.9)
    assert default.least_damped[0.15, 0.9]["frequency"] == pytest.approx(2.23, abs=0.01)
    robust = robustness_scan(designs["robust"], grid, max_frequency=10.0)
    assert robust.min_damping > 0.02
    assert robust.min_damping == pytest.approx(0.066, abs=0.002)
    every_mode = robustness_scan(designs["robust"], grid)
    assert 0 < every_mode.min_damping < 1e-3
    assert every_mode.least_damped[every_mode.worst]["frequency"] > 15.0


def test_robust_design_keeps_the_margins(designs):
    """Loop at a time at the plant inputs, linear arm sampled at 1 ms; measured: tau1
    28.4 dB, -11.9 dB / 50.9 deg; tau2 21.1 dB, -17.2 dB / 56.1 deg (default: 25.9 dB /
    48.2 deg and 23.0 dB, -37.0 dB / 56.2 deg)."""
    plant = ct.c2d(linearize_arm(outputs=MEASURED), H)
    for r in loop_margins(plant, designs["robust"].statespace()):
        assert r["gain_margin_db"] >= 6 and r["gain_reduction_db"] <= -6, r
        assert r["phase_margin_deg"] >= 45, r


@pytest.fixture(scope="module")
def runs(designs):
    reference = designs["default"].to_json()        # the same reference for every loop
    robust = designs["robust"].to_json()
    out = {"PD, quintic": settled_move(closed_loop_move(JointPDController(),
                                                        QuinticJointTrajectory(), stop_time=3.5))}
    cases = [("nominal", {}, 3.5, "robust")] + [(label, arm, STOP, name)
                                              for label, arm in PERTURBED.items()
                                              for name in ("robust", "joint PD")]
    for label, arm, stop, name in cases:
        ctrl = (ArmLQGController(design=robust, reference="model") if name == "robust"
                else JointPDWithFeedforward())
        result = closed_loop_move(ctrl, FlexibleArmReference(design=reference),
                                  arm_params=arm, stop_time=stop)
        figures = settled_move(result)
        e = end_effector_deflection(result["arm.theta1"], result["arm.theta2"],
                                    result["arm.x_tip"], result["arm.y_tip"])
        figures["last_second"] = peak_to_peak_2d(e[result["time"] >= stop - 1.0])
        figures["overshoot1"] = result["arm.theta1"].max() / 0.2617993877991494 - 1
        out[label, name] = figures
    return out


@pytest.mark.slow
def test_robust_lqg_on_the_nominal_arm_meets_the_benchmark(runs):
    """Flexible-model reference, 2 s move, nominal arm; measured: move time 1.946 s
    (1.11x joint PD's 1.748 s on the quintic), residual 4.28 mm (PD 195.7 mm: 46x
    smaller)."""
    pd, lq = runs["PD, quintic"], runs["nominal", "robust"]
    assert lq["move_time"] <= 1.3 * pd["move_time"]
    assert lq["residual_vibration"] < pd["residual_vibration"] / 10
    assert lq["residual_vibration"] == pytest.approx(4.28e-3, abs=0.2e-3)


def test_robust_lqg_on_the_perturbed_arms(runs):
    """Payload 0.15 kg, EI -10 % / +10 %, the nominal flexible reference; measured (move
    time [s]; residual after it [mm]; end-effector vibration over 5-6 s [mm];
    joint-1 overshoot):

    ================  ============================  ============================
    controller        EI -10 %                      EI +10 %
    ================  ============================  ============================
    robust LQG        4.764; 0.18; 0.29; 4.4 %      2.400; 12.0; 0.087; 2.4 %
    joint PD + ff     1.947; 52.5; 78.3; 0.2 %      1.944; 10.3; 9.2; 0.0 %
    ================  ============================  ============================

    (default LQG: not settled at 6 s with EI -10 %, 34.0 mm over 5-6 s; 1.950 s, 13.9
    mm, 8.2 mm with EI +10 %; tests/test_controllers/design/test_control_lqg_robust.py.)  The link vibration
    is gone: the robust LQG now settles with EI -10 % and leaves 270x (EI -10 %) and
    105x (EI +10 %) less end-effector vibration than joint PD late in the record.  What
    it does not fix: off the model the joints overshoot the target by 2-4 % and creep
    back slowly (the model error acts like a disturbance on the 0.2 Hz regulator
    mode), so by the 2 % move-time definition the move ends later than PD's (2.4x
    with EI -10 %), and with EI +10 % the residual right after the move, 12.0 mm, is
    still above PD's 10.3 mm."""
    r = runs
    for label in PERTURBED:
        lq, pd = r[label, "robust"], r[label, "joint PD"]
        assert np.isfinite(lq["move_time"])
        assert lq["last_second"] < pd["last_second"] / 50
        assert 0.01 < lq["overshoot1"] < 0.05
    minus, plus = r["EI -10 %", "robust"], r["EI +10 %", "robust"]
    assert minus["residual_vibration"] < r["EI -10 %", "joint PD"]["residual_vibration"] / 100
    assert minus["move_time"] == pytest.approx(4.76, abs=0.05)
    assert plus["move_time"] == pytest.approx(2.40, abs=0.05)
    assert plus["residual_vibration"] == pytest.approx(12.0e-3, abs=0.5e-3)
    assert plus["residual_vibration"] > r["EI +10 %", "joint PD"]["residual_vibration"]
