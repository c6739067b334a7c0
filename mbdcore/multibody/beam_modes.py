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

import numpy as np
from scipy.optimize import brentq

from mbdcore.jit import njit

__all__ = ["ClampedBeamModes", "frame_point"]


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


@njit
def frame_point(x, phi, G, d, dd, fs, dS):
    """Floating-frame kinematics of one beam point, shared by every assumed-mode model
    (the minimal-coordinate arm and the engine's modal beam).

    The point at distance ``x`` [m] along the undeformed beam sits, in the frame clamped
    at the root, at s = (x + u, w) with w = phi . d and the foreshortening
    u = -1/2 d^T G d (``fs`` = 1.0; 0.0 drops it).  ``d``, ``dd``: modal amplitudes [m]
    and their rates [m/s]; ``phi``, ``G``: the shapes and foreshortening matrix at x.

    Returns (s_x, s_y, s'_x, s'_y, u''_quad) -- u''_quad = -dd^T G dd, the
    velocity-quadratic part of the axial acceleration -- and fills ``dS`` (2 x N) with
    ds/d(delta_j) = (-(G d)_j, phi_j).
    """
    nm = phi.shape[0]
    u = 0.0
    w = 0.0
    ud = 0.0
    wd = 0.0
    udd = 0.0
    for j in range(nm):
        gd = 0.0
        gdd = 0.0
        for k in range(nm):
            gd += G[j, k] * d[k]
            gdd += G[j, k] * dd[k]
        gd *= fs
        gdd *= fs
        u -= 0.5 * d[j] * gd
        ud -= gd * dd[j]
        udd -= dd[j] * gdd
        w += phi[j] * d[j]
        wd += phi[j] * dd[j]
        dS[0, j] = -gd
        dS[1, j] = phi[j]
    return x + u, w, ud, wd, udd
