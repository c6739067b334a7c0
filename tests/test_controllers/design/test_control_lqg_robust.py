"""Integral action in the arm's LQG, and the LQG on an arm that differs from its model.

Integral action (``design_arm_lqg(integrated=INTEGRATED)``): integrators of the joint-angle
error are states of the LQR design.  A constant disturbance torque ``d`` at the joints
then leaves no joint offset at rest; without them the offset is the closed loop's static
gain from ``d`` to the joint angles (the arm moves in the horizontal plane, so at rest
the links are straight and the applied torque is zero: the nonlinear equilibrium is the
linear one).

Robustness: the flexible-model reference (:class:`FlexibleArmReference`, designed on the
nominal arm) drives the LQG (with and without integrators) and joint PD with the same
feedforward torques on an arm with a 50 % heavier payload and link stiffness EI -10 % or
+10 %.  Move time and residual vibration as in tests/test_controllers/design/test_control_arm.py
(``settled_move``); also the end-effector vibration over the last second of the record.
"""
from __future__ import annotations

import control as ct
import numpy as np
import pytest

from controllers.laws.arm_lqg import LQIDesign, design_from_json
from controllers.design.margins import loop_margins
from controllers.design.realization import modal_table
from controllers.design.adapters import linearize_arm
from controllers.laws.arm_lqg import ArmLQGController, FlexibleArmReference
from controllers.design.arm_lqg import INTEGRATED, MEASURED, design_arm_lqg
from controllers.laws.trajectory import QuinticJointTrajectory
from controllers.design import (closed_loop_move, end_effector_deflection,
    peak_to_peak_2d, settled_move)

from support.models import PERTURBED, JointPDWithFeedforward

H = 1e-3
DISTURBANCE = np.array([0.2, 0.1])          # [N m] at joints 1, 2
HOLD = {"theta1_end": 0.0, "theta2_end": 0.0}
STOP = 6.0


@pytest.fixture(scope="module")
def designs():
    return {"lqg": design_arm_lqg(), "lqi": design_arm_lqg(integrated=INTEGRATED)}


def static_gain(design, **arm):
    """Closed-loop DC gain from a torque disturbance at the plant input to the joint
    angles [rad/(N m)], on the linear arm sampled at the design's step."""
    plant = ct.c2d(linearize_arm(outputs=MEASURED, **arm), design.dt)
    return np.real(ct.feedback(plant, design.statespace(), sign=1).dcgain())[:2]


class DisturbedLQG(ArmLQGController):
    """The LQG whose torques reach the arm with DISTURBANCE added (the controller's
    observer sees only its own command)."""

    def outputs(self) -> dict:
        tau = self._torques() + DISTURBANCE
        return {"tau1": float(tau[0]), "tau2": float(tau[1])}


def test_integrators_keep_the_margins_and_zero_the_static_gain(designs):
    """Loop at a time at the plant inputs on the linear arm sampled at 1 ms.  Measured:
    without integrators 25.9 dB / 48.2 deg (tau1), 23.0 dB / 56.2 deg (tau2); with them
    25.6 dB, -32.5 dB / 47.1 deg (tau1) and 22.6 dB, -23.2 dB / 55.4 deg (tau2) (the
    integrators add a downward gain margin).  Static gain disturbance -> joints without
    integrators [[0.0509, -0.0173], [0.0259, 0.0300]] rad/(N m); with them zero."""
    lqi = designs["lqi"]
    assert isinstance(lqi, LQIDesign) and lqi.integrated == ["theta1", "theta2"]
    assert design_from_json(lqi.to_json()) == lqi
    plant = ct.c2d(linearize_arm(outputs=MEASURED), H)
    for r in loop_margins(plant, lqi.statespace()):
        assert r["gain_margin_db"] >= 6 and r["gain_reduction_db"] <= -6, r
        assert r["phase_margin_deg"] >= 45, r
    poles = np.array([complex(*p) for p in lqi.info["regulator_poles"]])
    assert np.abs(poles).max() < 1.0 and len(poles) == 14
    G = static_gain(designs["lqg"])
    np.testing.assert_allclose(G, [[0.0509, -0.0173], [0.0259, 0.0300]], atol=1e-4)
    assert np.abs(static_gain(lqi)).max() < 1e-9 * np.abs(G).max()


def test_constant_disturbance_torque_leaves_no_joint_offset_with_integrators(designs):
    """Arm held at theta = 0, a constant disturbance of (0.2, 0.1) N m from t = 0, 8 s.
    Without integrators the joints settle at the static gain's offset G d = (8.452,
    8.185) mrad: measured mean over the last second (8.426, 8.165) mrad, 0.3 % short
    (a slow mode still converging); with them the offset is gone: measured at most
    0.017 mrad over the last second, 0.2 % of G d."""
    offsets = {}
    for name, design in designs.items():
        result = closed_loop_move(DisturbedLQG(design=design.to_json()),
                                  QuinticJointTrajectory(**HOLD), stop_time=8.0)
        last = result["time"] >= 7.0
        offsets[name] = np.array([result[f"arm.theta{i}"][last] for i in (1, 2)])
    predicted = static_gain(designs["lqg"]) @ DISTURBANCE
    np.testing.assert_allclose(offsets["lqg"].mean(axis=1), predicted, rtol=5e-3)
    assert np.all(np.abs(offsets["lqi"]).max(axis=1) < 0.005 * np.abs(predicted))


def test_anti_windup_holds_the_integrators_while_a_torque_is_at_its_limit(designs):
    """Conditional integration, one step of the block (the torque depends on the
    estimate and the integrators, the integrators on the measured error): joint 1
    estimated and measured 0.5 rad behind asks for more than tau_max1 and integrating
    would ask for more still, so z keeps its value; 1 mrad behind, unsaturated, the
    step adds dt e to z."""
    ctrl = ArmLQGController(design=designs["lqi"].to_json())
    theta1 = ctrl.design.states.index("theta1")
    hold = dict.fromkeys(ctrl.input_names(), 0.0)
    for behind, integrates in ((0.5, False), (1e-3, True)):
        ctrl.reset()
        ctrl.xh[theta1] = -behind
        ctrl.set_inputs({**hold, "theta1": -behind})
        saturated = ctrl.outputs()["tau1"] == ctrl.params["tau_max1"]
        assert saturated != integrates
        ctrl.do_step(0.0, H)
        np.testing.assert_allclose(ctrl.z, [-H * behind if integrates else 0.0, 0.0],
                                   rtol=1e-12, atol=0)


def test_linear_lqg_loses_its_damping_on_the_perturbed_arm(designs):
    """The LQG's observer barely corrects the 2.63 Hz mode (observer pole damping
    0.008): on the arm with payload 0.15 kg that mode is at 2.34 Hz (EI -10 %: 2.25 Hz)
    and the estimate lags it.  Measured, least damped closed-loop mode below 10 Hz on
    the linear arm: LQG -0.0037 at 2.23 Hz (unstable) with EI -10 %, +0.0072 at 2.46 Hz
    with EI +10 % (with the integrators -0.0047 and +0.0070); joint PD leaves that mode
    undamped (0.000) on every arm, so neither feedback damps it."""
    lqg = designs["lqg"]
    least = {}
    for label, arm in PERTURBED.items():
        plant = ct.c2d(linearize_arm(outputs=MEASURED, **arm), H)
        modes = [m for m in modal_table(ct.feedback(plant, lqg.statespace(), sign=1))
                 if m["frequency"] < 10]
        least[label] = min(modes, key=lambda m: m["damping"])
    assert least["EI -10 %"]["damping"] < 0
    assert 0 < least["EI +10 %"]["damping"] < 0.01


@pytest.fixture(scope="module")
def perturbed_runs(designs):
    nominal = designs["lqg"].to_json()
    controllers = {
        "LQG": lambda: ArmLQGController(design=nominal, reference="model"),
        "LQG + integrators": lambda: ArmLQGController(design=designs["lqi"].to_json(),
                                                      reference="model"),
        "joint PD": JointPDWithFeedforward,
    }
    out = {}
    for label, arm in PERTURBED.items():
        for name, make in controllers.items():
            result = closed_loop_move(make(), FlexibleArmReference(design=nominal),
                                      arm_params=arm, stop_time=STOP)
            try:
                figures = settled_move(result)
            except ValueError:                       # settled, but too late for the window
                figures = {"move_time": np.inf, "residual_vibration": np.inf}
            e = end_effector_deflection(result["arm.theta1"], result["arm.theta2"],
                                        result["arm.x_tip"], result["arm.y_tip"])
            figures["last_second"] = peak_to_peak_2d(e[result["time"] >= STOP - 1.0])
            out[label, name] = figures
    return out


@pytest.mark.slow
def test_perturbed_arm_lqg_against_joint_pd_on_the_same_reference(perturbed_runs):
    """Payload 0.1 -> 0.15 kg and EI -10 % / +10 %, flexible reference of the nominal
    model, 2 s move; measured (move time [s]; residual vibration after it [mm];
    end-effector vibration over 5-6 s [mm]):

    ==================  =======================  =======================
    controller          EI -10 %                 EI +10 %
    ==================  =======================  =======================
    LQG                 not settled; -; 34.0     1.950; 13.9; 8.2
    LQG + integrators   not settled; -; 33.2     1.948; 15.4; 8.4
    joint PD            1.947; 52.5; 78.3        1.944; 10.3; 9.2
    ==================  =======================  =======================

    ("not settled": a joint is outside the 2 % band at 6 s.)  On the nominal arm both
    take 1.945 s, LQG 3.8 mm, PD 4.0 mm.  So the expectation that the feedback beats
    joint PD off the design model does not hold for this design: with EI -10 % its
    joints keep swinging through the 2 % band (the mode that the linear test above
    finds unstable), with EI +10 % it arrives as fast but leaves 1.35x more residual
    vibration than PD.  It only damps the end effector better late in the record
    (2.3x less than PD over 5-6 s with EI -10 %, 1.1x with EI +10 %).  The
    integrators change little: the reference leaves no constant error for them."""
    r = perturbed_runs
    for label in PERTURBED:
        assert r[label, "joint PD"]["move_time"] < 2.0
        assert r[label, "LQG"]["last_second"] < r[label, "joint PD"]["last_second"]
    assert r["EI -10 %", "LQG"]["move_time"] == np.inf
    assert r["EI -10 %", "LQG + integrators"]["move_time"] == np.inf
    assert r["EI +10 %", "LQG"]["move_time"] < 2.0
    assert r["EI +10 %", "LQG"]["residual_vibration"] > r["EI +10 %", "joint PD"]["residual_vibration"]


def test_integral_lqg_as_fmu_equals_the_block(designs, tmp_path):
    """The integrators are FMU state like the estimate: block and FMU agree to 1e-12."""
    from fmu.fmi.build import build_fmu
    from fmu.cosim.fmu_component import FMUComponent

    fmu = build_fmu(ArmLQGController, tmp_path, model_name="ArmLQGControllerIntegral")
    params = {"design": designs["lqi"].to_json(), "reference": "model"}
    reference = designs["lqg"].to_json()
    block = ArmLQGController(**params)
    runs = [closed_loop_move(ctrl, FlexibleArmReference(design=reference), stop_time=0.5)
            for ctrl in (block, FMUComponent("ctrl", fmu, parameters=params))]
    assert np.abs(block.z).max() > 0
    for name in ("arm.theta1", "arm.w1", "ctrl.tau1", "ctrl.tau2"):
        np.testing.assert_allclose(runs[1][name], runs[0][name], rtol=0, atol=1e-12)
