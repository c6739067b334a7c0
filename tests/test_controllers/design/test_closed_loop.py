"""The one way an arm's closed loop is built and run (``arm_closed_loop``,
``closed_loop_move``), which the demo uses too (issue 26: it kept a copy)."""
from __future__ import annotations

import numpy as np
import pytest

from controllers.evaluation.validation import arm_closed_loop, closed_loop_move
from controllers.laws.joint_pd import JointPDController
from controllers.laws.trajectory import QuinticJointTrajectory
from fmu.cosim.components import BlockComponent
from mbdcore.models.manipulator import FlexibleManipulatorBlock

STOP = 0.05


def test_an_arm_given_runs_as_the_arm_of_its_parameters():
    """``arm=`` (a Block or a Component) is the arm ``arm_params`` would build: the same
    record; both at once is refused, naming them."""
    heavy = {"m_p": 0.15}
    by_params = closed_loop_move(JointPDController(), QuinticJointTrajectory(), heavy,
                                 stop_time=STOP)
    given = closed_loop_move(JointPDController(), QuinticJointTrajectory(), stop_time=STOP,
                             arm=BlockComponent("arm", FlexibleManipulatorBlock(**heavy)))
    assert by_params.names == given.names
    np.testing.assert_array_equal(by_params.data, given.data)
    assert np.abs(given["arm.theta1"]).max() > 0.0
    with pytest.raises(ValueError, match="arm_params or arm"):
        closed_loop_move(JointPDController(), QuinticJointTrajectory(), heavy,
                         arm=FlexibleManipulatorBlock())


def test_the_loop_is_wired_by_name():
    """The reference feeds what the controller takes, the arm the measurements the
    controller takes (the PD: joint angles and rates, not the tip deflections), the
    controller's torques drive the arm."""
    system = arm_closed_loop(JointPDController(), QuinticJointTrajectory())
    source = dict(system.connections)                     # {input: the output feeding it}
    assert source["arm.tau1"] == "ctrl.tau1" and source["arm.tau2"] == "ctrl.tau2"
    assert source["ctrl.theta1_ref"] == "ref.theta1_ref"
    assert source["ctrl.omega2"] == "arm.omega2" and "arm.w1" not in source.values()
    assert [c.name for c in system.components] == ["ref", "ctrl", "arm"]
