"""Kinematic quantities of spatial constraints and their Jacobians, through the body
state protocol only (``point`` and ``vector``), so that every joint works on any body
(natural-coordinate rigid bodies, bars, ANCF elements) and in the local column blocks of
the sparse assembly.

A :class:`Vec` is a ground-frame vector x(q) with its rate x', its Jacobian split over
the bodies it depends on, and the velocity-quadratic part of x'' (x'' = J q'' + quad).
A :class:`Scalar` is the same for a scalar; :func:`dot` makes one from two vectors,
and a constraint row is then ``Scalar.fill(g, G, gam)``:

    g = s,  G = ds/dq,  gamma = -quad      (G q'' = gamma is s'' = 0).
"""
from __future__ import annotations

import math

import numpy as np

from mbdcore.multibody.system import BodyState, scatter_jacobian

__all__ = ["Vec", "Scalar", "point", "slope", "vector", "dot", "relative_angle"]


class Vec:
    """A vector quantity: value x (3,), rate x' (3,), parts [(state, J (3, n_body))],
    quad (3,)."""

    __slots__ = ("x", "rate", "parts", "quad")

    def __init__(self, x, rate, parts, quad):
        self.x, self.rate, self.parts, self.quad = x, rate, parts, quad

    def __sub__(self, other: "Vec") -> "Vec":
        return Vec(self.x - other.x, self.rate - other.rate,
                   self.parts + [(s, -J) for s, J in other.parts], self.quad - other.quad)

    def fill_rows(self, g, G, gam) -> None:
        """Three rows x = 0."""
        g[:] = self.x
        for st, J in self.parts:
            scatter_jacobian(G, st, J)
        gam[:] = -self.quad


class Scalar:
    """A scalar quantity: value, rate, parts [(state, J (n_body,))], quad."""

    __slots__ = ("value", "rate", "parts", "quad")

    def __init__(self, value, rate, parts, quad):
        self.value, self.rate, self.parts, self.quad = value, rate, parts, quad

    def affine(self, k: float, shift: float = 0.0) -> "Scalar":
        """k s + shift."""
        return Scalar(k * self.value + shift, k * self.rate, [(st, k * J) for st, J in self.parts],
                      k * self.quad)

    def fill(self, g, G, gam, offset: float = 0.0) -> None:
        """One row s - offset = 0 (g, gam of shape (1,), G of shape (1, n) or (n,))."""
        g[0] = self.value - offset
        row = G[0] if np.ndim(G) == 2 else G
        for st, J in self.parts:
            scatter_jacobian(row, st, J)
        gam[0] = -self.quad


def point(state: BodyState, location) -> Vec:
    r, rd, J, quad = state.point(location)
    return Vec(r, rd, [(state, J)], quad)


def slope(state: BodyState, location) -> Vec:
    """The slope r_x [1] of a cable or beam at arc length ``location`` (its
    ``state.slope``)."""
    a, ad, J, quad = state.slope(location)
    return Vec(a, ad, [(state, J)], quad)


def vector(state: BodyState, location, local) -> Vec:
    n, nd, J, quad = state.vector(location, local)
    return Vec(n, nd, [(state, J)], quad)


def dot(a: Vec, b: Vec) -> Scalar:
    """a . b with (a.b)'' = J q'' + a''_quad . b + 2 a'.b' + a . b''_quad."""
    parts = [(s, b.x @ J) for s, J in a.parts] + [(s, a.x @ J) for s, J in b.parts]
    return Scalar(float(a.x @ b.x), float(a.rate @ b.x + a.x @ b.rate), parts,
                  float(a.quad @ b.x + 2.0 * a.rate @ b.rate + a.x @ b.quad))


def relative_angle(c: Scalar, s: Scalar) -> Scalar:
    """theta = atan2(s, c) with its Jacobian and quad:

    theta' = (c s' - s c') / rho^2,  rho^2 = c^2 + s^2,
    theta'' = (c s'' - s c'') / rho^2 - 2 theta' (c c' + s s') / rho^2."""
    rho2 = c.value ** 2 + s.value ** 2
    rate = (c.value * s.rate - s.value * c.rate) / rho2
    parts = [(st, (c.value / rho2) * J) for st, J in s.parts] + \
        [(st, (-s.value / rho2) * J) for st, J in c.parts]
    quad = (c.value * s.quad - s.value * c.quad) / rho2 - \
        2.0 * rate * (c.value * c.rate + s.value * s.rate) / rho2
    return Scalar(math.atan2(s.value, c.value), rate, parts, quad)
