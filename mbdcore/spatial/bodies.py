"""Spatial rigid bodies in natural coordinates (docs/spatial.md).

A rigid body is described by one point and three unit vectors fixed in it (García de
Jalón & Bayo, *Kinematic and Dynamic Simulation of Multibody Systems*, Springer 1994,
ch. 3 and 5): ``q = (r0, u, v, w)``, 12 coordinates, r0 the origin of the body frame [m]
and u, v, w its axes in the ground frame (dimensionless).  Every point and every
body-fixed direction is *linear* in q,

    r(s) = r0 + s1 u + s2 v + s3 w = C(s) q,      C(s) = [I, s1 I, s2 I, s3 I],

so velocities are C q', accelerations C q'' with no velocity-quadratic term, and the
mass matrix ``M = Z (x) I3`` is constant, Z the 4 x 4 matrix of the body's mass, first
and second moments about r0.  The price: six constraints keep u, v, w orthonormal
(:class:`RigidFrameConstraint`, added with the body).

The reduced variant for bars (:class:`SlenderBar`): two points, 6 coordinates, one length
constraint; a bar has no spin about its axis, so no frame across it.

State protocol (shared with the spatial ANCF bodies): ``state(qb, vb).point(location)``
-> ``(r, r', J, quad)`` with r'' = J q'' + quad (shapes (3,), (3,), (3, n_coords), (3,));
``vector(location, a)`` the same for a body-fixed direction with local components a.
"""
from __future__ import annotations

import math

import numpy as np

from mbdcore.blocks import ParameterError
from mbdcore.multibody.constraints import Constraint
from mbdcore.multibody.system import BodyBase, BodyState, finite_array, scatter_jacobian
from mbdcore.multibody.terms import CompiledForces
from mbdcore.spatial.kinematics import dot, point

__all__ = ["RigidBody3D", "RigidState3D", "SlenderBar", "BarState", "RigidFrameConstraint",
           "BarLengthConstraint", "ORTHONORMAL_TOLERANCE", "natural_mass_moments"]

I3 = np.eye(3)
#: largest |A^T A - I| entry accepted for an initial orientation matrix
ORTHONORMAL_TOLERANCE = 1e-9


def _positive(body: str, label: str, value, unit: str) -> float:
    ok = isinstance(value, (int, float)) and math.isfinite(value) and value > 0.0
    if not ok:
        raise ParameterError(f"body {body!r}: {label} = {value!r} is invalid: accepted values "
                             f"are finite numbers > 0 ({unit})")
    return float(value)


def natural_mass_moments(mass: float, center, inertia) -> np.ndarray:
    """The 4 x 4 matrix Z = integral of rho b b^T dV, b = (1, s1, s2, s3), of a rigid body
    of ``mass`` [kg] with centre of mass ``center`` [m] and inertia tensor ``inertia``
    [kg m^2] about the centre of mass, both in the body frame (docs/spatial.md).

    Z = [[m, m c^T], [m c, m c c^T + S]] with S = tr(I)/2 1 - I the second-moment tensor
    of the mass about the centre of mass."""
    c = np.asarray(center, float)
    S = 0.5 * np.trace(inertia) * I3 - inertia
    Z = np.empty((4, 4))
    Z[0, 0] = mass
    Z[0, 1:] = Z[1:, 0] = mass * c
    Z[1:, 1:] = mass * np.outer(c, c) + S
    return Z


class RigidState3D(BodyState):
    """Kinematics of a natural-coordinate rigid body in one state: every point and
    direction is linear in q (quad = 0)."""

    __slots__ = ("body", "index", "r0", "A", "r0d", "Ad")

    def __init__(self, body: "RigidBody3D", qb, vb):
        self.body = body
        self.index = body.index
        if body.is_ground:
            self.r0, self.A = body.position, body.orientation
            self.r0d, self.Ad = np.zeros(3), np.zeros((3, 3))
        else:
            self.r0 = qb[0:3]
            self.A = qb[3:12].reshape(3, 3).T          # columns u, v, w
            self.r0d = vb[0:3]
            self.Ad = vb[3:12].reshape(3, 3).T

    def point(self, s):
        J = _natural_jacobian(1.0, s) if self.index is not None else _NO_COLUMNS
        return self.r0 + self.A @ s, self.r0d + self.Ad @ s, J, _ZERO3

    def vector(self, location, a):
        J = _natural_jacobian(0.0, a) if self.index is not None else _NO_COLUMNS
        return self.A @ a, self.Ad @ a, J, _ZERO3

    def angular_velocity(self) -> np.ndarray:
        """omega [rad/s] in the ground frame, (u x u' + v x v' + w x w') / 2."""
        return 0.5 * sum(np.cross(self.A[:, k], self.Ad[:, k]) for k in range(3))


_ZERO3 = np.zeros(3)
_NO_COLUMNS = np.zeros((3, 0))
_I3_SPREAD = I3[:, None, :]


def _natural_jacobian(w0: float, a) -> np.ndarray:
    """C = [w0 I, a1 I, a2 I, a3 I] (3 x 12): d(w0 r0 + a1 u + a2 v + a3 w)/dq."""
    b = np.array((w0, a[0], a[1], a[2]))
    return (_I3_SPREAD * b[None, :, None]).reshape(3, 12)


class RigidBody3D(BodyBase):
    """A spatial rigid body in natural coordinates (or the ground).

    Coordinates ``(x, y, z, ux, uy, uz, vx, vy, vz, wx, wy, wz)``: the origin of the body
    frame [m] and its three axes (unit vectors) in the ground frame.  A marker location
    is a point (s1, s2, s3) [m] in the body frame.

    Parameters
    ----------
    name : str
    mass : float
        Mass [kg], > 0.
    inertia : (3,) or (3, 3)
        Inertia tensor about the centre of mass in the body frame [kg m^2] (principal
        moments if 3 numbers); positive definite, and each principal moment smaller than
        the sum of the other two (a body of non-zero thickness; a rod is a
        :class:`SlenderBar`).
    center_of_mass : (3,)
        Centre of mass in the body frame [m] (default: the frame origin).
    position : (3,)
        Initial origin of the body frame [m].
    orientation : (3, 3)
        Initial rotation matrix, columns the body axes in the ground frame (orthonormal,
        right-handed).
    velocity : (3,)
        Initial velocity of the frame origin [m/s].
    angular_velocity : (3,)
        Initial angular velocity [rad/s] in the ground frame.
    markers : dict of str to (3,)
        Named points in the body frame [m].
    """

    n_coords = 12
    points_linear = True
    has_frame = True

    def __init__(self, name: str, mass: float = 1.0, inertia=(1.0, 1.0, 1.0),
                 center_of_mass=(0.0, 0.0, 0.0), position=(0.0, 0.0, 0.0),
                 orientation=None, velocity=(0.0, 0.0, 0.0),
                 angular_velocity=(0.0, 0.0, 0.0), markers: dict | None = None,
                 ground: bool = False):
        super().__init__(name)
        self.is_ground = ground
        self.position = finite_array(f"body {name!r} position", position, (3,))
        A = I3.copy() if orientation is None else \
            finite_array(f"body {name!r} orientation", orientation, (3, 3))
        dev = float(np.abs(A.T @ A - I3).max())
        if dev > ORTHONORMAL_TOLERANCE or np.linalg.det(A) <= 0.0:
            raise ParameterError(
                f"body {name!r}: orientation is not a rotation matrix (|A^T A - I| = "
                f"{dev:.3g}, det = {np.linalg.det(A):.6g}): accepted are orthonormal "
                f"right-handed matrices (|A^T A - I| <= {ORTHONORMAL_TOLERANCE:g}, det = 1)")
        self.orientation = A
        self.velocity = finite_array(f"body {name!r} velocity", velocity, (3,))
        self.omega = finite_array(f"body {name!r} angular_velocity", angular_velocity, (3,))
        self.center_of_mass = finite_array(f"body {name!r} center_of_mass", center_of_mass,
                                           (3,))
        if ground:
            self.n_coords = 0
            self.mass, self.inertia = 0.0, np.zeros((3, 3))
        else:
            self.mass = _positive(name, "mass", mass, "kg")
            self.inertia = self._check_inertia(inertia)
            self.Z = natural_mass_moments(self.mass, self.center_of_mass, self.inertia)
            self._M = np.kron(self.Z, I3)
            self._gravity_weights = self.Z[0].copy()    # integral of rho b dV
        for key, loc in (markers or {}).items():
            self.add_marker(key, loc)

    def _check_inertia(self, inertia) -> np.ndarray:
        arr = np.asarray(inertia, dtype=float)
        if arr.shape == (3,):
            arr = np.diag(arr)
        label = f"body {self.name!r}: inertia"
        if arr.shape != (3, 3) or not np.all(np.isfinite(arr)):
            raise ParameterError(f"{label} = {inertia!r} must be 3 principal moments or a "
                                 "finite 3 x 3 tensor [kg m^2]")
        if np.abs(arr - arr.T).max() > 1e-12 * max(1.0, np.abs(arr).max()):
            raise ParameterError(f"{label} = {inertia!r} must be symmetric")
        moments = np.linalg.eigvalsh(arr)
        second = 0.5 * moments.sum() - moments      # principal second moments of mass
        if moments.min() <= 0.0 or second.min() <= 0.0:
            raise ParameterError(
                f"{label} has principal moments {moments.tolist()} kg m^2: accepted are "
                "positive moments with each smaller than the sum of the other two (a body "
                "of non-zero thickness; use SlenderBar for a rod)")
        return arr

    # -- BodyBase --------------------------------------------------------------------
    def check_location(self, label, location):
        return finite_array(label, location, (3,))

    def default_location(self):
        return None

    def local_direction(self, direction) -> np.ndarray:
        """Body-frame components of a ground-frame direction at the initial orientation."""
        return self.orientation.T @ np.asarray(direction, float)

    def initial_coordinates(self):
        A = self.orientation
        Ad = np.cross(self.omega, A.T).T                # omega x each axis
        return (np.concatenate([self.position, A.T.ravel()]),
                np.concatenate([self.velocity, Ad.T.ravel()]))

    def internal_constraints(self):
        return [] if self.is_ground else [RigidFrameConstraint(self)]

    def mass_matrix(self, qb=None):
        return self._M.copy()

    def applied_forces(self, t, qb, vb, gravity):
        # gravity's potential -g . integral(rho r dV) is linear in q: constant force
        return np.kron(self._gravity_weights, gravity)

    def force_jacobians(self, t, qb, vb, gravity):
        return np.zeros((12, 12)), np.zeros((12, 12))

    def compiled_forces(self, gravity) -> CompiledForces:
        """Its weight [N], a constant (gravity's potential is linear in q)."""
        return CompiledForces(self.applied_forces(0.0, None, None, gravity))

    def potential_energy(self, qb, gravity):
        return -float(np.kron(self._gravity_weights, gravity) @ qb)

    def state(self, qb, vb):
        return RigidState3D(self, qb, vb)

    def coordinate_names(self):
        return [f"{self.name}.{c}" for c in ("x", "y", "z", "ux", "uy", "uz", "vx", "vy",
                                             "vz", "wx", "wy", "wz")]

    def angular_momentum(self, qb, vb, about=(0.0, 0.0, 0.0)) -> np.ndarray:
        """Angular momentum [kg m^2/s] about the ground point ``about``:
        integral of rho (r - O) x r' dV = sum_ab Z_ab q_a x q'_b."""
        qa = qb.reshape(4, 3).copy()
        qa[0] -= np.asarray(about, float)
        va = vb.reshape(4, 3)
        return sum(self.Z[a, b] * np.cross(qa[a], va[b]) for a in range(4) for b in range(4))

    def __repr__(self) -> str:
        return f"RigidBody3D({self.name!r}, mass={self.mass})"


class RigidFrameConstraint(Constraint):
    """The six rigid-body conditions of natural coordinates: u, v, w of unit length and
    mutually orthogonal, written (u.u - 1)/2 = 0, u.v = 0, ... so that each row of G is
    a vector of the frame (docs/spatial.md)."""

    quadratic = True

    n_eq = 6
    kind = "frame"
    _PAIRS = ((0, 0), (1, 1), (2, 2), (0, 1), (1, 2), (2, 0))

    def __init__(self, body: RigidBody3D):
        super().__init__(f"{body.name}.frame")
        self.body = body

    def equation_names(self):
        return ["uu", "vv", "ww", "uv", "vw", "wu"]

    def evaluate(self, t, view, g, G, gt, gam):
        st = view[self.body]
        # the unit vectors through the state protocol (values and rates; their Jacobian
        # is the natural-coordinate selection, written directly)
        axes = [st.vector(None, I3[k])[:2] for k in range(3)]
        J = np.zeros((6, 12))
        for row, (i, k) in enumerate(self._PAIRS):
            (ai, aid), (ak, akd) = axes[i], axes[k]
            if i == k:              # (u.u - 1)/2: each row of G is a vector of the frame
                g[row] = 0.5 * (ai @ ai - 1.0)
                J[row, 3 + 3 * i:6 + 3 * i] = ai
                gam[row] = -(aid @ aid)
            else:
                g[row] = ai @ ak
                J[row, 3 + 3 * i:6 + 3 * i] = ak
                J[row, 3 + 3 * k:6 + 3 * k] = ai
                gam[row] = -2.0 * (aid @ akd)
        scatter_jacobian(G, st, J)


class BarState(BodyState):
    """Kinematics of a slender bar: r(s) = (1 - s/L) r_i + (s/L) r_j (linear in q)."""

    __slots__ = ("body", "index", "ri", "rj", "rid", "rjd")

    def __init__(self, body: "SlenderBar", qb, vb):
        self.body = body
        self.index = body.index
        self.ri, self.rj = qb[0:3], qb[3:6]
        self.rid, self.rjd = vb[0:3], vb[3:6]

    def point(self, s):
        xi = float(s) / self.body.length
        J = np.hstack([(1.0 - xi) * I3, xi * I3])
        return ((1.0 - xi) * self.ri + xi * self.rj, (1.0 - xi) * self.rid + xi * self.rjd,
                J, _ZERO3)

    def vector(self, location, a):
        # only the axis direction is defined on a bar: a = (a1, 0, 0) (checked at binding)
        k = float(a[0]) / self.body.length
        J = np.hstack([-k * I3, k * I3])
        return k * (self.rj - self.ri), k * (self.rjd - self.rid), J, _ZERO3


class SlenderBar(BodyBase):
    """A rigid bar without spin about its axis: two end points, 6 coordinates
    ``(xi, yi, zi, xj, yj, zj)`` [m], one length constraint (the reduced natural
    coordinates of truss members).  A marker location is the arc length s [m] from end i.

    Parameters
    ----------
    name : str
    end_i, end_j : (3,)
        Initial end points [m]; their distance is the length L.
    mass : float
        Mass [kg], > 0.
    center : float
        Centre of mass as arc length from end i [m] (default L/2).
    inertia : float
        Moment of inertia about an axis through the centre of mass across the bar
        [kg m^2], > 0 (default m L^2/12, a uniform bar).
    velocity_i, velocity_j : (3,)
        Initial velocities of the ends [m/s].
    markers : dict of str to float
        Named points by arc length from end i [m].
    """

    points_linear = True

    has_frame = False

    def __init__(self, name: str, end_i, end_j, mass: float = 1.0, center: float | None = None,
                 inertia: float | None = None, velocity_i=(0.0, 0.0, 0.0),
                 velocity_j=(0.0, 0.0, 0.0), markers: dict | None = None):
        super().__init__(name)
        self.n_coords = 6
        self.end_i = finite_array(f"bar {name!r} end_i", end_i, (3,))
        self.end_j = finite_array(f"bar {name!r} end_j", end_j, (3,))
        with np.errstate(over="ignore", under="ignore", invalid="ignore"):
            d = self.end_j - self.end_i
            scale = float(np.abs(d).max())    # the norm scaled: no overflow of its squares
            self.length = (math.inf if not math.isfinite(scale) else 0.0 if scale == 0.0
                           else scale * float(np.linalg.norm(d / scale)))
        if not self.length > 0.0:
            raise ParameterError(f"bar {name!r}: end_i and end_j coincide: accepted are "
                                 "distinct end points (length > 0 m)")
        if not math.isfinite(self.length):   # each coordinate finite, their distance not
            raise ParameterError(f"bar {name!r}: end_i = {self.end_i.tolist()}, end_j = "
                                 f"{self.end_j.tolist()} m: their distance is not "
                                 "representable (beyond 1.8e308 m): accepted are end points "
                                 "a finite distance apart")
        self.mass = _positive(name, "mass", mass, "kg")
        L = self.length
        c = 0.5 * L if center is None else float(center)
        if not (math.isfinite(c) and 0.0 <= c <= L):
            raise ParameterError(f"bar {name!r}: center = {center!r} is invalid: accepted "
                                 f"values are arc lengths in [0, {L:g}] m")
        with np.errstate(over="ignore", under="ignore", invalid="ignore"):
            jc = self.mass * L * L / 12.0 if inertia is None else \
                _positive(name, "inertia", inertia, "kg.m2")
            ji = self.mass * c * c + jc                        # second moment about end i
            m = self.mass
            L2 = L * L          # not L**2: a float power raises OverflowError, this is inf
            self.Z = np.array([[m - 2 * m * c / L + ji / L2, m * c / L - ji / L2],
                               [m * c / L - ji / L2, ji / L2]])
        if not (math.isfinite(jc) and np.isfinite(self.Z).all()):
            raise ParameterError(f"bar {name!r}: its length {L:g} m (end_i, end_j), mass "
                                 f"{self.mass:g} kg and inertia {jc:g} kg.m2 give a mass "
                                 "matrix that is not representable in double precision: "
                                 "accepted are values whose products m L^2 and J/L^2 are "
                                 "finite")
        self.center, self.inertia = c, jc
        self._M = np.kron(self.Z, I3)
        self._gravity_weights = self.Z.sum(axis=1)
        self.velocity_i = finite_array(f"bar {name!r} velocity_i", velocity_i, (3,))
        self.velocity_j = finite_array(f"bar {name!r} velocity_j", velocity_j, (3,))
        for key, loc in (markers or {}).items():
            self.add_marker(key, loc)

    def check_location(self, label, location):
        s = float(finite_array(label, location))
        if not -1e-12 * self.length <= s <= self.length * (1 + 1e-12):
            raise ParameterError(f"{label} = {location!r} is invalid: accepted values are arc "
                                 f"lengths in [0, {self.length:g}] m")
        return s

    def default_location(self):
        return 0.0

    def axis(self) -> np.ndarray:
        """Initial unit axis, from end i to end j."""
        return (self.end_j - self.end_i) / self.length

    def local_direction(self, direction) -> np.ndarray:
        """(+-1, 0, 0) for a direction along the bar; ParameterError otherwise (a bar has
        no frame across its axis)."""
        d = np.asarray(direction, float)
        d = d / np.linalg.norm(d)
        c = float(d @ self.axis())
        if abs(abs(c) - 1.0) > 1e-9:
            raise ParameterError(f"bar {self.name!r}: a direction across the bar is "
                                 f"undefined (no spin about its axis); got {direction!r}")
        return np.array([math.copysign(1.0, c), 0.0, 0.0])

    def initial_coordinates(self):
        return (np.concatenate([self.end_i, self.end_j]),
                np.concatenate([self.velocity_i, self.velocity_j]))

    def internal_constraints(self):
        return [BarLengthConstraint(self)]

    def mass_matrix(self, qb=None):
        return self._M.copy()

    def applied_forces(self, t, qb, vb, gravity):
        return np.kron(self._gravity_weights, gravity)

    def force_jacobians(self, t, qb, vb, gravity):
        return np.zeros((6, 6)), np.zeros((6, 6))

    def compiled_forces(self, gravity) -> CompiledForces:
        """Its weight [N], a constant (gravity's potential is linear in q)."""
        return CompiledForces(self.applied_forces(0.0, None, None, gravity))

    def potential_energy(self, qb, gravity):
        return -float(np.kron(self._gravity_weights, gravity) @ qb)

    def state(self, qb, vb):
        return BarState(self, qb, vb)

    def coordinate_names(self):
        return [f"{self.name}.{c}" for c in ("xi", "yi", "zi", "xj", "yj", "zj")]

    def __repr__(self) -> str:
        return f"SlenderBar({self.name!r}, mass={self.mass}, length={self.length})"


class BarLengthConstraint(Constraint):
    """The length of a slender bar: (|r_j - r_i|^2 - L^2) / (2 L) = 0 [m]."""

    quadratic = True

    n_eq = 1
    kind = "length"

    def __init__(self, bar: SlenderBar):
        super().__init__(f"{bar.name}.length")
        self.bar = bar

    def equation_names(self):
        return ["axial"]

    def evaluate(self, t, view, g, G, gt, gam):
        st = view[self.bar]
        L = self.bar.length
        d = point(st, L) - point(st, 0.0)
        dot(d, d).affine(0.5 / L, -0.5 * L).fill(g, G, gam)
