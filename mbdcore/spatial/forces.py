"""Spatial force elements.  A point force needs nothing new: the planar engine's
:class:`~mbdcore.multibody.forces.PointForce` adds J^T F through the body state protocol
and works with 3-vectors.  A torque on a body has no angle coordinate to act on in
natural coordinates; it acts through the equivalent forces on the unit vectors."""
from __future__ import annotations

import numpy as np

from mbdcore.blocks import ParameterError
from mbdcore.multibody.forces import Force
from mbdcore.multibody.system import scatter_force

__all__ = ["BodyTorque"]

_AXES = np.eye(3)


class BodyTorque(Force):
    """A torque ``T(t) -> (Tx, Ty, Tz)`` [N m] in the ground frame on a body with a frame.

    Its generalised forces in natural coordinates (docs/spatial.md): with the frame
    orthonormal, omega = (u x u' + v x v' + w x w') / 2, so the power T . omega is
    sum_k (T x e_k)/2 . e_k' and the force on each unit vector e_k is (T x e_k) / 2
    (none on the point)."""

    kind = "body_torque"

    def __init__(self, body: str, torque, name=None):
        super().__init__(name)
        self.body_name = body
        if callable(torque):
            self.value, self.torque = None, torque
        else:
            value = np.asarray(torque, float)
            if value.shape != (3,) or not np.all(np.isfinite(value)):
                raise ParameterError(f"{self.name}: torque = {torque!r} must be a finite "
                                     "3-vector [N m] or a callable t -> 3-vector")
            self.value = value
            self.torque = lambda t, c=value: c

    def bind(self, system):
        super().bind(system)
        self.body = system.body(self.body_name)
        if not getattr(self.body, "has_frame", False):
            raise ParameterError(f"{self.name}: body {self.body_name!r} has no frame for a "
                                 "torque (a bar takes forces at its points)")

    def apply(self, t, view, f, inputs):
        st = view[self.body]
        T = np.asarray(self.torque(t), float)
        for k in range(3):
            e, _, J, _ = st.vector(None, _AXES[k])
            scatter_force(f, st, J, 0.5 * np.cross(T, e))
