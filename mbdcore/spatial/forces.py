"""Spatial force elements.  A point force needs nothing new: the planar engine's
:class:`~mbdcore.multibody.forces.PointForce` adds J^T F through the body state protocol
and works with 3-vectors.  A torque on a body has no angle coordinate to act on in
natural coordinates; it acts through the equivalent forces on the unit vectors."""
from __future__ import annotations

import numpy as np

from mbdcore.blocks import ParameterError
from mbdcore.multibody.forces import Force
from mbdcore.multibody.system import scatter_force
from mbdcore.multibody.terms import linear_element

__all__ = ["BodyTorque"]

_AXES = np.eye(3)


class BodyTorque(Force):
    """A torque [N m] in the ground frame on a body with a frame: ``torque``, a constant
    3-vector or a function ``T(t) -> (Tx, Ty, Tz)``, or ``input``, the name of a system
    input tau [N m] acting about ``axis`` (a ground-frame direction, default z): T = tau
    axis (a motor whose stator is the ground, on a hub turning about that axis).

    Its generalised forces in natural coordinates (docs/spatial.md): with the frame
    orthonormal, omega = (u x u' + v x v' + w x w') / 2, so the power T . omega is
    sum_k (T x e_k)/2 . e_k' and the force on each unit vector e_k is (T x e_k) / 2
    (none on the point)."""

    kind = "body_torque"
    input_unit = "N.m"

    def __init__(self, body: str, torque=None, input: str | None = None,
                 axis=(0.0, 0.0, 1.0), name=None):
        super().__init__(name)
        self.body_name = body
        if (torque is None) == (input is None):
            raise ParameterError(f"{self.name}: give exactly one of torque (a 3-vector [N m] "
                                 "or a callable t -> 3-vector) and input (an input's name)")
        self.value = self.axis = None
        if input is not None:
            if not (isinstance(input, str) and input):
                raise ParameterError(f"{self.name}: input = {input!r} is invalid: accepted "
                                     "values are input names")
            axis = np.asarray(axis, float)
            if axis.shape != (3,) or not np.all(np.isfinite(axis)) or not axis.any():
                raise ParameterError(f"{self.name}: axis = {axis!r} is invalid: accepted "
                                     "values are non-zero finite 3-vectors")
            self.axis = axis / np.linalg.norm(axis)
            self.input_names = (input,)
            self.torque = None
        elif callable(torque):
            self.torque = torque
        else:
            value = np.asarray(torque, float)
            if value.shape != (3,) or not np.all(np.isfinite(value)):
                raise ParameterError(f"{self.name}: torque = {torque!r} must be a finite "
                                     "3-vector [N m] or a callable t -> 3-vector")
            self.value = value
            self.torque = lambda t, c=value: c
        #: the torque [N m] the compiled element reads: constant, or written before each
        #: solve (the input times the axis, T(t) of the solve's time)
        self._now = np.array(self.value if self.value is not None else np.zeros(3))

    def bind(self, system):
        super().bind(system)
        self.body = system.body(self.body_name)
        if not getattr(self.body, "has_frame", False):
            raise ParameterError(f"{self.name}: body {self.body_name!r} has no frame for a "
                                 "torque (a bar takes forces at its points)")

    def apply(self, t, view, f, inputs):
        st = view[self.body]
        if self.axis is not None:
            T = inputs[self.input_names[0]] * self.axis
        else:
            T = np.asarray(self.torque(t), float)
        for k in range(3):
            e, _, J, _ = st.vector(None, _AXES[k])
            scatter_force(f, st, J, 0.5 * np.cross(T, e))

    def compiled_element(self):
        """On a body whose unit vectors are linear in q (natural coordinates: they are
        coordinates) the forces (T x e_k)/2 are f = sum_j T_j (B_j q + b_j), B_j = sum_k
        J_k^T [a_j]x J_k / 2 over the vectors' Jacobians J_k and the ground axes a_j, T
        the constant torque or, written before each solve (:meth:`load_solve`), the
        input times the axis or T(t); None on a body whose vectors are not linear in q."""
        body = self.body
        if body.index is None or not getattr(body, "points_linear", False):
            return None
        n = body.n_coords
        zeros = np.zeros(n)
        st = body.state(zeros, zeros)
        B, b = np.zeros((3, n, n)), np.zeros((3, n))
        for j, axis in enumerate(_AXES):
            cross = np.array([np.cross(axis, e) for e in _AXES]).T   # [a]x x = a x x
            for k in range(3):
                e, _, J, _ = st.vector(None, _AXES[k])
                B[j] += 0.5 * J.T @ cross @ J
                b[j] += 0.5 * J.T @ np.cross(axis, e)
        cols = [k for k in range(n) if B[:, :, k].any() or B[:, k, :].any() or b[:, k].any()]
        return linear_element([body.index + k for k in cols], B[:, cols][:, :, cols],
                              b[:, cols], self._now)

    def load_solve(self, t, inputs) -> None:
        if self.axis is not None:
            self._now[:] = inputs[self.input_names[0]] * self.axis
        elif self.value is None:
            self._now[:] = self.torque(t)

    def compiled_per_solve(self) -> bool:
        return self.value is None
