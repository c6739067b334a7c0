"""Control laws as Blocks (usable in Python, in python-control and as FMUs): joint
PD with rigid feedforward, PID, computed torque, notch filter, input shaping,
quintic trajectories, LQG of the flexible arm with its flexible reference, the
antenna servo cascade."""

from controllers.laws.trajectory import (quintic, QuinticJointTrajectory)
from controllers.laws.joint_pd import (JointTorqueLaw, JointPDController)
from controllers.laws.computed_torque import (ComputedTorqueController)
from controllers.laws.pid import (ANTI_WINDUP, UNBOUNDED, pid_transfer_function,
    PIDController)
from controllers.laws.notch import (notch_coefficients, NotchFilter)
from controllers.laws.input_shaping import (SHAPERS, shaper, convolve,
    residual_vibration_ratio, ShapedQuinticTrajectory)
from controllers.laws.arm_lqg import (DesignError, LQGDesign, LQIDesign, integral_state_names,
    design_from_json, DEFAULT_DESIGN_FILE, default_design_json, TextParameter,
    FEEDFORWARD_INPUTS, design_parameter, ArmLQGController, rest_to_rest_feedforward,
    FlexibleArmReference)
from controllers.laws.antenna_servo import (ServoGains, AntennaServoController,
    PointingReference)

__all__ = [
    "quintic",
    "QuinticJointTrajectory",
    "JointTorqueLaw",
    "JointPDController",
    "ComputedTorqueController",
    "ANTI_WINDUP",
    "UNBOUNDED",
    "pid_transfer_function",
    "PIDController",
    "notch_coefficients",
    "NotchFilter",
    "SHAPERS",
    "shaper",
    "convolve",
    "residual_vibration_ratio",
    "ShapedQuinticTrajectory",
    "DesignError",
    "LQGDesign",
    "LQIDesign",
    "integral_state_names",
    "design_from_json",
    "DEFAULT_DESIGN_FILE",
    "default_design_json",
    "TextParameter",
    "FEEDFORWARD_INPUTS",
    "design_parameter",
    "ArmLQGController",
    "rest_to_rest_feedforward",
    "FlexibleArmReference",
    "ServoGains",
    "AntennaServoController",
    "PointingReference",
]
