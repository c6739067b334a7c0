"""Closed-form rigid two-link planar arm (horizontal plane, no gravity).

Two rigid bodies turning about parallel axes:

* body A turns with theta1 about joint 1: mass ``m_a`` [kg], first moment ``s_a``
  [kg m] and inertia ``i_a`` [kg m^2] about joint 1 (link 1, its hub, the joint-2
  hub mass and the joint-2 stator);
* body B turns with theta1 + theta2 about joint 2 at distance ``l1`` [m]: mass ``m_b``,
  first moment ``s_b`` about joint 2 along link 2 and inertia ``i_b`` about joint 2
  (link 2, the joint-2 rotor and the payload).

Lagrange's equations give the textbook form M(theta) theta'' + c(theta, theta') = tau:

    M11 = i_a + i_b + m_b l1^2 + 2 s_b l1 cos theta2,  M12 = i_b + s_b l1 cos theta2,
    M22 = i_b,
    c1 = -s_b l1 sin theta2 (2 theta1' theta2' + theta2'^2),  c2 = s_b l1 sin theta2 theta1'^2.

Used for the rigid limit of the flexible arm and by computed-torque / feedforward
controllers.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from mbdcore.models.manipulator import ARM_PARAMETERS

__all__ = ["RigidTwoLinkArm", "RIGID_PARAMETER_NAMES", "RIGID_ARM_PARAMETERS"]

#: The flexible arm's parameters that its rigid counterpart uses (lengths and inertias).
RIGID_PARAMETER_NAMES = ("l1", "l2", "rho_a1", "rho_a2", "j_h1", "j_h2", "m_h2", "j_s", "m_p", "j_p")
#: Those parameters as declared by the flexible arm (for blocks built on the rigid model).
RIGID_ARM_PARAMETERS = tuple(p for p in ARM_PARAMETERS if p.name in RIGID_PARAMETER_NAMES)
_RIGID_DEFAULTS = {p.name: p.default for p in RIGID_ARM_PARAMETERS}


@dataclass(frozen=True)
class RigidTwoLinkArm:
    """Inertial data of the rigid arm (see module docstring for the symbols)."""

    l1: float
    i_a: float
    m_b: float
    s_b: float
    i_b: float

    @classmethod
    def from_flexible(cls, **params) -> "RigidTwoLinkArm":
        """The rigid arm with the inertias of the flexible arm
        (:data:`~mbdcore.models.manipulator.ARM_PARAMETERS`: same names, defaults and SI
        units); the beam parameters (EI, number of modes, ...) are ignored."""
        p = {**_RIGID_DEFAULTS, **{k: v for k, v in params.items() if k in _RIGID_DEFAULTS}}
        l1, l2, rho_a1, rho_a2 = p["l1"], p["l2"], p["rho_a1"], p["rho_a2"]
        j_h1, j_h2, m_h2, j_s, m_p, j_p = (p[k] for k in ("j_h1", "j_h2", "m_h2", "j_s", "m_p", "j_p"))
        m1, m2 = rho_a1 * l1, rho_a2 * l2
        i_a = j_h1 + m1 * l1**2 / 3.0 + m_h2 * l1**2 + j_s
        m_b = m2 + m_p
        s_b = m2 * l2 / 2.0 + m_p * l2
        i_b = j_h2 + m2 * l2**2 / 3.0 + m_p * l2**2 + j_p
        return cls(l1=l1, i_a=i_a, m_b=m_b, s_b=s_b, i_b=i_b)

    def mass_matrix(self, theta) -> np.ndarray:
        """M(theta) [kg m^2], shape (2, 2)."""
        c = self.s_b * self.l1 * math.cos(theta[1])
        m11 = self.i_a + self.i_b + self.m_b * self.l1**2 + 2.0 * c
        m12 = self.i_b + c
        return np.array([[m11, m12], [m12, self.i_b]])

    def velocity_torques(self, theta, omega) -> np.ndarray:
        """c(theta, theta') [N m]: Coriolis and centrifugal terms."""
        s = self.s_b * self.l1 * math.sin(theta[1])
        return np.array([-s * (2.0 * omega[0] * omega[1] + omega[1] ** 2), s * omega[0] ** 2])

    def accelerations(self, theta, omega, tau) -> np.ndarray:
        """theta'' [rad/s^2] for joint torques tau [N m] (forward dynamics)."""
        return np.linalg.solve(self.mass_matrix(theta),
                               np.asarray(tau, float) - self.velocity_torques(theta, omega))

    def inverse_dynamics(self, theta, omega, alpha) -> np.ndarray:
        """Joint torques [N m] that produce accelerations alpha [rad/s^2]."""
        return self.mass_matrix(theta) @ np.asarray(alpha, float) + self.velocity_torques(theta, omega)
