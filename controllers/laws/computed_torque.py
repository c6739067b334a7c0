"""Computed torque (inverse dynamics) control of the two-link arm on its rigid model."""
from __future__ import annotations

import numpy as np

from controllers.laws.joint_pd import JointTorqueLaw
from mbdcore.blocks import Parameter, VectorState
from mbdcore.models.rigid_arm import RIGID_ARM_PARAMETERS, RigidTwoLinkArm

__all__ = ["ComputedTorqueController"]


class ComputedTorqueController(JointTorqueLaw):
    """tau = sat( M(theta) (alpha_ref + Kp e + Kd e') + c(theta, omega) ),
    e = theta_ref - theta, with ``Kp = wn^2``, ``Kd = 2 zeta wn`` per joint.

    ``M`` and ``c`` are the rigid two-link arm (:class:`~mbdcore.models.rigid_arm.RigidTwoLinkArm`)
    with the inertias of the flexible arm (parameters with the arm's names, SI units).
    On that rigid arm, without saturation, the error of each joint obeys exactly
    ``e'' + 2 zeta wn e' + wn^2 e = 0``; on the flexible arm the links' deflection is
    the model error.  Static law: the torques depend directly on the inputs.
    """

    PARAMETERS = (
        Parameter("wn1", 6.0, "rad/s", "error dynamics natural frequency, joint 1", min=0.0),
        Parameter("zeta1", 1.0, "", "error dynamics damping ratio, joint 1", min=0.0),
        Parameter("wn2", 6.0, "rad/s", "error dynamics natural frequency, joint 2", min=0.0),
        Parameter("zeta2", 1.0, "", "error dynamics damping ratio, joint 2", min=0.0),
        Parameter("tau_max1", 2.0, "N.m", "torque limit, joint 1", min=0.0, exclusive_min=True),
        Parameter("tau_max2", 1.0, "N.m", "torque limit, joint 2", min=0.0, exclusive_min=True),
    ) + RIGID_ARM_PARAMETERS

    def __init__(self, **params):
        super().__init__(**params)
        p = self.params
        self.rigid = RigidTwoLinkArm.from_flexible(**p)
        wn = np.array([p["wn1"], p["wn2"]])
        self.kp = wn**2
        self.kd = 2.0 * np.array([p["zeta1"], p["zeta2"]]) * wn
        self.tau_max = np.array([p["tau_max1"], p["tau_max2"]])

    def torques(self, ref_theta, ref_omega, ref_alpha, theta, omega) -> np.ndarray:
        """The control law on arrays (rad, rad/s, rad/s^2 in; N m out)."""
        theta, omega = np.asarray(theta, float), np.asarray(omega, float)
        alpha = (np.asarray(ref_alpha, float) + self.kp * (np.asarray(ref_theta) - theta)
                 + self.kd * (np.asarray(ref_omega) - omega))
        tau = self.rigid.inverse_dynamics(theta, omega, alpha)
        return np.clip(tau, -self.tau_max, self.tau_max)

    def vector_state(self):

        return VectorState([], lambda b: np.zeros(0), lambda b, x: None)
