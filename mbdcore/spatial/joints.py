"""Spatial joints and driving constraints on the :class:`~mbdcore.multibody.constraints.Constraint`
base (rows g, analytic Jacobian G, g_t and gamma; docs/spatial.md).

Markers are ``"body.marker"`` strings (or ``(body, location)`` pairs); ``ground`` is the
fixed body.  Joint axes are given as directions in the ground frame *at the initial
configuration* and turned into body-fixed directions when the joint is added.  Every
row is a product of two body-fixed vectors or a point difference, so with
natural-coordinate bodies every row is at most quadratic in q.

* :class:`Spherical`  3 rows: the markers coincide.
* :class:`Revolute`   5 rows: the markers coincide, the axis of b stays normal to two
  directions of a across the axis.  :meth:`Revolute.angle` is the rotation of b
  relative to a about the axis [rad], zero at the initial configuration.
* :class:`Prismatic`  5 rows (4 when b is a bar): marker b on the line of a through
  marker a, the axis of b parallel to it, and (framed b) no rotation about it: the thin
  bar sliding in the thick one stays on the line and in the plane.
* :class:`Fixed`      6 rows.
* :class:`SynchronousGear`  theta_2 - ratio theta_1 - offset = 0 between two revolute
  joints' angles (equal deployment angles with ratio 1).
* :class:`AngleDriver`  a revolute joint's angle follows motion(t).
"""
from __future__ import annotations

import math
from typing import Callable

import numpy as np

from mbdcore.blocks import ParameterError
from mbdcore.multibody.constraints import Constraint, MarkerPair
from mbdcore.multibody.system import scatter_jacobian
from mbdcore.spatial.kinematics import Scalar, dot, point, relative_angle, slope, vector

__all__ = ["Spherical", "Revolute", "Prismatic", "Fixed", "CableClamp", "SynchronousGear", "AngleDriver",
           "perpendicular_pair"]


def _direction(owner: str, label: str, value) -> np.ndarray:
    d = np.asarray(value, dtype=float)
    if d.shape != (3,) or not np.all(np.isfinite(d)) or np.linalg.norm(d) == 0.0:
        raise ParameterError(f"{owner}: {label} = {value!r} is invalid: accepted values are "
                             "non-zero finite 3-vectors (a direction in the ground frame)")
    return d / np.linalg.norm(d)


def perpendicular_pair(axis) -> tuple[np.ndarray, np.ndarray]:
    """Two unit vectors n1, n2 = axis x n1 that with the unit ``axis`` form a
    right-handed orthonormal triad."""
    e = np.asarray(axis, float)
    helper = np.eye(3)[int(np.argmin(np.abs(e)))]
    n1 = np.cross(helper, e)
    n1 /= np.linalg.norm(n1)
    return n1, np.cross(e, n1)


def _framed(body) -> bool:
    """Whether the body has directions across any axis: a rigid body, the ground, or an
    ANCF beam at any section (its r_x, r_y, r_z, ``frame_along``)."""
    return bool(getattr(body, "has_frame", False) or getattr(body, "frame_along", False))


def _carries_directions(joint: str, body, role: str) -> None:
    """Refuse a body that cannot carry a joint's direction (an ANCF cable: no frame
    about its axis), naming what does and what holds a cable end instead."""
    if not hasattr(body, "local_direction"):
        raise ParameterError(
            f"{joint}: body {body.name!r} ({type(body).__name__}) cannot carry the {role}: "
            "accepted are rigid bodies, bars, ANCF beams (a frame at every section) and "
            "the ground; to hold an ANCF cable's end on a rigid body with its direction, "
            "use a cable clamp (CableClamp, \"cable_clamp\" in a model file) and put the "
            "joint on that body")


class _MarkerPair(MarkerPair):
    """Two markers on different bodies whose rows are dot products of points and
    directions."""

    quadratic = True      # dot products of points and directions (see Constraint)

    def separation(self, view):
        """r_a - r_b as a Vec."""
        return point(view[self.a[0]], self.a[1]) - point(view[self.b[0]], self.b[1])


class Spherical(_MarkerPair):
    """Ball joint: markers ``a`` and ``b`` coincide (3 rows).  Multipliers: the reaction
    force [N] (with the sign convention G^T lambda)."""

    n_eq = 3
    kind = "spherical"

    def equation_names(self):
        return ["x", "y", "z"]

    def evaluate(self, t, view, g, G, gt, gam):
        self.separation(view).fill_rows(g, G, gam)


class Revolute(_MarkerPair):
    """Hinge about ``axis`` (ground-frame direction at the initial configuration):
    markers a and b coincide (x, y, z) and the axis fixed in one body stays normal to two
    directions across it fixed in the other (moment_1, moment_2).  One of the two bodies
    must have a frame (a rigid body, the ground or an ANCF beam, whose section at the
    marker carries the directions); a bar may be the other only when the axis runs
    along it.

    The joint angle (:meth:`angle`) is the rotation of b relative to a about the axis
    [rad], zero at the initial configuration, in (-pi, pi]."""

    n_eq = 5
    kind = "revolute"

    def __init__(self, a, b, axis=(0.0, 0.0, 1.0), name: str | None = None):
        super().__init__(a, b, name)
        self.axis = _direction(self.name, "axis", axis)

    def bind(self, system):
        super().bind(system)
        if _framed(self.a[0]):
            self.frame_side, self.other_side, self.sign = self.a, self.b, 1.0
        elif _framed(self.b[0]):
            self.frame_side, self.other_side, self.sign = self.b, self.a, -1.0
        else:
            raise ParameterError(f"{self.name}: neither {self.a[0].name!r} nor "
                                 f"{self.b[0].name!r} has a frame across the axis: a revolute "
                                 "joint needs a rigid body or the ground on one side")
        n1, n2 = perpendicular_pair(self.axis)
        fb, ob = self.frame_side[0], self.other_side[0]
        _carries_directions(self.name, ob, "hinge's axis")
        self.n1_local, self.n2_local = fb.local_direction(n1), fb.local_direction(n2)
        self.axis_local = ob.local_direction(self.axis)
        # the angle's reference: the direction n1 carried by the other body
        self.ref_local = ob.local_direction(n1) if _framed(ob) else None

    def equation_names(self):
        return ["x", "y", "z", "moment_1", "moment_2"]

    def across(self, view):
        """The two directions across the axis on the framed side (Vecs)."""
        st, loc = view[self.frame_side[0]], self.frame_side[1]
        return vector(st, loc, self.n1_local), vector(st, loc, self.n2_local)

    def evaluate(self, t, view, g, G, gt, gam):
        self.separation(view).fill_rows(g[:3], G[:3], gam[:3])
        n1, n2 = self.across(view)
        e = vector(view[self.other_side[0]], self.other_side[1], self.axis_local)
        dot(e, n1).fill(g[3:4], G[3:4], gam[3:4])
        dot(e, n2).fill(g[4:5], G[4:5], gam[4:5])

    def cosine_sine(self, view) -> tuple[Scalar, Scalar]:
        """(c, s) = (m . n1, m . n2), m the reference direction on the other body: the
        cosine and sine of the raw angle (other body relative to the framed one)."""
        if self.ref_local is None:
            raise ParameterError(f"{self.name}: the joint angle is undefined: the body "
                                 f"{self.other_side[0].name!r} has no frame across the axis")
        n1, n2 = self.across(view)
        m = vector(view[self.other_side[0]], self.other_side[1], self.ref_local)
        return dot(m, n1), dot(m, n2)

    def angle(self, view) -> Scalar:
        """Rotation of b relative to a about the axis [rad] (Scalar: value, rate,
        Jacobian parts, quad)."""
        return relative_angle(*self.cosine_sine(view)).affine(self.sign)

    def angle_value(self, q, v=None) -> float:
        """The joint angle [rad] at system coordinates q."""
        v = np.zeros_like(q) if v is None else v
        return self.angle(self.system.view(q, v)).value


class Prismatic(_MarkerPair):
    """Sliding joint along ``axis`` (ground-frame direction at the initial configuration)
    fixed in body a (which needs a frame): marker b stays on the line through marker a
    (normal_1, normal_2), b's direction along the axis stays parallel to it (moment_1,
    moment_2) and, when b has a frame, b does not turn about the axis (moment_3).  A bar
    as b slides along its own axis: the thin bar in the thick bar."""

    n_eq = 5
    kind = "prismatic"

    def __init__(self, a, b, axis=(1.0, 0.0, 0.0), name: str | None = None):
        super().__init__(a, b, name)
        self.axis = _direction(self.name, "axis", axis)

    def bind(self, system):
        super().bind(system)
        body_a, body_b = self.a[0], self.b[0]
        if not _framed(body_a):
            raise ParameterError(f"{self.name}: the line's body {body_a.name!r} has no frame "
                                 "across its axis: put the line on a rigid body or the ground")
        _carries_directions(self.name, body_b, "slider's axis")
        n1, n2 = perpendicular_pair(self.axis)
        self.n1_local, self.n2_local = body_a.local_direction(n1), body_a.local_direction(n2)
        self.axis_local = body_b.local_direction(self.axis)
        self.ref_local = body_b.local_direction(n1) if _framed(body_b) else None
        self.n_eq = 5 if self.ref_local is not None else 4

    def equation_names(self):
        names = ["normal_1", "normal_2", "moment_1", "moment_2", "moment_3"]
        return names[:self.n_eq]

    def evaluate(self, t, view, g, G, gt, gam):
        sa, sb = view[self.a[0]], view[self.b[0]]
        n1 = vector(sa, self.a[1], self.n1_local)
        n2 = vector(sa, self.a[1], self.n2_local)
        d = point(sb, self.b[1]) - point(sa, self.a[1])
        dot(d, n1).fill(g[0:1], G[0:1], gam[0:1])
        dot(d, n2).fill(g[1:2], G[1:2], gam[1:2])
        e = vector(sb, self.b[1], self.axis_local)
        dot(e, n1).fill(g[2:3], G[2:3], gam[2:3])
        dot(e, n2).fill(g[3:4], G[3:4], gam[3:4])
        if self.n_eq == 5:
            m = vector(sb, self.b[1], self.ref_local)
            dot(m, n2).fill(g[4:5], G[4:5], gam[4:5])

    def displacement(self, q) -> float:
        """Slide of marker b from marker a along the axis [m] at system coordinates q."""
        view = self.system.view(q, np.zeros_like(q))
        sa, sb = view[self.a[0]], view[self.b[0]]
        e = sa.vector(self.a[1], self.a[0].local_direction(self.axis))[0]
        return float(e @ (sb.point(self.b[1])[0] - sa.point(self.a[1])[0]))


class Fixed(_MarkerPair):
    """Weld: markers coincide and the relative orientation of the two bodies (both with a
    frame) stays as at the initial configuration (6 rows)."""

    n_eq = 6
    kind = "fixed"

    def bind(self, system):
        super().bind(system)
        body_a, body_b = self.a[0], self.b[0]
        for body in (body_a, body_b):
            if not _framed(body):
                raise ParameterError(f"{self.name}: body {body.name!r} has no frame: a fixed "
                                     "joint joins two rigid bodies (or one and the ground)")
        axes = [body_a.orientation[:, k] for k in range(3)]
        self.a_local = [body_a.local_direction(x) for x in axes]
        self.b_local = [body_b.local_direction(x) for x in axes[:2]]

    def equation_names(self):
        return ["x", "y", "z", "moment_1", "moment_2", "moment_3"]

    def evaluate(self, t, view, g, G, gt, gam):
        self.separation(view).fill_rows(g[:3], G[:3], gam[:3])
        sa, sb = view[self.a[0]], view[self.b[0]]
        a2 = vector(sa, self.a[1], self.a_local[1])
        a3 = vector(sa, self.a[1], self.a_local[2])
        x_b = vector(sb, self.b[1], self.b_local[0])
        y_b = vector(sb, self.b[1], self.b_local[1])
        dot(x_b, a2).fill(g[3:4], G[3:4], gam[3:4])
        dot(x_b, a3).fill(g[4:5], G[4:5], gam[4:5])
        dot(y_b, a3).fill(g[5:6], G[5:6], gam[5:6])


class CableClamp(_MarkerPair):
    """The end of an ANCF cable (marker ``b``, an arc length) clamped to a body with a
    frame (marker ``a``): the points coincide (x, y, z) and the cable's slope r_x stays
    along ``axis`` (ground-frame direction at the initial configuration, fixed in a's
    frame): normal to the two directions across it (moment_1, moment_2).  The cable may
    stretch at the clamp; it has no torsion to hold.  The 3D counterpart of the planar
    engine's weld of an ANCF beam's end (which fixes its slope angle)."""

    n_eq = 5
    kind = "cable_clamp"

    def __init__(self, a, b, axis=(1.0, 0.0, 0.0), name: str | None = None):
        super().__init__(a, b, name)
        self.axis = _direction(self.name, "axis", axis)

    def bind(self, system):
        super().bind(system)
        body, cable = self.a[0], self.b[0]
        if not _framed(body):
            raise ParameterError(f"{self.name}: body {body.name!r} has no frame: a cable "
                                 "clamp holds a cable end on a rigid body or the ground")
        if not hasattr(cable, "tangent0"):
            raise ParameterError(f"{self.name}: body {cable.name!r} is not an ANCF cable or "
                                 "beam (marker b must be a cable end)")
        n1, n2 = perpendicular_pair(self.axis)
        self.n1_local, self.n2_local = body.local_direction(n1), body.local_direction(n2)

    def equation_names(self):
        return ["x", "y", "z", "moment_1", "moment_2"]

    def evaluate(self, t, view, g, G, gt, gam):
        self.separation(view).fill_rows(g[:3], G[:3], gam[:3])
        sa = view[self.a[0]]
        a = slope(view[self.b[0]], self.b[1])
        dot(a, vector(sa, self.a[1], self.n1_local)).fill(g[3:4], G[3:4], gam[3:4])
        dot(a, vector(sa, self.a[1], self.n2_local)).fill(g[4:5], G[4:5], gam[4:5])


def _revolute(system, owner: str, ref) -> Revolute:
    joint = system.joint(ref) if isinstance(ref, str) else ref
    if not isinstance(joint, Revolute) or joint.system is not system:
        raise ParameterError(f"{owner}: {ref!r} is not a revolute joint of this system (add "
                             "the revolute joints first)")
    # the angle must exist; the joint's two bodies at their initial coordinates are all
    # it reads (the whole initial state per gear made a ring truss's build quadratic)
    q, v = np.zeros(system.n), np.zeros(system.n)
    for body in {id(f[0]): f[0] for f in (joint.a, joint.b)}.values():
        if body is not system.ground:
            q[body.index:body.index + body.n_coords], v[body.index:body.index + body.n_coords] \
                = body.initial_coordinates()
    joint.cosine_sine(system.view(q, v))
    return joint


class SynchronousGear(Constraint):
    """Synchronous gear between two revolute joints (patent CN107220421A; issue 14):
    theta_2 - ratio theta_1 - offset = 0, theta_k the joint angles [rad] (zero at the
    initial configuration, so ``offset`` defaults to 0).  ``ratio = 1`` keeps adjacent
    deployment angles equal.  The angles are atan2 values: the relation holds while each
    joint turns less than pi from its initial angle."""

    n_eq = 1
    kind = "gear"

    def __init__(self, joint1, joint2, ratio: float = 1.0, offset: float = 0.0,
                 name: str | None = None):
        super().__init__(name)
        self.joint1_ref, self.joint2_ref = joint1, joint2
        for label, val in (("ratio", ratio), ("offset", offset)):
            if not (isinstance(val, (int, float)) and math.isfinite(val)):
                raise ParameterError(f"{self.name}: {label} = {val!r} is invalid: accepted "
                                     "values are finite numbers")
        self.ratio, self.offset = float(ratio), float(offset)

    def bind(self, system):
        super().bind(system)
        self.joint1 = _revolute(system, self.name, self.joint1_ref)
        self.joint2 = _revolute(system, self.name, self.joint2_ref)

    def equation_names(self):
        return ["moment"]

    def angle_rows(self):
        """The row for the batched assembly: theta_2 - ratio theta_1 - offset."""
        return ("angle_sum", [(self.joint2, 1.0), (self.joint1, -self.ratio)], self.offset)

    def evaluate(self, t, view, g, G, gt, gam):
        th1 = self.joint1.angle(view)
        th2 = self.joint2.angle(view)
        rel = Scalar(th2.value - self.ratio * th1.value, 0.0,
                     th2.parts + [(s, -self.ratio * J) for s, J in th1.parts],
                     th2.quad - self.ratio * th1.quad)
        rel.fill(g, G, gam, self.offset)


class AngleDriver(Constraint):
    """Driving constraint: the angle of a revolute joint follows
    ``motion(t) -> (angle [rad], rate [rad/s], acceleration [rad/s^2])`` (the planar
    engine's :class:`~mbdcore.multibody.constraints.ConstantRate` and
    :class:`~mbdcore.multibody.constraints.PolynomialMotion` serve).  Written
    g = s cos f - c sin f = sin(theta - f) (c, s the cosine and sine of the joint angle,
    docs/spatial.md): smooth at every angle, no branch cut.  Multiplier: the driving
    torque [N m] with the sign of G^T lambda."""

    n_eq = 1
    kind = "driver"

    def __init__(self, joint, motion: Callable[[float], tuple[float, float, float]],
                 name: str | None = None):
        super().__init__(name)
        self.joint_ref = joint
        if not callable(motion):
            raise ParameterError(f"{self.name}: motion = {motion!r} must be a callable "
                                 "t -> (angle, rate, acceleration)")
        self.motion = motion

    def bind(self, system):
        super().bind(system)
        self.joint = _revolute(system, self.name, self.joint_ref)

    def equation_names(self):
        return ["torque"]

    def angle_rows(self):
        """The row for the batched assembly: s cos F - c sin F of the hinge's pair."""
        return ("driven", self.joint, self.motion)

    def evaluate(self, t, view, g, G, gt, gam):
        c, s = self.joint.cosine_sine(view)
        k = self.joint.sign                 # the raw angle is sign * theta
        f, fd, fdd = (k * float(x) for x in self.motion(t))
        cf, sf = math.cos(f), math.sin(f)
        g[0] = s.value * cf - c.value * sf
        for st, J in s.parts:
            scatter_jacobian(G[0], st, cf * J)
        for st, J in c.parts:
            scatter_jacobian(G[0], st, -sf * J)
        along = s.value * sf + c.value * cf          # rho cos(theta - f)
        across = s.value * cf - c.value * sf         # rho sin(theta - f)
        gt[0] = -fd * along
        gam[0] = -(s.quad * cf - c.quad * sf - 2.0 * fd * (s.rate * sf + c.rate * cf)
                   - fdd * along - fd * fd * across)

