"""Assumed-mode shape functions of a clamped Euler-Bernoulli beam.

A uniform beam of length ``l`` [m], linear density ``rho_a`` [kg/m] and flexural
stiffness ``ei`` [N m^2], clamped at x = 0 and carrying at x = l a rigid body of mass
``tip_mass`` m [kg], rotary inertia ``tip_inertia`` J about the beam tip [kg m^2] and
first moment ``tip_moment`` S = m c [kg m] (its centre of mass lies a distance c beyond
the tip, along the beam axis).  Its free-vibration modes are

    phi(x) = A (cosh bx - cos bx) + B (sinh bx - sin bx),     omega = b^2 sqrt(ei/rho_a)

with the natural boundary conditions at the tip that follow from the tip body's kinetic
energy 1/2 m w_t^2 + S w_t s_t + 1/2 J s_t^2 (w_t, s_t: rates of tip deflection and
slope):

    ei phi''(l)  =  omega^2 (J phi'(l) + S phi(l))     (moments on the tip body)
    ei phi'''(l) = -omega^2 (m phi(l) + S phi'(l))     (forces on the tip body)

m = S = J = 0 gives the clamped-free modes (1 + cos bl cosh bl = 0,
bl = 1.8751, 4.6941, 7.8548, ...); a tip body gives the "clamped-mass" modes of
De Luca & Siciliano (1991), who keep m and J (S = 0).  Shapes are normalised to unit
tip deflection, phi_i(l) = 1, so modal coordinates are tip-deflection contributions [m].
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np
from scipy.optimize import brentq

from mbdcore.cbuild import TABLE_LAYOUT_HEADER
from mbdcore.native import TableLayout, kernel_library, table_layout

__all__ = ["ClampedBeamModes", "BEAM_KINEMATICS", "SEGMENT_NODES", "segment_tables",
           "BEAM_KINEMATICS_C_SOURCE", "beam_kinematics", "beam_points_layout", "BeamPoints"]

#: The kinematics of an assumed-mode beam (``native/beam_kinematics.c``): the
#: second-order form of the literature and the exact inextensible form.
BEAM_KINEMATICS = ("second-order", "exact")

#: Gauss nodes per segment between the points of the exact kinematics (the slope angle is
#: a sum of mode slopes, smooth: 4 nodes per segment of l/24 integrate it to round-off).
SEGMENT_NODES = 4

#: The beam point kinematics in C: the one implementation of the modal beam and the arm.
BEAM_KINEMATICS_C_SOURCE = Path(__file__).resolve().parent / "native" / "beam_kinematics.c"

#: The compiled beam kinematics, typed; built once per machine, cached per process.
beam_kinematics = kernel_library("mbdcore.multibody._beam_kinematics",
                                 BEAM_KINEMATICS_C_SOURCE, [TABLE_LAYOUT_HEADER])


@cache
def beam_points_layout() -> TableLayout:
    """The table of ``beam_points`` (``BEAM_POINTS_LAYOUT`` of native/beam_kinematics.c):
    a beam's points and the mode shapes' data there."""
    return table_layout(beam_kinematics, "BEAM_POINTS_LAYOUT")


def _char_matrix(bl, length, rho_a, tip_mass, tip_inertia, tip_moment):
    """2x2 matrix whose null space holds (A, B) for the wavenumber b = bl/l."""
    b = bl / length
    ch, sh, c, s = np.cosh(bl), np.sinh(bl), np.cos(bl), np.sin(bl)
    mu = b**4 / rho_a          # omega^2 / ei
    # phi and its derivatives divided by b^k, as rows over (A, B)
    phi = np.array([ch - c, sh - s])
    dphi = np.array([sh + s, ch - c])
    d2phi = np.array([ch + c, sh + s])
    d3phi = np.array([sh - s, ch + c])
    jt = mu * tip_inertia / b
    st = mu * tip_moment / b**2
    mt = mu * tip_mass / b**3
    return np.array([d2phi - jt * dphi - st * phi,      # moment condition / b^2
                     d3phi + mt * phi + st * dphi])     # force condition / b^3


def _char_det(bl, *args):
    # scaled by cosh^2 so that the function stays O(1) for large bl (roots unchanged)
    return np.linalg.det(_char_matrix(bl, *args)) / np.cosh(bl) ** 2


@dataclass(frozen=True)
class ClampedBeamModes:
    """Mode shapes of a clamped beam with a tip body (see module docstring).

    Attributes
    ----------
    length : float
        Beam length l [m].
    rho_a, ei : float
        Linear density [kg/m] and flexural stiffness [N m^2].
    tip_mass, tip_inertia, tip_moment : float
        Tip body mass [kg], rotary inertia about the tip [kg m^2] and first moment
        about the tip along the beam axis [kg m].
    beta_l : ndarray, shape (n,)
        Dimensionless wavenumbers b_i l.
    coef : ndarray, shape (n, 2)
        (A_i, B_i) with phi_i(l) = 1.
    """

    length: float
    rho_a: float
    ei: float
    tip_mass: float
    tip_inertia: float
    tip_moment: float
    beta_l: np.ndarray
    coef: np.ndarray

    @classmethod
    def compute(cls, n: int, length: float, rho_a: float, ei: float, tip_mass: float = 0.0,
                tip_inertia: float = 0.0, tip_moment: float = 0.0) -> "ClampedBeamModes":
        """First ``n`` modes (n >= 1)."""
        if n < 1:
            raise ValueError(f"number of modes n = {n} is invalid: accepted n >= 1")
        args = (length, rho_a, tip_mass, tip_inertia, tip_moment)
        roots = []
        grid = np.linspace(1e-3, 4.0 * (n + 2), 400 * (n + 2))
        vals = [_char_det(x, *args) for x in grid]
        for a, b, fa, fb in zip(grid[:-1], grid[1:], vals[:-1], vals[1:]):
            if fa == 0.0:
                roots.append(a)
            elif fa * fb < 0.0:
                roots.append(brentq(_char_det, a, b, args=args, xtol=1e-15, rtol=1e-15,
                                    maxiter=200))
            if len(roots) == n:
                break
        if len(roots) < n:
            raise RuntimeError(f"found only {len(roots)} of {n} beam modes")
        coef = np.empty((n, 2))
        for i, bl in enumerate(roots):
            m = _char_matrix(bl, *args)
            # null vector of the (rank-1) 2x2 matrix from its larger row
            row = m[0] if np.abs(m[0]).sum() >= np.abs(m[1]).sum() else m[1]
            ab = np.array([row[1], -row[0]])
            tip = ab[0] * (np.cosh(bl) - np.cos(bl)) + ab[1] * (np.sinh(bl) - np.sin(bl))
            coef[i] = ab / tip
        return cls(length, rho_a, ei, tip_mass, tip_inertia, tip_moment, np.array(roots), coef)

    @property
    def n(self) -> int:
        return len(self.beta_l)

    @property
    def omega(self) -> np.ndarray:
        """Natural frequencies of the beam with its tip body [rad/s]."""
        b = self.beta_l / self.length
        return b**2 * np.sqrt(self.ei / self.rho_a)

    def shapes(self, x, derivative: int = 0) -> np.ndarray:
        """phi_i^(derivative)(x), shape (len(x), n) [m^-derivative]."""
        x = np.atleast_1d(np.asarray(x, dtype=float))
        b = self.beta_l / self.length
        bx = np.outer(x, b)
        ch, sh, c, s = np.cosh(bx), np.sinh(bx), np.cos(bx), np.sin(bx)
        # derivatives of (cosh - cos) and (sinh - sin) cycle with period 4
        first = [ch - c, sh + s, ch + c, sh - s][derivative % 4]
        second = [sh - s, ch - c, sh + s, ch + c][derivative % 4]
        return (self.coef[:, 0] * first + self.coef[:, 1] * second) * b**derivative

    def foreshortening(self, x, n_gauss: int = 60) -> np.ndarray:
        """G(x) = int_0^x phi'(s) phi'(s)^T ds, shape (len(x), n, n) [1/m]: the axial
        shortening of the beam at x is u(x) = -1/2 delta^T G(x) delta."""
        x = np.atleast_1d(np.asarray(x, dtype=float))
        xi, wi = np.polynomial.legendre.leggauss(n_gauss)
        G = np.empty((len(x), self.n, self.n))
        for p, xp in enumerate(x):
            dphi = self.shapes(0.5 * xp * (xi + 1.0), 1)
            G[p] = (dphi * (0.5 * xp * wi)[:, None]).T @ dphi
        return G

    def stiffness(self, n_gauss: int = 60) -> np.ndarray:
        """Modal stiffness K_jk = int_0^l EI phi_j'' phi_k'' dx [N/m] (n, n)."""
        xg, wg = np.polynomial.legendre.leggauss(n_gauss)
        d2 = self.shapes(0.5 * self.length * (xg + 1.0), 2)
        return self.ei * (d2 * (0.5 * self.length * wg)[:, None]).T @ d2

    def gauss_points(self, n_quad: int):
        """Gauss-Legendre nodes x [m] and weights [m] over [0, l]."""
        xg, wg = np.polynomial.legendre.leggauss(n_quad)
        return 0.5 * self.length * (xg + 1.0), 0.5 * self.length * wg


def segment_tables(modes: ClampedBeamModes, ends, m: int = SEGMENT_NODES):
    """Weights [m] and slopes phi' [1/m] at ``m`` Gauss nodes of each segment [0, e_1],
    [e_1, e_2], ... ending at the points ``ends`` [m] (ascending, in (0, l]): what the
    exact kinematics integrate cos and sin of the slope angle along.

    Returns
    -------
    weights : ndarray, shape (len(ends), m)
    slopes : ndarray, shape (len(ends), m, n)
    """
    ends = np.asarray(ends, dtype=float)
    bounds = np.concatenate([[0.0], ends])
    if not (np.all(np.diff(bounds) > 0.0) and ends[-1] <= modes.length * (1 + 1e-12)):
        raise ValueError(f"segment ends must increase strictly within (0, {modes.length}] m")
    t, w = np.polynomial.legendre.leggauss(m)
    a, b = bounds[:-1, None], bounds[1:, None]
    nodes = a + 0.5 * (b - a) * (t + 1.0)
    weights = 0.5 * (b - a) * w
    return weights, modes.shapes(nodes.ravel(), 1).reshape(len(ends), m, modes.n)


class BeamPoints:
    """Points of a modal beam at distances ``x`` [m] along it (ascending), with the
    beam's ``kinematics`` (:data:`BEAM_KINEMATICS`; ``stiffening`` 0 drops the
    second-order foreshortening), evaluated by ``native/beam_kinematics.c``.

    ``evaluate(qb, vb)`` with the body coordinates ``(x, y, theta, delta_1..delta_N)`` [m,
    m, rad, m] and their rates gives the points' positions r (P, 2) [m], velocities
    (P, 2) [m/s], Jacobians dr/dqb (P, 2, 3 + N) and velocity-quadratic accelerations
    (P, 2) [m/s^2].
    """

    def __init__(self, modes: ClampedBeamModes, x, kinematics: str = "exact",
                 stiffening: float = 1.0):
        x = np.atleast_1d(np.asarray(x, dtype=float))
        n = modes.n
        none = np.zeros(0)
        if kinematics == "exact":
            weights, slopes = segment_tables(modes, x)
            self.table = beam_points_layout().pack(
                N=n, fs=1.0, n_x=0, x=none, phi=none, G=none, n_seg=len(x), m=SEGMENT_NODES,
                wseg=weights, dseg=slopes)
        elif kinematics == "second-order":
            self.table = beam_points_layout().pack(
                N=n, fs=float(stiffening), n_x=len(x), x=x, phi=modes.shapes(x),
                G=modes.foreshortening(x, 40), n_seg=0, m=0, wseg=none, dseg=none)
        else:
            raise ValueError(f"kinematics {kinematics!r}: accepted {', '.join(BEAM_KINEMATICS)}")
        self.x = x
        self.n_coords = 3 + n
        self._lib = beam_kinematics()
        if self._lib.beam_table_length(self.table) != self.table.size:
            raise ValueError("beam point table does not match native/beam_kinematics.c")
        P = len(x)
        self._work = np.empty(P * (6 + 2 * n))

    def evaluate(self, qb, vb):
        P, n = len(self.x), self.n_coords
        r, rd, quad = np.empty((P, 2)), np.empty((P, 2)), np.empty((P, 2))
        J = np.empty((P, 2, n))
        self._lib.beam_points(self.table, np.ascontiguousarray(qb, dtype=float),
                              np.ascontiguousarray(vb, dtype=float), r, rd, J, quad,
                              self._work)
        return r, rd, J, quad
