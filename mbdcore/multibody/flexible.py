"""Flexible bodies with configuration-dependent mass: the floating-frame modal beam
(Liu et al. 1999; docs/benchmarks.md §8.5) and the finite-segment beam
(docs/benchmarks.md §8.3).

Both are "point-mass bodies": their kinetic energy is a sum over mass points (Gauss
points of the beam, or the centres of rigid segments) and rotors whose positions and
angles are known functions of the body coordinates, r_p(q), psi_r(q).  With r' = J q',
Lagrange's equations of the body are

    M(q) q'' = Q - sum_p m_p J_p^T a_p(q, q') - sum_r I_r c_r a_r  + F_elastic,
    M(q)     = sum_p m_p J_p^T J_p + sum_r I_r c_r c_r^T,

where a_p = J_p' q' is the velocity-quadratic part of the point's acceleration (the
same construction as the two-link arm in :mod:`mbdcore.models.manipulator`).  This is exact
for the assumed kinematics, so energy is conserved without damping.
"""
from __future__ import annotations

import math

import numpy as np

from mbdcore.blocks import ParameterError
from mbdcore.multibody.beam_modes import BEAM_KINEMATICS, BeamPoints, ClampedBeamModes
from mbdcore.multibody.system import BodyBase, BodyState

__all__ = ["E2", "PointMassBody", "ModalBeam", "FiniteSegmentBeam"]

E2 = np.array([[0.0, -1.0], [1.0, 0.0]])


def _positive(owner: str, label: str, value, unit: str, allow_zero: bool = False) -> float:
    value = float(value)
    ok = math.isfinite(value) and (value >= 0.0 if allow_zero else value > 0.0)
    if not ok:
        rel = ">= 0" if allow_zero else "> 0"
        raise ParameterError(f"{owner}: {label} = {value!r} is invalid: accepted values are "
                             f"finite numbers {rel} [{unit}]")
    return value


class PointMassBody(BodyBase):
    """Base of bodies described by mass points and rotors (see module docstring).

    Subclasses implement ``_points(qb, vb) -> (m, r, rd, J, quad)`` with shapes (P,),
    (P, 2), (P, 2), (P, 2, n), (P, 2); ``_rotors(qb, vb) -> (I, c, quad)`` with shapes
    (R,), (R, n), (R,); and ``_elastic(qb, vb) -> (f, energy)``.
    """

    constant_mass = False

    def _set_root_state(self, position, angle, velocity, omega, markers, length):
        """Initial root frame (position [m], angle [rad], velocity [m/s], rate [rad/s])
        and the markers "root", "tip" and the user's (distances along the beam [m])."""
        self.position = np.asarray(position, float)
        self.angle0 = float(angle)
        self.velocity = np.asarray(velocity, float)
        self.omega = float(omega)
        self.markers = {}
        self.add_marker("root", 0.0)
        self.add_marker("tip", length)
        for key, loc in (markers or {}).items():
            self.add_marker(key, loc)

    def initial_coordinates(self):
        q = np.zeros(self.n_coords)
        v = np.zeros(self.n_coords)
        q[:2], q[2] = self.position, self.angle0
        v[:2], v[2] = self.velocity, self.omega
        return q, v

    def _frame_names(self) -> list[str]:
        return [f"{self.name}.{c}" for c in ("x", "y", "theta")]

    def _terms(self, qb, vb):
        m, r, rd, J, quad = self._points(qb, vb)
        inertia, c, rquad = self._rotors(qb, vb)
        M = np.einsum("p,pai,paj->ij", m, J, J) + np.einsum("r,ri,rj->ij", inertia, c, c)
        h = np.einsum("p,pai,pa->i", m, J, quad) + np.einsum("r,ri,r->i", inertia, c, rquad)
        return m, r, J, M, h

    def mass_matrix(self, qb):
        if qb is None:
            qb = self.initial_coordinates()[0]
        return self._terms(qb, np.zeros_like(qb))[3]

    def applied_forces(self, t, qb, vb, gravity):
        m, _, J, _, h = self._terms(qb, vb)
        f_el, _ = self._elastic(qb, vb)
        return -h + np.einsum("p,pai,a->i", m, J, gravity) + f_el

    def kinetic_energy(self, qb, vb):
        return 0.5 * float(vb @ self._terms(qb, vb)[3] @ vb)

    def potential_energy(self, qb, gravity):
        m, r, *_ = self._points(qb, np.zeros_like(qb))
        return -float(m @ (r @ gravity)) + self._elastic(qb, np.zeros_like(qb))[1]


class ModalBeam(PointMassBody):
    """Floating-frame beam with assumed modes and geometric stiffening (Liu et al. 1999 and
    Kane, Ryan & Banerjee 1987; docs/benchmarks.md §8.5).

    Coordinates ``(x, y, theta, delta_1..delta_N)``: the position [m] and angle [rad] of
    the frame clamped at the beam's root, and N modal amplitudes [m] (shapes normalised
    to unit tip deflection).  A point at distance x along the undeformed beam is at
    r = p + A(theta) s(x), with the slope angle psi = sum phi_j'(x) delta_j and

        exact (inextensible):  s = int_0^x (cos psi, sin psi) dxi
        second order:          s = (x + u(x), w(x)),  w = sum phi_j(x) delta_j,
                               u = -1/2 int_0^x (w')^2 = -1/2 delta^T G(x) delta

    (``kinematics``; both from ``native/beam_kinematics.c``, shared with the two-link
    arm).  They agree to second order in the deflection; the second-order form's error
    grows as its cube (docs/benchmarks.md §8.5).  The foreshortening gives the
    centrifugal stiffening of a spinning beam (Kane, Ryan & Banerjee 1987);
    ``geometric_stiffening=False`` drops it (second-order kinematics only), the
    classical linear model that diverges when the spin rate exceeds the first bending
    frequency.  Marker locations are distances x [m] from the root along the beam.

    Parameters
    ----------
    name : str
    length, rho_a, ei : beam length [m], linear density [kg/m], flexural stiffness [N m^2].
    n_modes : int, 1..10
    mode_shapes : {"clamped-free", "clamped-mass"}
        Clamped-mass shapes use the tip body (tip_mass, tip_inertia).
    tip_mass, tip_inertia : rigid body at the tip [kg], [kg m^2] (part of the body).
    damping : stiffness-proportional modal damping coefficient [s].
    position, angle, velocity, omega : initial state of the root frame.
    n_quad : Gauss points along the beam.
    kinematics : {"exact", "second-order"}, optional
        Default "exact", or "second-order" with ``geometric_stiffening=False``.
    """

    def __init__(self, name: str, length: float, rho_a: float, ei: float, n_modes: int = 3,
                 mode_shapes: str = "clamped-free", tip_mass: float = 0.0,
                 tip_inertia: float = 0.0, geometric_stiffening: bool = True,
                 damping: float = 0.0, position=(0.0, 0.0), angle: float = 0.0,
                 velocity=(0.0, 0.0), omega: float = 0.0, markers: dict | None = None,
                 n_quad: int = 24, kinematics: str | None = None):
        super().__init__(name)
        own = f"modal beam {name!r}"
        if kinematics is None:
            kinematics = "exact" if geometric_stiffening else "second-order"
        if kinematics not in BEAM_KINEMATICS:
            raise ParameterError(f"{own}: kinematics = {kinematics!r} is invalid: accepted "
                                 f"{', '.join(map(repr, BEAM_KINEMATICS))}")
        if kinematics == "exact" and not geometric_stiffening:
            raise ParameterError(f"{own}: geometric_stiffening = False drops the "
                                 "foreshortening of the second-order kinematics; the exact "
                                 "kinematics always have it: choose kinematics = "
                                 "'second-order' to drop it")
        self.kinematics = kinematics
        self.length = _positive(own, "length", length, "m")
        self.rho_a = _positive(own, "rho_a", rho_a, "kg/m")
        self.ei = _positive(own, "ei", ei, "N.m2")
        self.tip_mass = _positive(own, "tip_mass", tip_mass, "kg", allow_zero=True)
        self.tip_inertia = _positive(own, "tip_inertia", tip_inertia, "kg.m2", allow_zero=True)
        self.damping = _positive(own, "damping", damping, "s", allow_zero=True)
        if not (isinstance(n_modes, int) and 1 <= n_modes <= 10):
            raise ParameterError(f"{own}: n_modes = {n_modes!r} is invalid: accepted 1..10")
        if mode_shapes not in ("clamped-free", "clamped-mass"):
            raise ParameterError(f"{own}: mode_shapes = {mode_shapes!r} is invalid: accepted "
                                 "'clamped-free', 'clamped-mass'")
        self.n_modes = n_modes
        self.mode_shapes = mode_shapes
        self.n_quad = n_quad
        self.n_coords = 3 + n_modes
        self.fs = 1.0 if geometric_stiffening else 0.0
        tip = (self.tip_mass, self.tip_inertia) if mode_shapes == "clamped-mass" else (0.0, 0.0)
        self.modes = ClampedBeamModes.compute(n_modes, self.length, self.rho_a, self.ei, *tip)
        x, w = self.modes.gauss_points(n_quad)
        self.K = self.modes.stiffness()
        self._tip_slope = self.modes.shapes(self.length, 1)[0]
        # the mass points (Gauss points, and the tip with a tip mass), in one set
        self._m = w * self.rho_a
        if self.tip_mass > 0.0:
            x = np.append(x, self.length)
            self._m = np.append(self._m, self.tip_mass)
        self._points_set = BeamPoints(self.modes, x, kinematics, self.fs)
        self._tip = BeamPoints(self.modes, np.append(x[x < self.length], self.length),
                               kinematics, self.fs)
        self._set_root_state(position, angle, velocity, omega, markers, self.length)

    # -- BodyBase ------------------------------------------------------------------
    def check_location(self, label, location):
        x = float(location)
        if not (0.0 <= x <= self.length):
            raise ParameterError(f"{label}: x = {x!r} is invalid: accepted 0..{self.length} m "
                                 "along the beam")
        # x = 0 is the root frame's origin; elsewhere the exact kinematics integrate along
        # the mass points' segments up to x (the same sums as the mass points: a marker at
        # the tip is where the tip mass would be)
        points = None
        if x > 0.0:
            inner = self._points_set.x[self._points_set.x < x]
            points = BeamPoints(self.modes, np.append(inner, x), self.kinematics, self.fs)
        return (x, points, self.modes.shapes(x, 1)[0])

    def coordinate_names(self):
        return self._frame_names() + [f"{self.name}.delta{j + 1}" for j in range(self.n_modes)]

    def _points(self, qb, vb):
        r, rd, J, quad = self._points_set.evaluate(qb, vb)
        return self._m, r, rd, J, quad

    def _rotors(self, qb, vb):
        if self.tip_inertia == 0.0:
            return np.zeros(0), np.zeros((0, self.n_coords)), np.zeros(0)
        c = np.zeros((1, self.n_coords))
        c[0, 2] = 1.0
        c[0, 3:] = self._tip_slope
        return np.array([self.tip_inertia]), c, np.zeros(1)

    def _elastic(self, qb, vb):
        d, dd = qb[3:], vb[3:]
        f = np.zeros(self.n_coords)
        f[3:] = -self.K @ d - self.damping * (self.K @ dd)
        return f, 0.5 * float(d @ self.K @ d)

    def force_jacobians(self, t, qb, vb, gravity):
        return None  # configuration-dependent inertia: finite differences

    def state(self, qb, vb):
        return _ModalBeamState(self, qb, vb)

    def tip_deflection(self, qb) -> float:
        """Transverse tip deflection in the floating (root) frame [m], positive along the
        frame's +y axis: to the left of the beam's direction (counter-clockwise); the sum
        of the modal amplitudes for the second-order kinematics."""
        r = self._tip.evaluate(qb, np.zeros_like(qb))[0][-1] - qb[:2]
        return float(-math.sin(qb[2]) * r[0] + math.cos(qb[2]) * r[1])


class _ModalBeamState(BodyState):
    def __init__(self, body: ModalBeam, qb, vb):
        self.body, self.index, self.qb, self.vb = body, body.index, qb, vb

    def point(self, location):
        _, points, _ = location
        if points is None:                       # the root: the frame's origin
            J = np.zeros((2, self.body.n_coords))
            J[0, 0] = J[1, 1] = 1.0
            return self.qb[:2].copy(), self.vb[:2].copy(), J, np.zeros(2)
        r, rd, J, quad = points.evaluate(self.qb, self.vb)
        return r[-1], rd[-1], J[-1], quad[-1]

    def angle(self, location=None):
        b = self.body
        slope = location[2] if location is not None else np.zeros(b.n_modes)
        J = np.zeros(b.n_coords)
        J[2] = 1.0
        J[3:] = slope
        return float(J @ self.qb), float(J @ self.vb), J, 0.0


class FiniteSegmentBeam(PointMassBody):
    """Finite-segment beam in relative coordinates (docs/benchmarks.md §8.3).

    The beam of length L is cut into N elements of length l = L/N; the bending
    flexibility of each element is lumped into a rotational spring k = EI/l (damper
    c_rot) at its middle, so the body is a chain of N + 1 rigid pieces (the first and
    last of length l/2, the others l) joined by N spring hinges.  Coordinates
    ``(x, y, theta, alpha_1..alpha_N)``: the root position [m] and angle [rad] of the
    first piece and the relative hinge angles [rad].  Tip deflection and bending
    frequencies converge as O(1/N^2) (midpoint rule of the beam's flexibility).
    Marker locations are distances s [m] from the root along the undeformed beam.
    """

    def __init__(self, name: str, length: float, rho_a: float, ei: float, n_segments: int = 10,
                 damping: float = 0.0, tip_mass: float = 0.0, tip_inertia: float = 0.0,
                 position=(0.0, 0.0), angle: float = 0.0, velocity=(0.0, 0.0),
                 omega: float = 0.0, markers: dict | None = None):
        super().__init__(name)
        own = f"finite-segment beam {name!r}"
        self.length = _positive(own, "length", length, "m")
        self.rho_a = _positive(own, "rho_a", rho_a, "kg/m")
        self.ei = _positive(own, "ei", ei, "N.m2")
        self.tip_mass = _positive(own, "tip_mass", tip_mass, "kg", allow_zero=True)
        self.tip_inertia = _positive(own, "tip_inertia", tip_inertia, "kg.m2", allow_zero=True)
        self.rot_damping = _positive(own, "damping", damping, "N.m.s/rad", allow_zero=True)
        if not (isinstance(n_segments, int) and n_segments >= 1):
            raise ParameterError(f"{own}: n_segments = {n_segments!r} is invalid: accepted >= 1")
        self.n_segments = N = n_segments
        self.n_coords = 3 + N
        el = self.length / N
        self.k_hinge = self.ei / el
        self.piece_length = np.array([el / 2] + [el] * (N - 1) + [el / 2])
        self.piece_start = np.concatenate([[0.0], np.cumsum(self.piece_length)[:-1]])
        #: piece k turns with theta + alpha_1 + ... + alpha_k: its angle row
        self.piece_angles = np.zeros((N + 1, self.n_coords))
        self.piece_angles[:, 2] = 1.0
        for k in range(1, N + 1):
            self.piece_angles[k, 3:3 + k] = 1.0
        self._set_root_state(position, angle, velocity, omega, markers, self.length)

    def check_location(self, label, location):
        s = float(location)
        if not (0.0 <= s <= self.length):
            raise ParameterError(f"{label}: s = {s!r} is invalid: accepted 0..{self.length} m")
        k = int(np.searchsorted(self.piece_start, s, side="right") - 1)
        k = min(max(k, 0), self.n_segments)
        return (k, s - self.piece_start[k])

    def coordinate_names(self):
        return self._frame_names() + [f"{self.name}.alpha{j + 1}" for j in range(self.n_segments)]

    def chain(self, qb, vb, pieces, offsets):
        """Points at ``offsets`` [m] along ``pieces``: r, r', J, quad (the body's
        state, ``_SegmentState``, reads its points here)."""
        psi = self.piece_angles @ qb                # piece angles (N+1,)
        psid = self.piece_angles @ vb
        e = np.stack([np.cos(psi), np.sin(psi)], axis=1)
        ee = e @ E2.T                               # E e: derivative of e by psi
        pieces = np.asarray(pieces)
        # lens[p, j]: how much of piece j lies between the root and point p
        lens = np.where(np.arange(len(self.piece_length))[None, :] < pieces[:, None],
                        self.piece_length[None, :], 0.0)
        lens[np.arange(len(pieces)), pieces] = offsets
        r = qb[:2] + lens @ e
        rd = vb[:2] + (lens * psid) @ ee
        J = np.einsum("pj,ja,ji->pai", lens, ee, self.piece_angles)
        J[:, 0, 0] += 1.0
        J[:, 1, 1] += 1.0
        quad = -(lens * psid**2) @ e
        return r, rd, J, quad

    def _points(self, qb, vb):
        N = self.n_segments
        pieces = list(range(N + 1))
        offsets = list(self.piece_length / 2)
        m = self.rho_a * self.piece_length
        if self.tip_mass > 0.0:
            pieces.append(N)
            offsets.append(self.piece_length[-1])
            m = np.concatenate([m, [self.tip_mass]])
        r, rd, J, quad = self.chain(qb, vb, pieces, offsets)
        return m, r, rd, J, quad

    def _rotors(self, qb, vb):
        inertia = self.rho_a * self.piece_length**3 / 12.0
        c = self.piece_angles
        if self.tip_inertia > 0.0:
            inertia = np.concatenate([inertia, [self.tip_inertia]])
            c = np.vstack([c, c[-1]])
        return inertia, c, np.zeros(len(inertia))

    def _elastic(self, qb, vb):
        a, ad = qb[3:], vb[3:]
        f = np.zeros(self.n_coords)
        f[3:] = -self.k_hinge * a - self.rot_damping * ad
        return f, 0.5 * self.k_hinge * float(a @ a)

    def state(self, qb, vb):
        return _SegmentState(self, qb, vb)

    def tip_deflection(self, qb) -> float:
        """Transverse tip deflection relative to the root frame [m], positive to the left
        of the root's direction (counter-clockwise), as ModalBeam's."""
        r, *_ = self.chain(qb, np.zeros_like(qb), [self.n_segments], [self.piece_length[-1]])
        d = r[0] - qb[:2]
        return float(-math.sin(qb[2]) * d[0] + math.cos(qb[2]) * d[1])


class _SegmentState(BodyState):
    def __init__(self, body: FiniteSegmentBeam, qb, vb):
        self.body, self.index, self.qb, self.vb = body, body.index, qb, vb

    def point(self, location):
        k, off = location
        r, rd, J, quad = self.body.chain(self.qb, self.vb, [k], [off])
        return r[0], rd[0], J[0], quad[0]

    def angle(self, location=None):
        k = 0 if location is None else location[0]
        c = self.body.piece_angles[k]
        return float(c @ self.qb), float(c @ self.vb), c, 0.0
