"""One residual vibration (issue 13, item 28): the same move gives one number in the
demo's figures, the examples', the sweep's and settled_move's
(controllers.evaluation.validation: the end effector's peak-to-peak deflection over the
second after the joints settle)."""
from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from controllers.design.tuning import evaluate_move
from controllers.evaluation.validation import (
    closed_loop_move,
    move_report,
    settled_move,
    validate_move,
)
from controllers.laws.joint_pd import JointPDController
from controllers.laws.trajectory import QuinticJointTrajectory
from flexcosim.demo import demo_metrics
from mbdcore.models.antenna import DeploymentResult
from mbdcore.vibration import residual_vibration
from support import EXAMPLES



def load_example(name):
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_the_residual_vibration_of_a_move_is_one_number_wherever_it_is_printed(capsys):
    """The default joint-PD move (2 s quintic, 1 ms Jacobi steps): the demo's figures,
    the input-shaping example's, the sweep's and settled_move all give one number."""
    result = closed_loop_move(JointPDController(), QuinticJointTrajectory(), stop_time=3.0)
    one = settled_move(result)["residual_vibration"]
    assert 0.15 < one < 0.25                        # ~20 cm p-p: PD does not damp the links
    assert demo_metrics(result)["residual_vibration"] == one
    assert move_report(result, 2.0)["residual_vibration"] == one
    shaping = load_example("manipulator_input_shaping")
    assert shaping.report_move("PD", result, 2.0)["residual_vibration"] == one
    assert f"{1000 * one:.2f} mm" in capsys.readouterr().out
    swept = evaluate_move({})                       # the sweep's case: the same move
    assert swept["residual_vibration"] == pytest.approx(one, rel=1e-9)


def test_the_antennas_residual_vibration_is_the_same_function():
    """DeploymentResult.residual_vibration is mbdcore.vibration.residual_vibration of the
    transverse tip motion over the last seconds (it had its own copy)."""
    t = np.linspace(0.0, 10.0, 1001)
    tip = np.column_stack([np.ones_like(t), 0.01 * np.exp(-0.2 * t) * np.sin(2 * np.pi * t)])
    z = np.zeros((len(t), 1))
    r = DeploymentResult(t, z, t * 0, t * 0, t * 0, tip, t * 0, None)
    for window in (1.0, 5.0):
        assert r.residual_vibration(window) == residual_vibration(t, tip[:, 1], window=window)
    assert r.residual_vibration(5.0) == pytest.approx(np.ptp(tip[t >= 5.0, 1]))


def test_a_move_is_measured_against_its_own_reference():
    """validate_move, and evaluate_move through it, measure a move against the target of
    its reference (evaluate_move measured every move against the default 15/10 deg
    target: a move to 0.1/0.05 rad came out 62 % and 72 % short)."""
    r = evaluate_move({"ref": {"theta1_end": 0.1, "theta2_end": 0.05, "move_time": 0.5,
                               "shaper": "none"}, "step": 2e-3})
    assert abs(r["final_error1"]) < 0.1 and abs(r["final_error2"]) < 0.1
    assert r["move_end"] == 0.5


def test_validate_move_refuses_what_is_not_a_move():
    with pytest.raises(ValueError, match="rest-to-rest joint move"):
        validate_move(JointPDController(), JointPDController())
    with pytest.raises(ValueError, match="step = 0"):
        validate_move(JointPDController(), QuinticJointTrajectory(), step=0)
