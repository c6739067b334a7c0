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

from dataclasses import dataclass
from functools import cache, cached_property
from pathlib import Path

import numpy as np

from mbdcore.models.manipulator import ARM_PARAMETERS
from mbdcore.cbuild import TABLE_LAYOUT_HEADER
from mbdcore.native import TableLayout, kernel_library, table_layout

__all__ = ["RigidTwoLinkArm", "RIGID_PARAMETER_NAMES", "RIGID_ARM_PARAMETERS",
           "RIGID_ARM_C_SOURCE", "rigid_layout"]

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

    @cached_property
    def c_parameters(self) -> np.ndarray:
        """The parameters of ``native/rigid_arm.c`` (``RIGID_LAYOUT``, by name)."""
        return rigid_layout().pack(l1=self.l1, i_a=self.i_a, m_b=self.m_b, s_b=self.s_b,
                                   i_b=self.i_b)

    def _terms(self, theta, omega):
        M, c = np.empty(4), np.empty(2)
        _rigid_library().rigid_arm_terms(self.c_parameters, _vec2(theta), _vec2(omega), M, c)
        return M.reshape(2, 2), c

    def mass_matrix(self, theta) -> np.ndarray:
        """M(theta) [kg m^2], shape (2, 2)."""
        return self._terms(theta, (0.0, 0.0))[0]

    def velocity_torques(self, theta, omega) -> np.ndarray:
        """c(theta, theta') [N m]: Coriolis and centrifugal terms."""
        return self._terms(theta, omega)[1]

    def accelerations(self, theta, omega, tau) -> np.ndarray:
        """theta'' [rad/s^2] for joint torques tau [N m] (forward dynamics)."""
        M, c = self._terms(theta, omega)
        return np.linalg.solve(M, np.asarray(tau, float) - c)

    def inverse_dynamics(self, theta, omega, alpha) -> np.ndarray:
        """Joint torques [N m] that produce accelerations alpha [rad/s^2]."""
        tau = np.empty(2)
        _rigid_library().rigid_arm_inverse_dynamics(self.c_parameters, _vec2(theta),
                                                    _vec2(omega), _vec2(alpha), tau)
        return tau


#: The rigid arm's equations in C (one implementation; also compiled into C FMUs).
RIGID_ARM_C_SOURCE = Path(__file__).resolve().parent / "native" / "rigid_arm.c"
_rigid_library = kernel_library("mbdcore.models._rigid_arm", RIGID_ARM_C_SOURCE,
                                (TABLE_LAYOUT_HEADER,))


@cache
def rigid_layout() -> TableLayout:
    """The layout of the rigid arm's parameters, ``RIGID_LAYOUT`` of rigid_arm.c."""
    return table_layout(_rigid_library, "RIGID_LAYOUT")


def _vec2(v) -> np.ndarray:
    return np.ascontiguousarray(np.asarray(v, dtype=float).reshape(2))
