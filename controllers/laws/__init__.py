"""Control laws as Blocks (usable in Python, in python-control and as FMUs): joint
PD with rigid feedforward, PID, computed torque, notch filter, input shaping,
quintic trajectories, LQG of the flexible arm with its flexible reference, the
antenna servo cascade."""

from controllers.laws.antenna_servo import (
    AntennaServoController,
    PointingReference,
    ServoGains,
)
from controllers.laws.arm_lqg import (
    DEFAULT_DESIGN_FILE,
    FEEDFORWARD_INPUTS,
    ArmLQGController,
    FlexibleArmReference,
    LQGDesign,
    LQGDesignError,
    LQIDesign,
    TextParameter,
    default_design_json,
    design_from_json,
    design_parameter,
    integral_state_names,
    rest_to_rest_feedforward,
)
from controllers.laws.computed_torque import ComputedTorqueController
from controllers.laws.input_shaping import (
    SHAPERS,
    ShapedQuinticTrajectory,
    convolve,
    residual_vibration_ratio,
    shaper,
)
from controllers.laws.joint_pd import JointPDController, JointTorqueLaw
from controllers.laws.notch import NotchFilter, notch_coefficients
from controllers.laws.pid import (
    ANTI_WINDUP,
    UNBOUNDED,
    PIDController,
    pid_transfer_function,
)
from controllers.laws.trajectory import QuinticJointTrajectory, quintic

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
    "LQGDesignError",
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
