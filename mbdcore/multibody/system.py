"""General planar multibody systems: rigid bodies, joints, forces
(docs/benchmarks.md §8.1, §8.2, §8.4).

Absolute (Cartesian) coordinates: each moving body i has ``q_i = (x_i, y_i, phi_i)``,
the position of its centre of mass [m] and its angle [rad] in the ground frame, so the
mass matrix is constant and diagonal, ``M = diag(m, m, J_cm)``.  Points are *markers*
fixed on a body at a local position ``s`` [m] from the centre of mass:

    r = p + A(phi) s,      r' = p' + phi' A E s,      r'' = p'' + phi'' A E s - phi'^2 A s

with A the rotation matrix and E the rotation by +90 deg.  Joints are constraints
g(q, t) = 0 (see :mod:`mbdcore.multibody.constraints`), forces add to F(t, q, q')
(see :mod:`mbdcore.multibody.forces`), and the system is a :class:`~mbdcore.dae.ConstrainedProblem`
for the formulations in :mod:`mbdcore.dae`.

Build with the Python API::

    sys = System(gravity=(0, -9.80665))
    crank = sys.add_body("crank", mass=1.4, inertia=0.065625, position=(0.375, 0),
                         markers={"O": (-0.375, 0), "A": (0.375, 0)})
    sys.ground.add_marker("O", (0, 0))
    sys.add_joint(Revolute("ground.O", "crank.O"))

or from a declarative file (:mod:`mbdcore.multibody.model_file`).
"""
from __future__ import annotations

import math
from typing import Any, Iterable

import numpy as np
import scipy.sparse

from mbdcore.blocks import ParameterError
from mbdcore.dae.index1 import project_positions
from mbdcore.dae.problem import CompiledTerms, ConstrainedProblem
from mbdcore.multibody.assembly import ConstraintPlan
from mbdcore.multibody.redundancy import (
    RANK_METHODS,
    RANK_TOLERANCE,
    REDUNDANT_POLICIES,
    AllRows,
    dependent_rows,
    exclusive_rows,
)
from mbdcore.multibody.terms import CompiledForces, SystemTerms

__all__ = ["E", "rot", "finite_array", "coordinate_unit", "reaction_unit", "BodyBase", "BodyState",
           "Body", "RigidState", "scatter_jacobian", "scatter_force", "StateView", "System"]

#: Natural-coordinate components of a body's unit vectors and ANCF slopes: dimensionless.
_DIMENSIONLESS = {"dx", "dy", "dz", "ux", "uy", "uz", "vx", "vy", "vz", "wx", "wy", "wz"}

E = np.array([[0.0, -1.0], [1.0, 0.0]])


def rot(phi: float) -> np.ndarray:
    """Rotation matrix A(phi), shape (2, 2)."""
    c, s = math.cos(phi), math.sin(phi)
    return np.array([[c, -s], [s, c]])


def finite_array(name: str, value, shape=None) -> np.ndarray:
    """``value`` as a float array of ``shape``; ParameterError naming ``name`` if it has
    another shape or a non-finite entry."""
    arr = np.asarray(value, dtype=float)
    if shape is not None and arr.shape != shape:
        raise ParameterError(f"{name} = {value!r} must have shape {shape}")
    if not np.all(np.isfinite(arr)):
        raise ParameterError(f"{name} = {value!r} must be finite")
    return arr


def coordinate_unit(name: str) -> str:
    """SI unit of a generalised coordinate from its name ``body.coordinate``: angles
    (``phi``, ``theta``, ``alpha*``) in rad, ANCF slope components (``dx``, ``dy``,
    ``dz``) and the unit-vector components of natural coordinates (``ux`` ... ``wz``)
    dimensionless, a motor's armature charge (``charge``, whose rate is the current) in
    C, every other coordinate (positions, modal amplitudes scaled to a deflection) in m."""
    last = name.rsplit(".", 1)[-1]
    if last in ("phi", "theta") or last.startswith("alpha"):
        return "rad"
    if last == "charge":
        return "C"
    if last in _DIMENSIONLESS:
        return "1"
    return "m"


def reaction_unit(equation: str) -> str:
    """SI unit of the reaction (multiplier) of a constraint equation: N.m for a moment or
    torque row (``moment``, ``moment_1``, ``torque``), N for a force row."""
    return "N.m" if equation.startswith(("moment", "torque")) else "N"


class BodyBase:
    """Interface of every body of a System (rigid, modal beam, ANCF beam, ...).

    A body owns ``n_coords`` consecutive generalised coordinates of the system,
    starting at ``index`` (``None`` for the ground).  Markers are named locations on
    the body; what a location is depends on the body (a local point for a rigid body,
    an arc-length position along a beam).  Joints and forces see a body only through
    :meth:`state`, whose ``point`` and ``angle`` give positions and angles with their
    Jacobians with respect to the body's coordinates.
    """

    n_coords = 0
    is_ground = False
    #: the mass matrix does not depend on the coordinates (lets solvers cache it)
    constant_mass = True
    #: every point r = J q + c with J constant (natural coordinates, bars, cables): a
    #: compiled force element reads J and c at q = 0 (``terms.point_terms``)
    points_linear = False

    def __init__(self, name: str):
        if not isinstance(name, str) or not name.isidentifier():
            raise ParameterError(f"body name {name!r} must be an identifier")
        self.name = name
        self.markers: dict[str, Any] = {}
        self.index: int | None = None

    def add_marker(self, name: str, location) -> "BodyBase":
        """Add a named location (see the body class for what a location is)."""
        if name in self.markers:
            raise ParameterError(f"body {self.name!r} already has a marker {name!r}")
        self.markers[name] = self.check_location(f"marker {self.name}.{name}", location)
        return self

    def check_location(self, label: str, location):
        raise NotImplementedError

    def default_location(self):
        """Location used when a joint names the body without a marker (angles)."""
        raise ParameterError(f"body {self.name!r}: name a marker for this joint")

    def internal_constraints(self) -> list:
        """Constraints the body's own coordinates obey (the unit and orthogonal vectors of
        natural coordinates, a bar's length); the System adds them with the body."""
        return []

    def initial_coordinates(self) -> tuple[np.ndarray, np.ndarray]:
        raise NotImplementedError

    def mass_matrix(self, qb: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def applied_forces(self, t: float, qb: np.ndarray, vb: np.ndarray,
                       gravity: np.ndarray) -> np.ndarray:
        """Gravity, internal elastic and damping forces and, for configuration-dependent
        mass matrices, the velocity-quadratic inertia terms (moved to the right side)."""
        raise NotImplementedError

    def force_jacobians(self, t, qb, vb, gravity):
        """(dF/dq, dF/dv) of :meth:`applied_forces`, or None for finite differences."""
        return None

    def compiled_forces(self, gravity) -> CompiledForces | None:
        """:meth:`applied_forces` as compiled terms (a constant part and a C kernel; see
        :class:`~mbdcore.multibody.assembly.CompiledForces`) for the Newton iterations
        in C, or None (the default): the system's residual is then evaluated in
        Python."""
        return None

    def point_form(self, location):
        """The closed form of the point at ``location`` the batched constraint assembly
        (:mod:`mbdcore.multibody.assembly`) evaluates, or None (evaluated through
        :meth:`state`).  ``("rigid", s)``: r = p + A(phi) s over the body's (x, y, phi);
        ``("linear", cols, N, c)``: r = N q_body[cols] + c."""
        return None

    def angle_form(self, location):
        """The closed form of the orientation at ``location``, or None:
        ``("linear", cols, k, c)``: theta = k . q_body[cols] + c; ``("slope", (cols_x,
        cols_y), S1, theta0, t0)``: theta = theta0 + atan2(t0 x a, t0 . a) with the slope
        a = (S1 . q_body[cols_x], S1 . q_body[cols_y])."""
        return None

    def mass_matrix_sparse(self, qb=None) -> scipy.sparse.csr_matrix:
        """M(qb) as a CSR matrix (for the sparse solvers); by default the dense block
        converted.  Bodies with many coordinates override it."""
        return scipy.sparse.csr_matrix(self.mass_matrix(qb))

    def force_jacobians_sparse(self, t, qb, vb, gravity):
        """(dF/dq, dF/dv) of :meth:`applied_forces` as CSR matrices, or None for finite
        differences over the body's own coordinates; by default the dense blocks of
        :meth:`force_jacobians` converted."""
        jac = self.force_jacobians(t, qb, vb, gravity)
        if jac is None:
            return None
        return scipy.sparse.csr_matrix(jac[0]), scipy.sparse.csr_matrix(jac[1])

    def kinetic_energy(self, qb, vb) -> float:
        return 0.5 * float(vb @ self.mass_matrix(qb) @ vb)

    def potential_energy(self, qb, gravity) -> float:
        raise NotImplementedError

    def state(self, qb: np.ndarray, vb: np.ndarray) -> "BodyState":
        raise NotImplementedError

    def coordinate_names(self) -> list[str]:
        return [f"{self.name}.q{k}" for k in range(self.n_coords)]


class BodyState:
    """Kinematics of one body in one state (q, q').

    ``point(location)`` -> (r, r', J, quad): position [m], velocity [m/s], Jacobian
    dr/dq_body (2 x n_coords) and the velocity-quadratic part of r'' (r'' = J q'' + quad).
    ``angle(location)`` -> (theta, theta', J, quad) likewise for the orientation [rad] of
    the body at the location.  ``vector`` follows from ``angle``.
    """

    body: BodyBase
    index: int | None

    def point(self, location):
        raise NotImplementedError

    def angle(self, location=None):
        raise NotImplementedError

    def vector(self, location, u: np.ndarray):
        """(n, n', J, quad) of the direction u fixed in the body at ``location``."""
        th, thd, jth, qth = self.angle(location)
        n = rot(th) @ u
        en = np.array((-n[1], n[0]))            # E n = dn/dtheta
        return n, thd * en, np.outer(en, jth), en * qth - thd * thd * n


class Body(BodyBase):
    """A planar rigid body (or the ground, whose coordinates are not unknowns).

    Coordinates (x, y, phi): centre-of-mass position [m] and angle [rad]; the mass
    matrix is constant, diag(m, m, J).  A marker location is a point (x, y) [m] in
    the body frame, relative to the centre of mass.

    Parameters
    ----------
    name : str
        Unique name.
    mass : float
        Mass [kg], > 0.
    inertia : float
        Moment of inertia about the centre of mass [kg m^2], > 0.
    position, angle : initial centre-of-mass position [m] and angle [rad].
    velocity, omega : initial centre-of-mass velocity [m/s] and angular rate [rad/s].
    markers : dict of str to (float, float)
        Named points in the body frame, relative to the centre of mass [m].
    """

    n_coords = 3

    def __init__(self, name: str, mass: float = 1.0, inertia: float = 1.0,
                 position=(0.0, 0.0), angle: float = 0.0, velocity=(0.0, 0.0),
                 omega: float = 0.0, markers: dict | None = None, ground: bool = False):
        super().__init__(name)
        self.is_ground = ground
        if ground:
            self.n_coords = 0
        else:
            for label, val in (("mass", mass), ("inertia", inertia)):
                if not (isinstance(val, (int, float)) and math.isfinite(val) and val > 0.0):
                    raise ParameterError(
                        f"body {name!r}: {label} = {val!r} is invalid: accepted values are "
                        f"finite numbers > 0 ({'kg' if label == 'mass' else 'kg.m2'}); a "
                        "massless free body has no defined acceleration")
        self.mass = float(mass)
        self.inertia = float(inertia)
        self.position = finite_array(f"body {name!r} position", position, (2,))
        self.angle = float(finite_array(f"body {name!r} angle", angle))
        self.velocity = finite_array(f"body {name!r} velocity", velocity, (2,))
        self.omega = float(finite_array(f"body {name!r} omega", omega))
        self._diag = np.array([self.mass, self.mass, self.inertia])
        for key, loc in (markers or {}).items():
            self.add_marker(key, loc)

    def check_location(self, label, location):
        return finite_array(label, location, (2,))

    def default_location(self):
        return None

    def initial_coordinates(self):
        return (np.array([*self.position, self.angle]),
                np.array([*self.velocity, self.omega]))

    def mass_matrix(self, qb=None):
        return np.diag(self._diag)

    def applied_forces(self, t, qb, vb, gravity):
        return np.array([self.mass * gravity[0], self.mass * gravity[1], 0.0])

    def force_jacobians(self, t, qb, vb, gravity):
        return np.zeros((3, 3)), np.zeros((3, 3))

    def compiled_forces(self, gravity) -> CompiledForces:
        """Its weight [N], a constant."""
        return CompiledForces(self.applied_forces(0.0, None, None, gravity))

    def kinetic_energy(self, qb, vb):
        return 0.5 * float(vb @ (self._diag * vb))

    def potential_energy(self, qb, gravity):
        return -self.mass * float(qb[0] * gravity[0] + qb[1] * gravity[1])

    def state(self, qb, vb):
        return RigidState(self, qb, vb)

    def point_form(self, location):
        if self.is_ground:
            return ("linear", [], np.zeros((2, 0)), self.position + rot(self.angle) @ location)
        return ("rigid", location)

    def angle_form(self, location):
        if self.is_ground:
            return ("linear", [], [], self.angle)
        return ("linear", [2], [1.0], 0.0)

    def coordinate_names(self):
        return [f"{self.name}.{c}" for c in ("x", "y", "phi")]

    def __repr__(self) -> str:
        return f"Body({self.name!r}, mass={self.mass}, inertia={self.inertia})"


class RigidState(BodyState):
    """Kinematics of a rigid body: r = p + A s, r' = p' + phi' E A s,
    r'' = p'' + phi'' E A s - phi'^2 A s."""

    __slots__ = ("body", "index", "p", "phi", "pd", "phid", "A")

    def __init__(self, body: Body, qb, vb):
        self.body = body
        self.index = body.index
        if body.is_ground:
            self.p, self.phi = body.position, body.angle
            self.pd, self.phid = np.zeros(2), 0.0
        else:
            self.p, self.phi = qb[0:2], qb[2]
            self.pd, self.phid = vb[0:2], vb[2]
        self.A = rot(self.phi)

    def point(self, s):
        As = self.A @ s
        jphi = np.array((-As[1], As[0]))
        J = np.array(((1.0, 0.0, jphi[0]), (0.0, 1.0, jphi[1])))
        return self.p + As, self.pd + self.phid * jphi, J, (-self.phid * self.phid) * As

    def angle(self, location=None):
        return self.phi, self.phid, _ANGLE_J, 0.0

    def vector(self, location, u):
        n = self.A @ u
        en = np.array((-n[1], n[0]))
        J = np.array(((0.0, 0.0, en[0]), (0.0, 0.0, en[1])))
        return n, self.phid * en, J, (-self.phid * self.phid) * n


_ANGLE_J = np.array([0.0, 0.0, 1.0])


def scatter_jacobian(G: np.ndarray, state: BodyState, J: np.ndarray, sign: float = 1.0) -> None:
    """G[:, body coordinates] += sign * J (nothing for the ground)."""
    if state.index is not None:
        G[..., state.index:state.index + state.body.n_coords] += sign * J


def scatter_force(f: np.ndarray, state: BodyState, J: np.ndarray, force) -> None:
    """Generalised force J^T F of a force F [N] (or torque [N m] with an angle J)."""
    if state.index is not None:
        f[state.index:state.index + state.body.n_coords] += J.T @ force if np.ndim(J) == 2 \
            else J * force


class StateView:
    """Body states of one (q, q') evaluated once and shared by all elements."""

    __slots__ = ("q", "v", "_cache")

    def __init__(self, q: np.ndarray, v: np.ndarray):
        self.q, self.v = q, v
        self._cache: dict[str, BodyState] = {}

    def __getitem__(self, body: BodyBase) -> BodyState:
        s = self._cache.get(body.name)
        if s is None:
            if body.index is None:
                s = body.state(None, None)
            else:
                sl = slice(body.index, body.index + body.n_coords)
                s = body.state(self.q[sl], self.v[sl])
            self._cache[body.name] = s
        return s

    def column(self, body: BodyBase) -> int | None:
        """The first column of the body's coordinates in the vectors this view fills
        (None for the ground), without making its state."""
        return body.index


class _Relocated(BodyState):
    """A body state whose coordinates sit at another column offset: the same
    kinematics, scattered into one element's local block instead of the system's."""

    __slots__ = ("state", "body", "index")

    def __init__(self, state: BodyState, index: int):
        self.state, self.body, self.index = state, state.body, index

    def point(self, location):
        return self.state.point(location)

    def angle(self, location=None):
        return self.state.angle(location)

    def vector(self, location, u):
        return self.state.vector(location, u)

    def __getattr__(self, name):
        # the kinematics a body adds to the protocol (an ANCF cable's slope, a beam's
        # directors) are the same in the local block
        return getattr(self.state, name)


class _LocalView:
    """The states of a :class:`StateView`, each moving body moved to its offset in one
    element's local columns.  With ``offsets=None`` every body sits at column 0 and the
    bodies read are recorded (finding out what an element acts on)."""

    __slots__ = ("base", "offsets", "seen")

    def __init__(self, base: StateView, offsets: dict | None = None):
        self.base, self.offsets, self.seen = base, offsets, []

    def __getitem__(self, body: BodyBase) -> BodyState:
        state = self.base[body]
        if body.index is None:
            return state
        if self.offsets is None:
            if all(b is not body for b in self.seen):
                self.seen.append(body)
            return _Relocated(state, 0)
        return _Relocated(state, self.offsets[body.name])

    def column(self, body: BodyBase) -> int | None:
        if body.index is None:
            return None
        if self.offsets is None:
            self[body]                      # record that the element reads it
            return 0
        return self.offsets[body.name]


def _probe_direction(n: int) -> np.ndarray:
    """A fixed direction with no zero and no two equal entries (golden-ratio sequence):
    perturbing along it turns the accidental zeros of a Jacobian into non-zeros."""
    return 0.5 + 0.5 * np.modf(0.6180339887498949 * np.arange(1, n + 1))[0]


class _ElementLayout:
    """Where one joint or force element acts, for assembling its part of a sparse matrix.

    ``cols`` are the system columns of the bodies it reads, concatenated in a local block
    of ``width`` columns (``offsets`` body name -> local column); ``pattern`` are the local
    columns in which its Jacobian rows (constraint) or its generalised force (force) can
    be non-zero, as observed at a configuration and at a perturbed one.  Sparse
    assembly and the finite differences of its Jacobians visit only these: as for the
    engine's joints and forces, an element's terms are assumed to depend on q only
    through the coordinates in which they are non-zero (modal.reaction_stiffness_terms
    makes the same assumption)."""

    def __init__(self, element, bodies: list, rows: np.ndarray):
        self.element = element
        self.rows = rows
        self.offsets, cols, start = {}, [], 0
        for b in bodies:
            self.offsets[b.name] = start
            cols.append(np.arange(b.index, b.index + b.n_coords))
            start += b.n_coords
        self.width = start
        self.cols = np.concatenate(cols) if cols else np.zeros(0, dtype=int)
        self.set_pattern(np.zeros(0, dtype=int))

    def set_pattern(self, local: np.ndarray) -> None:
        local = np.unique(local)
        order = np.argsort(self.cols[local], kind="stable")
        self.take = local[order]                 # local columns, by system column
        self.pattern_cols = self.cols[self.take]
        self.outside = np.ones(self.width, dtype=bool)
        self.outside[self.take] = False

    def observe(self, block: np.ndarray) -> bool:
        """Widen the pattern by the non-zero columns of ``block``; True if it grew."""
        if not block[..., self.outside].any():
            return False
        nz = np.flatnonzero(np.any(np.atleast_2d(block) != 0.0, axis=0))
        self.set_pattern(np.concatenate([self.take, nz]))
        return True


class System(ConstrainedProblem):
    """A planar multibody system.

    Parameters
    ----------
    gravity : (float, float)
        Gravitational acceleration [m/s^2] in the ground frame; (0, 0) for a horizontal
        plane.
    redundant : {"keep", "remove", "error"}
        What to do with constraint equations that depend on the others at the assembled
        initial configuration (:data:`REDUNDANT_POLICIES`, :meth:`check_redundancy`).
    """

    #: dimension of the space the bodies move in (a spatial system sets 3)
    dim = 2

    def __init__(self, gravity=(0.0, 0.0), redundant: str = "keep"):
        self.gravity = finite_array("gravity", gravity, (self.dim,))
        if redundant not in REDUNDANT_POLICIES:
            raise ParameterError(f"redundant = {redundant!r} is invalid: accepted values are "
                                 f"{', '.join(map(repr, REDUNDANT_POLICIES))}")
        self.redundant = redundant
        #: names of the equations found dependent by :meth:`check_redundancy`
        self.redundant_equations: list[str] = []
        self._kept_rows: np.ndarray | None = None   # rows kept after removal (None: all)
        self._redundancy_checked = False
        self._m_all = 0
        self.ground = self.make_ground()
        self.bodies: list[BodyBase] = []
        self.joints: list = []
        self.forces_list: list = []
        self._by_name: dict[str, BodyBase] = {"ground": self.ground}
        self.inputs: dict[str, float] = {}
        #: what a block made of this system uses, as a model file declares it:
        #: ``outputs`` (signal names) and ``method`` ({"name", "substeps", options});
        #: empty: the block's defaults (mbdcore.multibody.model_file, "run keys")
        self.block_settings: dict = {}
        self._mass_cache: np.ndarray | None = None
        self._sparse_mass_cache = None
        self._layouts: tuple | None = None      # sparse assembly maps (built when used)
        self._plan: ConstraintPlan | None = None  # batched joint rows (built when used)
        #: evaluate joints through the batched plan (False: one call per joint, the
        #: reference the plan is tested against)
        self.batched_constraints = True
        #: let the implicit integrators iterate in C when every part has a compiled
        #: form (:meth:`compiled_terms`; False: the Python iteration, the reference)
        self.compiled_residual = True
        self.n = 0

    def make_ground(self) -> BodyBase:
        """The fixed body ``ground`` of this kind of system."""
        return Body("ground", ground=True)

    @property
    def m(self) -> int:
        """Number of constraint equations the solvers see: all of them, or with
        ``redundant="remove"`` those left after the dependent ones are dropped (found at
        the first use, :meth:`check_redundancy`)."""
        self.resolve_redundancy()
        return self._m_all if self._kept_rows is None else int(self._kept_rows.size)

    def resolve_redundancy(self) -> None:
        """Find the dependent constraint equations once (policies ``remove`` and
        ``error``), before the solvers first see the constraints."""
        if self.redundant != "keep" and not self._redundancy_checked:
            self.check_redundancy()

    # -- building -------------------------------------------------------------------
    def add_body(self, name: str, **kwargs: Any) -> Body:
        """Add a rigid body (see :class:`Body` for the keywords)."""
        return self.add(Body(name, **kwargs))

    def add(self, body: BodyBase) -> BodyBase:
        """Add any body (rigid or flexible); its coordinates follow those already there."""
        if not isinstance(body, BodyBase) or body.is_ground:
            raise ParameterError(f"expected a body, got {body!r}")
        if body.name in self._by_name:
            raise ParameterError(f"a body named {body.name!r} exists already")
        body.index = self.n
        self.bodies.append(body)
        self._by_name[body.name] = body
        self.n += body.n_coords
        self._mass_cache = None
        self._sparse_mass_cache = None
        self._layouts = None
        self._plan = None
        self._forget_redundancy()
        for constraint in body.internal_constraints():
            self.add_joint(constraint)
        return body

    def body(self, name: str) -> BodyBase:
        try:
            return self._by_name[name]
        except KeyError:
            raise ParameterError(f"no body named {name!r}; bodies: "
                                 f"{', '.join(self._by_name)}") from None

    def marker(self, ref) -> tuple[BodyBase, Any]:
        """Resolve ``"body.marker"`` (or ``(body_name, location)``) to (body, location)."""
        if isinstance(ref, str):
            if "." not in ref:
                raise ParameterError(f"marker reference {ref!r} must read 'body.marker'")
            bname, mname = ref.split(".", 1)
            body = self.body(bname)
            if mname not in body.markers:
                raise ParameterError(f"body {bname!r} has no marker {mname!r}; markers: "
                                     f"{', '.join(body.markers) or '(none)'}")
            return body, body.markers[mname]
        bname, local = ref
        body = self.body(bname)
        return body, body.check_location(f"point on {bname}", local)

    def frame(self, ref) -> tuple[BodyBase, Any]:
        """Resolve a reference for angles: ``"body"`` (the body's own angle, rigid
        bodies) or ``"body.marker"`` (the orientation at a marker, any body)."""
        if isinstance(ref, str) and "." not in ref:
            body = self.body(ref)
            return body, body.default_location()
        return self.marker(ref)

    def add_joint(self, joint):
        """Add a constraint (joint, gear, driver); returns it."""
        joint.bind(self)
        names = {j.name for j in self.joints}
        if joint.name in names:
            raise ParameterError(f"two constraints are named {joint.name!r}")
        self.joints.append(joint)
        self._m_all = sum(j.n_eq for j in self.joints)
        self._layouts = None
        self._plan = None
        self._forget_redundancy()
        return joint

    def joint(self, name: str):
        """The constraint named ``name``."""
        for j in self.joints:
            if j.name == name:
                return j
        raise ParameterError(f"no constraint named {name!r}; constraints: "
                             f"{', '.join(j.name for j in self.joints) or '(none)'}")

    # -- redundant constraints -----------------------------------------------------------
    def _forget_redundancy(self) -> None:
        self._redundancy_checked = False
        self._kept_rows = None
        self.redundant_equations = []

    def all_equation_names(self) -> list[str]:
        """``joint.equation`` of every constraint row, the dependent ones included."""
        return [f"{j.name}.{k}" for j in self.joints for k in j.equation_names()]

    def check_redundancy(self, t: float = 0.0, q=None, tol: float = RANK_TOLERANCE,
                         independent=(), method: str = "sparse") -> list[str]:
        """Find the constraint equations that depend on the others and apply the policy
        ``redundant`` to them; returns their names (``joint.equation``).

        The configuration is ``q`` (default: the bodies' initial coordinates) projected
        onto all the constraints (a least-squares Gauss-Newton projection, which
        converges with dependent rows too); there a rank-revealing factorisation of G
        (:func:`~mbdcore.multibody.redundancy.dependent_rows`, ``method`` one of
        :data:`~mbdcore.multibody.redundancy.RANK_METHODS`: ``"dense"``, a QR of G^T
        with column pivoting, or ``"sparse"``, G's rows rotated one by one into a
        banded R, which keeps the first independent rows in row order) finds the rows
        whose pivot falls below ``tol`` times the largest: they are dependent.
        ``"remove"`` keeps only the independent
        rows for the solvers (their multipliers then carry the reactions; the split of a
        reaction between dependent joints is not unique and is not computed);
        ``"error"`` raises ParameterError naming them; ``"keep"`` only reports.

        The dependence is judged at one configuration: a mechanism that is redundant on
        its whole motion (Bricard's, a planar linkage built in 3D) keeps satisfying the
        removed equations, which the caller can check with :meth:`all_constraints`.

        ``independent``: constraints (or their names) whose rows are independent of all
        the others by construction, each having columns that no other constraint
        touches, on which its own rows have full rank (a cable end joined to a node: the
        end's coordinates appear in that joint only).  That is verified (ParameterError
        naming a constraint that fails it) and their rows are then kept without entering
        the QR: any dependence among the rows has zero weight on them (restricted to a
        constraint's exclusive columns only its own rows remain), so the QR of the
        others finds the same rank at a fraction of the cost (a dense QR grows as the
        cube of the rows: a 24-bay ring truss with its 529-cable net, 60 s to 5 s).
        """
        if method not in RANK_METHODS:
            raise ParameterError(f"method = {method!r} is invalid: accepted values are "
                                 f"{', '.join(map(repr, RANK_METHODS))}")
        self._forget_redundancy()
        self._redundancy_checked = True
        if self._m_all == 0:
            return []
        if q is None:
            q = self.initial_state()[0]
        q = project_positions(AllRows(self), t, np.asarray(q, dtype=float))
        if method == "sparse":
            G = self.constraint_terms_sparse(t, q, np.zeros(self.n), all_rows=True)[1]
        else:
            G = self._constraint_parts(t, q, np.zeros(self.n), all_rows=True)[1]
        joints = [self.joint(ref) if isinstance(ref, str) else ref for ref in independent]
        sure = exclusive_rows(G, self.joints, joints, tol)
        selection = dependent_rows(G, tol, sure, method)
        self._apply_dependent(selection.dependent,
                              f"depend on the others at the assembled configuration (rank "
                              f"{selection.rank} of {self._m_all})",
                              "pass redundant='remove' to drop them, or remove joints")
        return list(self.redundant_equations)

    def _apply_dependent(self, dependent: np.ndarray, why: str, remedy: str) -> None:
        """Record the dependent rows ``dependent`` and apply the policy to them:
        ``error`` raises ParameterError saying ``why`` and ``remedy``, ``remove`` keeps
        the others for the solvers."""
        self.redundant_equations = [self.all_equation_names()[i] for i in dependent]
        if dependent.size and self.redundant == "error":
            raise ParameterError(f"{dependent.size} constraint equations {why}: "
                                 f"{', '.join(self.redundant_equations)}; {remedy}")
        if dependent.size and self.redundant == "remove":
            self._kept_rows = np.setdiff1d(np.arange(self._m_all), dependent)

    @property
    def kept_rows(self) -> np.ndarray | None:
        """Row indices (of all rows) the solvers see after dependent rows were removed;
        None while all are kept."""
        return None if self._kept_rows is None else self._kept_rows.copy()

    @property
    def redundancy_resolved(self) -> bool:
        """Whether the dependent equations have been found (or given) since the last
        constraint or body was added; :attr:`redundant_equations` is then final."""
        return self._redundancy_checked

    def set_redundant_equations(self, names) -> None:
        """Take the dependent equations as given (``joint.equation`` names, a record of a
        :meth:`check_redundancy` made elsewhere: a model file of a system whose
        dependence was judged at another configuration, as the ring truss's at full
        deployment) instead of judging them at the first use; the policy ``redundant``
        applies to them as to found ones.  Unknown names raise ParameterError."""
        names = list(names)
        position = {n: i for i, n in enumerate(self.all_equation_names())}
        unknown = [n for n in names if n not in position]
        if unknown:
            raise ParameterError(f"no constraint equation(s) {unknown}; accepted: "
                                 "'joint.equation' names of this system's constraints")
        self._forget_redundancy()
        self._redundancy_checked = True
        self._apply_dependent(np.array(sorted({position[n] for n in names}), dtype=int),
                              "are given as dependent with redundant='error'",
                              "accepted: redundant='remove' or 'keep'")

    def all_constraints(self, t: float, q) -> np.ndarray:
        """g(q, t) of every constraint row, the removed dependent ones included."""
        return self._constraint_parts(t, q, np.zeros(self.n), all_rows=True)[0]

    def all_constraint_jacobian(self, t: float, q) -> np.ndarray:
        """G(q, t) of every constraint row, the removed dependent ones included."""
        return self._constraint_parts(t, q, np.zeros(self.n), all_rows=True)[1]

    @property
    def m_all(self) -> int:
        """Number of constraint equations, the removed dependent ones included."""
        return self._m_all

    def _kept(self, *arrays):
        """The rows of the solvers (the independent ones) of full-row arrays."""
        if self._kept_rows is None:
            return arrays
        return tuple(a[self._kept_rows] for a in arrays)

    def _all_multipliers(self, lam) -> np.ndarray:
        """Multipliers of the kept rows spread over all rows (zero on removed ones)."""
        if self._kept_rows is None:
            return np.asarray(lam)
        full = np.zeros(self._m_all)
        full[self._kept_rows] = lam
        return full

    def add_force(self, force):
        """Add a force element; its inputs (if any) become inputs of the system."""
        force.bind(self)
        for name in force.input_names:
            if name in self.inputs:
                raise ParameterError(f"input {name!r} is declared twice")
            self.inputs[name] = 0.0
        self.forces_list.append(force)
        self._layouts = None
        self._plan = None
        return force

    def update(self, t: float, q, v) -> bool:
        """Events between time steps (e.g. a latch engaging) at the accepted state;
        True when a force jumped, so that the integrator restarts there."""
        jumped = False
        for force in self.forces_list:
            jumped |= bool(force.update(t, q, v))
        return jumped

    def discrete_state(self) -> dict:
        """The elements' discrete state by element name (what they keep besides q, v)."""
        return {f.name: s for f in self.forces_list if (s := f.discrete_state()) is not None}

    def set_discrete_state(self, state: dict) -> None:
        for force in self.forces_list:
            if force.name in state:
                force.set_discrete_state(state[force.name])

    def set_input(self, name: str, value: float) -> None:
        """Set an input (an applied joint torque or force) [N m or N]."""
        if name not in self.inputs:
            raise ParameterError(f"no input {name!r}; inputs: {', '.join(self.inputs) or '(none)'}")
        value = float(value)
        if not math.isfinite(value):
            raise ParameterError(f"input {name!r} = {value!r} is not finite")
        self.inputs[name] = value

    # -- state ------------------------------------------------------------------------
    def initial_state(self) -> tuple[np.ndarray, np.ndarray]:
        """(q0, v0) from the bodies' initial coordinates and velocities (not assembled)."""
        q, v = np.zeros(self.n), np.zeros(self.n)
        for b in self.bodies:
            qb, vb = b.initial_coordinates()
            q[b.index:b.index + b.n_coords] = qb
            v[b.index:b.index + b.n_coords] = vb
        return q, v

    def coordinate_names(self) -> list[str]:
        return [n for b in self.bodies for n in b.coordinate_names()]

    def multiplier_names(self) -> list[str]:
        names = self.all_equation_names()
        if self.m != len(names):
            names = [names[i] for i in self._kept_rows]
        return names

    def coordinate_units(self) -> list[str]:
        """SI unit of each coordinate (:func:`coordinate_unit`)."""
        return [coordinate_unit(n) for n in self.coordinate_names()]

    def multiplier_units(self) -> list[str]:
        """SI unit of each multiplier, a reaction force [N] or moment [N.m]."""
        return [reaction_unit(name.rsplit(".", 1)[1]) for name in self.multiplier_names()]

    def view(self, q, v) -> StateView:
        return StateView(q, v)

    def _slice(self, b: BodyBase) -> slice:
        return slice(b.index, b.index + b.n_coords)

    # -- ConstrainedProblem ------------------------------------------------------------
    def mass_matrix(self, q=None) -> np.ndarray:
        """M(q), block diagonal over the bodies (constant blocks are cached)."""
        if self._mass_cache is not None and all(b.constant_mass for b in self.bodies):
            return self._mass_cache.copy()
        M = np.zeros((self.n, self.n))
        for b in self.bodies:
            sl = self._slice(b)
            M[sl, sl] = b.mass_matrix(None if q is None else q[sl])
        if all(b.constant_mass for b in self.bodies):
            self._mass_cache = M.copy()
        return M

    def mass_diagonal(self) -> np.ndarray:
        return np.diag(self.mass_matrix()).copy()

    # -- switching bodies (a tension-only cable's taut points) -----------------------------
    def _switching(self) -> list:
        return [b for b in self.bodies if hasattr(b, "freeze_switches")]

    @property
    def has_switches(self) -> bool:
        """Whether a body has a switching force law whose active set an implicit step
        freezes (a tension-only ANCF cable: which points are taut)."""
        return any(getattr(b, "tension_only", False) for b in self._switching())

    def freeze_switches(self, t, q, v, slack: bool = False) -> None:
        """Freeze every switching body's active set at (q, v) (with ``slack``: every
        point inactive, a cable slack everywhere) for the evaluations that follow (an
        implicit step's Newton solve)."""
        for b in self._switching():
            sl = self._slice(b)
            b.freeze_switches(q[sl], v[sl], slack)

    def switches_hold(self, t, q, v) -> bool:
        """Whether every frozen active set is that of the state (q, v)."""
        return all(b.switches_hold(q[self._slice(b)], v[self._slice(b)])
                   for b in self._switching())

    def release_switches(self) -> None:
        """Back to the force laws' own switching at every evaluation."""
        for b in self._switching():
            b.release_switches()

    def forces(self, t, q, v) -> np.ndarray:
        f = np.zeros(self.n)
        for b in self.bodies:
            sl = self._slice(b)
            f[sl] = b.applied_forces(t, q[sl], v[sl], self.gravity)
        view = StateView(q, v)
        for force in self.forces_list:
            force.apply(t, view, f, self.inputs)
        return f

    def compiled_terms(self) -> CompiledTerms | None:
        """The residual terms in C (:class:`~mbdcore.dae.problem.CompiledTerms`, made
        by :class:`~mbdcore.multibody.terms.SystemTerms` from the parts as they are
        now, the rows the solvers see: without removed redundant ones) when every part
        has a compiled form; else None, and the integrators evaluate it in Python."""
        if not self.compiled_residual or self.n == 0:
            return None
        self.resolve_redundancy()
        if self._m_all and not self.batched_constraints:
            return None
        rest = StateView(np.zeros(self.n), np.zeros(self.n))
        terms = SystemTerms.build(self.constraint_plan() if self._m_all else None, self.n,
                                  self.bodies, self.forces_list, self.gravity,
                                  self.mass_matrix,
                                  lambda force, t, f: force.apply(t, rest, f, self.inputs),
                                  self.mass_matrix_sparse, self._kept_rows)
        if terms is None:
            return None

        def prepare(t):
            # the inputs compiled laws read (a linear actuator's force), then the rest
            for force in terms.element_forces:
                force.load_solve(t, self.inputs)
            terms.prepare(t)
        return CompiledTerms(self.n, self.m, terms.mass_matrix, terms.constraints_address,
                             terms.forces_address, terms.context_address, prepare,
                             terms, terms.jacobian if terms.has_jacobian else None,
                             terms.sparse_residual, terms.sparse_mass,
                             terms.sparse_jacobian if terms.has_jacobian else None,
                             terms.jacobian_function if terms.has_jacobian else None,
                             terms.sparse_blocks if terms.has_jacobian else None)

    def constraint_plan(self) -> ConstraintPlan:
        """The batched evaluation of the joints, every row (built once per topology)."""
        if self._plan is None or self._plan.m != self._m_all or self._plan.n != self.n:
            self._plan = ConstraintPlan(self)
        return self._plan

    def _constraint_parts(self, t, q, v, all_rows: bool = False):
        if self.batched_constraints and self._m_all:
            parts = self.constraint_plan().evaluate(t, q, v)
        else:
            parts = self._constraint_parts_per_joint(t, q, v)
        if all_rows:
            return parts
        self.resolve_redundancy()
        return self._kept(*parts)

    def _constraint_parts_per_joint(self, t, q, v):
        m = self._m_all
        g = np.zeros(m)
        G = np.zeros((m, self.n))
        gt = np.zeros(m)
        gam = np.zeros(m)
        row = 0
        view = StateView(q, v)
        for j in self.joints:
            sl = slice(row, row + j.n_eq)
            j.evaluate(t, view, g[sl], G[sl], gt[sl], gam[sl])
            row += j.n_eq
        return g, G, gt, gam

    def constraints(self, t, q) -> np.ndarray:
        return self._constraint_parts(t, q, np.zeros_like(q))[0]

    def constraint_jacobian(self, t, q) -> np.ndarray:
        return self._constraint_parts(t, q, np.zeros_like(q))[1]

    def constraint_rate(self, t, q) -> np.ndarray:
        return self._constraint_parts(t, q, np.zeros_like(q))[2]

    def gamma(self, t, q, v) -> np.ndarray:
        return self._constraint_parts(t, q, v)[3]

    def constraint_terms(self, t, q, v):
        """(g, G, g_t, gamma) in one pass."""
        return self._constraint_parts(t, q, v)

    def force_jacobians(self, t, q, v):
        kq = np.zeros((self.n, self.n))
        kv = np.zeros((self.n, self.n))
        generic_forces, generic_bodies = [], []
        for b in self.bodies:
            sl = self._slice(b)
            jac = b.force_jacobians(t, q[sl], v[sl], self.gravity)
            if jac is None:
                generic_bodies.append(b)
            else:
                kq[sl, sl] += jac[0]
                kv[sl, sl] += jac[1]
        for force in self.forces_list:
            jac = force.jacobians(t, q, v, self.inputs)
            if jac is None:
                generic_forces.append(force)
            else:
                kq += jac[0]
                kv += jac[1]
        if generic_forces or generic_bodies:
            # finite differences over the elements without analytic Jacobians
            sub = _ForceSubset(self, generic_forces, generic_bodies)
            gq, gv = ConstrainedProblem.force_jacobians(sub, t, q, v)
            kq += gq
            kv += gv
        return kq, kv

    def kinetic_energy(self, v, q=None) -> float:
        q = np.zeros(self.n) if q is None else q
        return sum(b.kinetic_energy(q[self._slice(b)], v[self._slice(b)]) for b in self.bodies)

    def potential_energy(self, t, q) -> float:
        """Gravity and elastic potentials [J] (gravity zero at the ground origin)."""
        pe = sum(b.potential_energy(q[self._slice(b)], self.gravity) for b in self.bodies)
        view = StateView(q, np.zeros_like(q))
        for force in self.forces_list:
            pe += force.potential(t, view)
        return pe

    def energy(self, t, q, v) -> float:
        return self.kinetic_energy(v, q) + self.potential_energy(t, q)

    def range_violation(self, q):
        """The first beam whose transverse tip deflection [m] (``tip_deflection``, in the
        frame of its root) is larger than its length [m] -- beyond the range of any
        beam model, so the solution diverges -- as the dict of
        :meth:`ConstrainedProblem.range_violation`; None if there is none (a non-finite
        deflection included: the drivers check finiteness themselves)."""
        for b in self.bodies:
            tip = getattr(b, "tip_deflection", None)
            if tip is None:
                continue
            d = tip(q[self._slice(b)])
            # a 3D beam's deflection is a vector (transverse to its root): its length
            d = float(np.linalg.norm(d)) if np.ndim(d) else float(d)
            if abs(d) > b.length:
                hint = (" (geometric stiffening is off: above the first bending frequency "
                        "the linear model has no bound)"
                        if getattr(b, "fs", None) == 0.0 else "")
                return {"body": b.name, "quantity": "tip deflection", "value": float(d),
                        "limit": float(b.length), "hint": hint,
                        "text": f"beam {b.name!r}: tip deflection {d:.4g} m exceeds its "
                                f"length {b.length:g} m"}
        return None

    # -- sparse assembly (large systems; see mbdcore.dae.index3, sparse=) ---------------
    # Every matrix below equals its dense counterpart above as a scipy CSR matrix, built
    # without an n x n array: bodies give their own blocks, joints and forces are
    # evaluated on local column blocks of the bodies they act on.
    def mass_matrix_sparse(self, q=None) -> scipy.sparse.csr_matrix:
        """M(q) as a CSR matrix, block diagonal over the bodies (cached when constant)."""
        constant = all(b.constant_mass for b in self.bodies)
        if constant and self._sparse_mass_cache is not None:
            return self._sparse_mass_cache.copy()
        M = _block_diagonal([b.mass_matrix_sparse(None if q is None else q[self._slice(b)])
                             for b in self.bodies], self.n)
        if constant:
            self._sparse_mass_cache = M.copy()
        return M

    def _element_layouts(self, q, v) -> tuple[list, list]:
        """(joint layouts, force layouts), found once by evaluating every element with a
        view that records the bodies it reads, then at (q, v) and at a perturbed state
        for the columns it fills."""
        if self._layouts is not None:
            return self._layouts
        width = max((b.n_coords for b in self.bodies), default=0)
        qp = q + 1e-3 * np.maximum(1.0, np.abs(q)) * _probe_direction(self.n)
        vp = v + 1e-3 * np.maximum(1.0, np.abs(v)) * _probe_direction(self.n)[::-1]
        joints, row = [], 0
        for j in self.joints:
            rec = _LocalView(StateView(q, v))
            j.evaluate(0.0, rec, np.zeros(j.n_eq), np.zeros((j.n_eq, width)),
                       np.zeros(j.n_eq), np.zeros(j.n_eq))
            lay = _ElementLayout(j, rec.seen, np.arange(row, row + j.n_eq))
            row += j.n_eq
            for qq, vv in ((q, v), (qp, vp)):
                lay.observe(self._joint_block(lay, 0.0, StateView(qq, vv))[1])
            joints.append(lay)
        forces = []
        for force in self.forces_list:
            rec = _LocalView(StateView(q, v))
            force.apply(0.0, rec, np.zeros(width), self.inputs)
            lay = _ElementLayout(force, rec.seen, np.zeros(0, dtype=int))
            for qq, vv in ((q, v), (qp, vp)):
                lay.observe(self._force_block(lay, 0.0, StateView(qq, vv)))
            forces.append(lay)
        self._layouts = (joints, forces)
        return self._layouts

    def _joint_block(self, lay, t, view):
        """(g, local G block (n_eq, width), g_t, gamma) of one joint."""
        k = lay.element.n_eq
        g, gt, gam = np.zeros(k), np.zeros(k), np.zeros(k)
        G = np.zeros((k, lay.width))
        lay.element.evaluate(t, _LocalView(view, lay.offsets), g, G, gt, gam)
        return g, G, gt, gam

    def _force_block(self, lay, t, view) -> np.ndarray:
        """Generalised force of one force element on its local columns, (width,)."""
        f = np.zeros(lay.width)
        lay.element.apply(t, _LocalView(view, lay.offsets), f, self.inputs)
        return f

    def constraint_terms_sparse(self, t, q, v, all_rows: bool = False):
        """(g, G, g_t, gamma) like :meth:`constraint_terms`, G as a CSR matrix (every
        row, the removed dependent ones included, with ``all_rows``)."""
        joints, _ = self._element_layouts(q, v)
        if self.batched_constraints and self._m_all:
            plan = self.constraint_plan()
            g, G, gt, gam = plan.evaluate(t, q, v, sparse=True, per_joint=False)
            if plan.fallback:
                # the joints without a closed form on their own columns (no m x n array)
                per_joint = {id(j) for j, _ in plan.fallback}
                parts = self._per_joint_sparse(
                    t, q, v, [lay for lay in joints if id(lay.element) in per_joint])
                g, G, gt, gam = g + parts[0], (G + parts[1]).tocsr(), gt + parts[2], \
                    gam + parts[3]
        else:
            g, G, gt, gam = self._per_joint_sparse(t, q, v, joints)
        if all_rows:
            return g, G, gt, gam
        self.resolve_redundancy()
        return self._kept(g, G, gt, gam)

    def _per_joint_sparse(self, t, q, v, joints):
        """(g, G, g_t, gamma) over all rows from the joints of the layouts ``joints``
        (zero rows for the others), G as CSR."""
        m = self._m_all
        g, gt, gam = np.zeros(m), np.zeros(m), np.zeros(m)
        view = StateView(q, v)
        rows, cols, data = [], [], []
        for lay in joints:
            gk, Gk, gtk, gamk = self._joint_block(lay, t, view)
            g[lay.rows], gt[lay.rows], gam[lay.rows] = gk, gtk, gamk
            lay.observe(Gk)
            rows.append(np.repeat(lay.rows, lay.take.size))
            cols.append(np.tile(lay.pattern_cols, lay.rows.size))
            data.append(Gk[:, lay.take].ravel())
        if not rows:
            return g, scipy.sparse.csr_matrix((m, self.n)), gt, gam
        G = scipy.sparse.csr_matrix((np.concatenate(data),
                                     (np.concatenate(rows), np.concatenate(cols))),
                                    shape=(m, self.n))
        return g, G, gt, gam

    def force_jacobians_sparse(self, t, q, v):
        """(dF/dq, dF/dv) like :meth:`force_jacobians`, as CSR matrices.

        Bodies give their blocks (:meth:`BodyBase.force_jacobians_sparse`) or are
        differenced over their own coordinates; force elements give their analytic
        Jacobians restricted to the bodies they act on, or are differenced over the
        coordinates they load (forward differences of the same step as the dense path).
        """
        _, force_layouts = self._element_layouts(q, v)
        kq_blocks, kv_blocks = [], []
        for b in self.bodies:
            sl = self._slice(b)
            jac = b.force_jacobians_sparse(t, q[sl], v[sl], self.gravity)
            if jac is None:
                jac = _body_difference_jacobians(b, t, q[sl], v[sl], self.gravity)
            kq_blocks.append(jac[0])
            kv_blocks.append(jac[1])
        kq = _block_diagonal(kq_blocks, self.n)
        kv = _block_diagonal(kv_blocks, self.n)
        rows, cols, dq, dv = [], [], [], []
        for lay in force_layouts:
            jac = lay.element.jacobians(t, q, v, self.inputs)
            if jac is not None:
                # analytic, n x n but non-zero only on the bodies the force acts on
                ix = np.ix_(lay.cols, lay.cols)
                rows.append(np.repeat(lay.cols, lay.cols.size))
                cols.append(np.tile(lay.cols, lay.cols.size))
                dq.append(np.asarray(jac[0])[ix].ravel())
                dv.append(np.asarray(jac[1])[ix].ravel())
                continue
            f0 = self._force_block(lay, t, StateView(q, v))
            lay.observe(f0)
            pat, take = lay.pattern_cols, lay.take
            for x, out in ((q, dq), (v, dv)):
                xp = x.copy()
                for c in pat:
                    e = math.sqrt(np.finfo(float).eps) * max(1.0, abs(x[c]))
                    xp[c] = x[c] + e
                    view = StateView(xp, v) if x is q else StateView(q, xp)
                    out.append((self._force_block(lay, t, view)[take] - f0[take]) / e)
                    xp[c] = x[c]
            rows.append(np.tile(pat, pat.size))
            cols.append(np.repeat(pat, pat.size))
        if dq:          # none when every differenced force has loaded no column yet
            r, c = np.concatenate(rows), np.concatenate(cols)
            kq = kq + scipy.sparse.csr_matrix((np.concatenate(dq), (r, c)), shape=kq.shape)
            kv = kv + scipy.sparse.csr_matrix((np.concatenate(dv), (r, c)), shape=kv.shape)
        return kq.tocsr(), kv.tocsr()

    def geometric_stiffness_sparse(self, t, q, v, x, lam, dense: bool = False):
        """Forward differences of ``d(M(q) x + G(q)^T lam)/dq`` (n, n) and
        ``d(G(q) v)/dq`` (m, n) at fixed x, lam, v, as CSR matrices (``dense``: as
        arrays, for the dense iteration matrix of a small system).

        Only the coordinates that change them are visited: those of the bodies whose
        mass matrix depends on q (over their own block) and the columns the joints fill
        (each evaluating only the joints that read it), with the step
        sqrt(eps) max(1, |q_j|) of the dense iteration matrix of :mod:`mbdcore.dae.index3`.
        """
        joints, _ = self._element_layouts(q, v)
        lam = self._all_multipliers(lam)
        eps = math.sqrt(np.finfo(float).eps)
        rows, cols, vals = [], [], []
        for b in self.bodies:
            if b.constant_mass:
                continue
            sl = self._slice(b)
            qb, xb = q[sl], x[sl]
            m0 = b.mass_matrix(qb) @ xb
            qp = qb.copy()
            for j in range(b.n_coords):
                e = eps * max(1.0, abs(qb[j]))
                qp[j] = qb[j] + e
                vals.append((b.mass_matrix(qp) @ xb - m0) / e)
                qp[j] = qb[j]
                rows.append(np.arange(sl.start, sl.stop))
                cols.append(np.full(b.n_coords, sl.start + j))
        h_rows, h_cols, h_vals = [], [], []
        readers: dict[int, list] = {}
        base = {}
        view0 = StateView(q, v)
        if self.batched_constraints and self._m_all:
            # the batched rows: one C call of the plan per column they read
            plan = self.constraint_plan()
            (kr, kc, kv), (hr, hc, hv) = plan.geometric_terms(q, v, lam, t)
            rows += kr
            cols += kc
            vals += kv
            h_rows += hr
            h_cols += hc
            h_vals += hv
            per_joint = {id(j) for j, _ in plan.fallback}
            joints = [lay for lay in joints if id(lay.element) in per_joint]
        for lay in joints:
            Gk = self._joint_block(lay, t, view0)[1]
            lay.observe(Gk)
            base[id(lay)] = Gk[:, lay.take]
            for c in lay.pattern_cols:
                readers.setdefault(int(c), []).append(lay)
        qp = q.copy()
        for c, lays in readers.items():
            e = eps * max(1.0, abs(q[c]))
            qp[c] = q[c] + e
            view = StateView(qp, v)
            for lay in lays:
                G0 = base[id(lay)]
                Gp = self._joint_block(lay, t, view)[1][:, lay.take]
                lk, vk = lam[lay.rows], v[lay.pattern_cols]
                rows.append(lay.pattern_cols)
                cols.append(np.full(lay.take.size, c))
                vals.append((Gp.T @ lk - G0.T @ lk) / e)
                h_rows.append(lay.rows)
                h_cols.append(np.full(lay.rows.size, c))
                h_vals.append((Gp @ vk - G0 @ vk) / e)
            qp[c] = q[c]

        def coo(r, c, d, shape):
            if dense:
                out = np.zeros(shape)
                if r:
                    np.add.at(out, (np.concatenate(r), np.concatenate(c)), np.concatenate(d))
                return out
            if not r:
                return scipy.sparse.csr_matrix(shape)
            return scipy.sparse.csr_matrix((np.concatenate(d), (np.concatenate(r),
                                                                np.concatenate(c))),
                                           shape=shape)
        hg = coo(h_rows, h_cols, h_vals, (self._m_all, self.n))
        return coo(rows, cols, vals, (self.n, self.n)), self._kept(hg)[0]


def _block_diagonal(blocks: list, n: int) -> scipy.sparse.csr_matrix:
    """CSR block-diagonal matrix of the bodies' blocks (in coordinate order)."""
    if not blocks:
        return scipy.sparse.csr_matrix((n, n))
    return scipy.sparse.block_diag(blocks, format="csr")


def _body_difference_jacobians(body: BodyBase, t, qb, vb, gravity):
    """Forward-difference (dF/dq, dF/dv) of one body's applied forces over its own
    coordinates (the step of :meth:`ConstrainedProblem.force_jacobians`)."""
    n = body.n_coords
    f0 = body.applied_forces(t, qb, vb, gravity)
    kq, kv = np.empty((n, n)), np.empty((n, n))
    for j in range(n):
        e = np.sqrt(np.finfo(float).eps) * max(1.0, abs(qb[j]))
        qp = qb.copy()
        qp[j] += e
        kq[:, j] = (body.applied_forces(t, qp, vb, gravity) - f0) / e
        e = np.sqrt(np.finfo(float).eps) * max(1.0, abs(vb[j]))
        vp = vb.copy()
        vp[j] += e
        kv[:, j] = (body.applied_forces(t, qb, vp, gravity) - f0) / e
    return scipy.sparse.csr_matrix(kq), scipy.sparse.csr_matrix(kv)


class _ForceSubset(ConstrainedProblem):
    """Forces of a few elements only, for finite-difference Jacobians."""

    def __init__(self, system: System, forces: Iterable, bodies: Iterable = ()):
        self.system = system
        self.elements = list(forces)
        self.bodies = list(bodies)
        self.n = system.n

    def forces(self, t, q, v):
        f = np.zeros(self.n)
        for b in self.bodies:
            sl = slice(b.index, b.index + b.n_coords)
            f[sl] += b.applied_forces(t, q[sl], v[sl], self.system.gravity)
        view = StateView(q, v)
        for force in self.elements:
            force.apply(t, view, f, self.system.inputs)
        return f
