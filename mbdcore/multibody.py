"""General planar multibody systems: rigid bodies, joints, forces (seeds 000, 001, 003).

Absolute (Cartesian) coordinates: each moving body i has ``q_i = (x_i, y_i, phi_i)``,
the position of its centre of mass [m] and its angle [rad] in the ground frame, so the
mass matrix is constant and diagonal, ``M = diag(m, m, J_cm)``.  Points are *markers*
fixed on a body at a local position ``s`` [m] from the centre of mass:

    r = p + A(phi) s,      r' = p' + phi' A E s,      r'' = p'' + phi'' A E s - phi'^2 A s

with A the rotation matrix and E the rotation by +90 deg.  Joints are constraints
g(q, t) = 0 (see :mod:`mbdcore.constraints`), forces add to F(t, q, q')
(see :mod:`mbdcore.forces`), and the system is a :class:`~mbdcore.dae.ConstrainedProblem`
for the formulations in :mod:`mbdcore.formulations`.

Build with the Python API::

    sys = System(gravity=(0, -9.80665))
    crank = sys.add_body("crank", mass=1.4, inertia=0.065625, position=(0.375, 0),
                         markers={"O": (-0.375, 0), "A": (0.375, 0)})
    sys.ground.add_marker("O", (0, 0))
    sys.add_joint(Revolute("ground.O", "crank.O"))

or from a declarative file (:mod:`mbdcore.model_file`).
"""
from __future__ import annotations

import math
from typing import Any, Iterable

import numpy as np

from .blocks import ParameterError
from .dae import ConstrainedProblem

E = np.array([[0.0, -1.0], [1.0, 0.0]])


def rot(phi: float) -> np.ndarray:
    """Rotation matrix A(phi), shape (2, 2)."""
    c, s = math.cos(phi), math.sin(phi)
    return np.array([[c, -s], [s, c]])


def _finite(name: str, value, shape=None) -> np.ndarray:
    arr = np.asarray(value, dtype=float)
    if shape is not None and arr.shape != shape:
        raise ParameterError(f"{name} = {value!r} must have shape {shape}")
    if not np.all(np.isfinite(arr)):
        raise ParameterError(f"{name} = {value!r} must be finite")
    return arr


class Body:
    """A planar rigid body (or the ground, whose coordinates are not unknowns).

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

    def __init__(self, name: str, mass: float = 1.0, inertia: float = 1.0,
                 position=(0.0, 0.0), angle: float = 0.0, velocity=(0.0, 0.0),
                 omega: float = 0.0, markers: dict | None = None, ground: bool = False):
        if not isinstance(name, str) or not name.isidentifier():
            raise ParameterError(f"body name {name!r} must be an identifier")
        self.name = name
        self.is_ground = ground
        if not ground:
            for label, val in (("mass", mass), ("inertia", inertia)):
                if not (isinstance(val, (int, float)) and math.isfinite(val) and val > 0.0):
                    raise ParameterError(
                        f"body {name!r}: {label} = {val!r} is invalid: accepted values are "
                        f"finite numbers > 0 ({'kg' if label == 'mass' else 'kg.m2'}); a "
                        "massless free body has no defined acceleration")
        self.mass = float(mass)
        self.inertia = float(inertia)
        self.position = _finite(f"body {name!r} position", position, (2,))
        self.angle = float(_finite(f"body {name!r} angle", angle))
        self.velocity = _finite(f"body {name!r} velocity", velocity, (2,))
        self.omega = float(_finite(f"body {name!r} omega", omega))
        self.markers: dict[str, np.ndarray] = {}
        self.index: int | None = None  # first coordinate in q (None for the ground)
        for key, loc in (markers or {}).items():
            self.add_marker(key, loc)

    def add_marker(self, name: str, local) -> "Body":
        """Add a named point at ``local`` [m] in the body frame (from the centre of mass)."""
        if name in self.markers:
            raise ParameterError(f"body {self.name!r} already has a marker {name!r}")
        self.markers[name] = _finite(f"marker {self.name}.{name}", local, (2,))
        return self

    def __repr__(self) -> str:
        return f"Body({self.name!r}, mass={self.mass}, inertia={self.inertia})"


class BodyState:
    """Position-level and velocity-level data of one body in a given state."""

    __slots__ = ("body", "index", "p", "phi", "pd", "phid", "A")

    def __init__(self, body: Body, q: np.ndarray, v: np.ndarray):
        self.body = body
        self.index = body.index
        if body.index is None:
            self.p, self.phi = body.position, body.angle
            self.pd, self.phid = np.zeros(2), 0.0
        else:
            i = body.index
            self.p, self.phi = q[i:i + 2], q[i + 2]
            self.pd, self.phid = v[i:i + 2], v[i + 2]
        self.A = rot(self.phi)

    def point(self, s: np.ndarray):
        """(r, r', J_phi, quad) of the point at local s: r = p + A s, J_phi = dr/dphi,
        quad = velocity-quadratic part of r'' (= -phi'^2 A s)."""
        As = self.A @ s
        jphi = np.array((-As[1], As[0]))
        return self.p + As, self.pd + self.phid * jphi, jphi, (-self.phid * self.phid) * As

    def vector(self, u: np.ndarray):
        """(n, n', dn/dphi, quad) of the body-fixed direction u: n = A u."""
        n = self.A @ u
        jphi = np.array((-n[1], n[0]))
        return n, self.phid * jphi, jphi, (-self.phid * self.phid) * n


class StateView:
    """Body states of one (q, q') evaluated once and shared by all elements."""

    __slots__ = ("q", "v", "_cache")

    def __init__(self, q: np.ndarray, v: np.ndarray):
        self.q, self.v = q, v
        self._cache: dict[str, BodyState] = {}

    def __getitem__(self, body: Body) -> BodyState:
        s = self._cache.get(body.name)
        if s is None:
            s = self._cache[body.name] = BodyState(body, self.q, self.v)
        return s


class System(ConstrainedProblem):
    """A planar multibody system in absolute coordinates.

    Parameters
    ----------
    gravity : (float, float)
        Gravitational acceleration [m/s^2] in the ground frame; (0, 0) for a horizontal
        plane.
    """

    def __init__(self, gravity=(0.0, 0.0)):
        self.gravity = _finite("gravity", gravity, (2,))
        self.ground = Body("ground", ground=True)
        self.bodies: list[Body] = []
        self.joints: list = []
        self.forces_list: list = []
        self._by_name: dict[str, Body] = {"ground": self.ground}
        self.inputs: dict[str, float] = {}
        self._mass = np.zeros(0)
        self.n = 0
        self.m = 0

    # -- building -------------------------------------------------------------------
    def add_body(self, name: str, **kwargs: Any) -> Body:
        """Add a moving body (see :class:`Body` for the keywords)."""
        if name in self._by_name:
            raise ParameterError(f"a body named {name!r} exists already")
        body = Body(name, **kwargs)
        body.index = 3 * len(self.bodies)
        self.bodies.append(body)
        self._by_name[name] = body
        self.n = 3 * len(self.bodies)
        self._mass = np.concatenate([[b.mass, b.mass, b.inertia] for b in self.bodies])
        return body

    def body(self, name: str) -> Body:
        try:
            return self._by_name[name]
        except KeyError:
            raise ParameterError(f"no body named {name!r}; bodies: "
                                 f"{', '.join(self._by_name)}") from None

    def marker(self, ref) -> tuple[Body, np.ndarray]:
        """Resolve ``"body.marker"`` (or ``(body_name, (x, y))``) to (body, local point)."""
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
        return self.body(bname), _finite(f"point on {bname}", local, (2,))

    def add_joint(self, joint):
        """Add a constraint (joint, gear, driver); returns it."""
        joint.bind(self)
        names = {j.name for j in self.joints}
        if joint.name in names:
            raise ParameterError(f"two constraints are named {joint.name!r}")
        self.joints.append(joint)
        self.m = sum(j.n_eq for j in self.joints)
        return joint

    add_constraint = add_joint

    def add_force(self, force):
        """Add a force element; its inputs (if any) become inputs of the system."""
        force.bind(self)
        for name in force.input_names:
            if name in self.inputs:
                raise ParameterError(f"input {name!r} is declared twice")
            self.inputs[name] = 0.0
        self.forces_list.append(force)
        return force

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
        """(q0, v0) from the bodies' initial positions and velocities (not assembled)."""
        q = np.concatenate([[*b.position, b.angle] for b in self.bodies]) if self.bodies else np.zeros(0)
        v = np.concatenate([[*b.velocity, b.omega] for b in self.bodies]) if self.bodies else np.zeros(0)
        return q, v

    def coordinate_names(self) -> list[str]:
        return [f"{b.name}.{c}" for b in self.bodies for c in ("x", "y", "phi")]

    def multiplier_names(self) -> list[str]:
        return [f"{j.name}.{k}" for j in self.joints for k in j.equation_names()]

    def view(self, q, v) -> StateView:
        return StateView(q, v)

    # -- ConstrainedProblem ------------------------------------------------------------
    def mass_matrix(self, q=None) -> np.ndarray:
        return np.diag(self._mass)

    def mass_diagonal(self) -> np.ndarray:
        return self._mass.copy()

    def forces(self, t, q, v) -> np.ndarray:
        f = np.zeros(self.n)
        f[0::3] = self._mass[0::3] * self.gravity[0]
        f[1::3] = self._mass[1::3] * self.gravity[1]
        view = StateView(q, v)
        for force in self.forces_list:
            force.apply(t, view, f, self.inputs)
        return f

    def _constraint_parts(self, t, q, v):
        g = np.zeros(self.m)
        G = np.zeros((self.m, self.n))
        gt = np.zeros(self.m)
        gam = np.zeros(self.m)
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
        generic = []
        for force in self.forces_list:
            jac = force.jacobians(t, q, v, self.inputs)
            if jac is None:
                generic.append(force)
            else:
                kq += jac[0]
                kv += jac[1]
        if generic:  # finite differences over the elements without analytic Jacobians
            sub = _ForceSubset(self, generic)
            gq, gv = ConstrainedProblem.force_jacobians(sub, t, q, v)
            kq += gq
            kv += gv
        return kq, kv

    def kinetic_energy(self, v) -> float:
        return 0.5 * float(v @ (self._mass * v))

    def potential_energy(self, t, q) -> float:
        """Gravity and elastic potentials [J] (gravity zero at y = 0)."""
        pe = -float(self._mass[0::3] @ (q[0::3] * self.gravity[0] + q[1::3] * self.gravity[1]))
        view = StateView(q, np.zeros_like(q))
        for force in self.forces_list:
            pe += force.potential(t, view)
        return pe

    def energy(self, t, q, v) -> float:
        return self.kinetic_energy(v) + self.potential_energy(t, q)


class _ForceSubset(ConstrainedProblem):
    """Forces of a few elements only, for finite-difference Jacobians."""

    def __init__(self, system: System, forces: Iterable):
        self.system = system
        self.elements = list(forces)
        self.n = system.n

    def forces(self, t, q, v):
        f = np.zeros(self.n)
        view = StateView(q, v)
        for force in self.elements:
            force.apply(t, view, f, self.system.inputs)
        return f
