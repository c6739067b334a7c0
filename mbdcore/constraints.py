"""Planar joints and constraints g(q, t) = 0 in absolute coordinates.

Each constraint fills, for the current state, its rows of

* g      the constraint values,
* G      the Jacobian dg/dq,
* g_t    the explicit time derivative (driving constraints),
* gamma  the right side of G q'' = gamma, i.e. minus everything in g'' that is not
         linear in q'' (velocity-quadratic terms and -g_tt).

Markers are referenced as ``"body.marker"`` strings (or ``(body, (x, y))`` pairs);
``ground`` is the fixed body.  Angles in rad, lengths in m.
"""
from __future__ import annotations

import itertools
from typing import Callable

import numpy as np

from .blocks import ParameterError
from .multibody import E

_counter = itertools.count(1)


class Constraint:
    """Base class: ``n_eq`` equations between bodies of a System."""

    n_eq = 0
    kind = "constraint"

    def __init__(self, name: str | None = None):
        self.name = name or f"{self.kind}{next(_counter)}"
        self.system = None

    def bind(self, system) -> None:
        self.system = system

    def equation_names(self) -> list[str]:
        return [str(k) for k in range(self.n_eq)]

    def evaluate(self, t, view, g, G, gt, gam) -> None:
        raise NotImplementedError

    # helpers -----------------------------------------------------------------------
    @staticmethod
    def _add_point_jacobian(G_row, state, jphi, sign):
        """G_row += sign * d(point)/dq for the x/y component rows given (2, n)."""
        if state.index is None:
            return
        i = state.index
        G_row[0, i] += sign
        G_row[1, i + 1] += sign
        G_row[:, i + 2] += sign * jphi


class Revolute(Constraint):
    """Pin joint: marker ``a`` and marker ``b`` coincide (2 equations: x, y).
    Multipliers: the reaction force components [N] (on b, with sign convention G^T lambda)."""

    n_eq = 2
    kind = "revolute"

    def __init__(self, a, b, name: str | None = None):
        super().__init__(name)
        self.a_ref, self.b_ref = a, b

    def bind(self, system):
        super().bind(system)
        self.a = system.marker(self.a_ref)
        self.b = system.marker(self.b_ref)
        if self.a[0] is self.b[0]:
            raise ParameterError(f"{self.name}: both markers are on body {self.a[0].name!r}")

    def equation_names(self):
        return ["x", "y"]

    def evaluate(self, t, view, g, G, gt, gam):
        sa = view[self.a[0]]
        sb = view[self.b[0]]
        ra, _, ja, qa = sa.point(self.a[1])
        rb, _, jb, qb = sb.point(self.b[1])
        g[:] = ra - rb
        self._add_point_jacobian(G, sa, ja, 1.0)
        self._add_point_jacobian(G, sb, jb, -1.0)
        gam[:] = -(qa - qb)


class _RelativeAngle(Constraint):
    """Shared machinery for constraints linear in body angles: sum c_k phi_k - f(t)."""

    def angle_terms(self):
        """List of (body, coefficient)."""
        raise NotImplementedError

    def offset(self, t):
        """(f, f', f'') [rad, rad/s, rad/s^2]."""
        return 0.0, 0.0, 0.0

    def evaluate(self, t, view, g, G, gt, gam):
        val = 0.0
        q = view.q
        for body, c in self.angle_terms():
            if body.index is None:
                val += c * body.angle
            else:
                val += c * q[body.index + 2]
                G[0, body.index + 2] += c
        f, fd, fdd = self.offset(t)
        g[0] = val - f
        gt[0] = -fd
        gam[0] = fdd


class Weld(Constraint):
    """Fixed joint: markers coincide and the relative angle stays ``angle`` [rad]."""

    n_eq = 3
    kind = "weld"

    def __init__(self, a, b, angle: float | None = None, name: str | None = None):
        super().__init__(name)
        self.pin = Revolute(a, b, name=f"{self.name}.pin")
        self.angle = angle

    def bind(self, system):
        super().bind(system)
        self.pin.bind(system)
        self.body_a, self.body_b = self.pin.a[0], self.pin.b[0]
        if self.angle is None:
            self.angle = self.body_b.angle - self.body_a.angle

    def equation_names(self):
        return ["x", "y", "moment"]

    def evaluate(self, t, view, g, G, gt, gam):
        self.pin.evaluate(t, view, g[:2], G[:2], gt[:2], gam[:2])
        _angle_row(self.body_a, self.body_b, self.angle, view.q, g[2:], G[2:])


def _angle_row(body_a, body_b, angle, q, g, G):
    """g = phi_b - phi_a - angle (one row)."""
    pa = body_a.angle if body_a.index is None else q[body_a.index + 2]
    pb = body_b.angle if body_b.index is None else q[body_b.index + 2]
    g[0] = pb - pa - angle
    if body_a.index is not None:
        G[0, body_a.index + 2] -= 1.0
    if body_b.index is not None:
        G[0, body_b.index + 2] += 1.0


class PointOnLine(Constraint):
    """Marker ``point`` stays on the line through marker ``line`` with direction
    ``direction`` (fixed in the line's body frame).  Multiplier: normal force [N]."""

    n_eq = 1
    kind = "point_on_line"

    def __init__(self, line, point, direction=(1.0, 0.0), name: str | None = None):
        super().__init__(name)
        self.line_ref, self.point_ref = line, point
        u = np.asarray(direction, float)
        if u.shape != (2,) or not np.all(np.isfinite(u)) or np.linalg.norm(u) == 0:
            raise ParameterError(f"{self.name}: direction {direction!r} must be a non-zero 2-vector")
        self.normal_local = E @ (u / np.linalg.norm(u))

    def bind(self, system):
        super().bind(system)
        self.a = system.marker(self.line_ref)
        self.b = system.marker(self.point_ref)
        if self.a[0] is self.b[0]:
            raise ParameterError(f"{self.name}: line and point are on the same body")

    def equation_names(self):
        return ["normal"]

    def evaluate(self, t, view, g, G, gt, gam):
        sa = view[self.a[0]]
        sb = view[self.b[0]]
        ra, rad, ja, qa = sa.point(self.a[1])
        rb, rbd, jb, qb = sb.point(self.b[1])
        n, nd, jn, qn = sa.vector(self.normal_local)
        d, dd = rb - ra, rbd - rad
        g[0] = n @ d
        if sa.index is not None:
            i = sa.index
            G[0, i:i + 2] -= n
            G[0, i + 2] += jn @ d - n @ ja
        if sb.index is not None:
            i = sb.index
            G[0, i:i + 2] += n
            G[0, i + 2] += n @ jb
        # g'' = n''.d + 2 n'.d' + n.d''; keep the parts not linear in q''
        gam[0] = -(qn @ d + 2.0 * nd @ dd + n @ (qb - qa))


class Prismatic(Constraint):
    """Sliding joint: body ``b`` slides along ``direction`` (in body a's frame) without
    relative rotation; markers ``a`` and ``b`` stay on one line (2 equations).
    Multipliers: normal force [N] and reaction moment [N m]."""

    n_eq = 2
    kind = "prismatic"

    def __init__(self, a, b, direction=(1.0, 0.0), angle: float | None = None,
                 name: str | None = None):
        super().__init__(name)
        self.line = PointOnLine(a, b, direction, name=f"{self.name}.line")
        self.angle = angle

    def bind(self, system):
        super().bind(system)
        self.line.bind(system)
        self.body_a, self.body_b = self.line.a[0], self.line.b[0]
        if self.angle is None:
            self.angle = self.body_b.angle - self.body_a.angle

    def equation_names(self):
        return ["normal", "moment"]

    def evaluate(self, t, view, g, G, gt, gam):
        self.line.evaluate(t, view, g[:1], G[:1], gt[:1], gam[:1])
        _angle_row(self.body_a, self.body_b, self.angle, view.q, g[1:], G[1:])


class SynchronousGear(_RelativeAngle):
    """Synchronous gear (seed 001): the angle of joint 2 follows the angle of joint 1,

        (phi_d - phi_c) - ratio (phi_b - phi_a) - offset = 0,

    where joint 1 is between bodies a and b and joint 2 between c and d (body names).
    ``ratio = 1`` keeps the two joint angles equal; ``offset`` defaults to the value
    that the initial configuration satisfies."""

    n_eq = 1
    kind = "gear"

    def __init__(self, joint1: tuple[str, str], joint2: tuple[str, str], ratio: float = 1.0,
                 offset: float | None = None, name: str | None = None):
        super().__init__(name)
        self.joint1, self.joint2 = joint1, joint2
        if not np.isfinite(ratio):
            raise ParameterError(f"{self.name}: ratio {ratio!r} must be finite")
        self.ratio = float(ratio)
        self._offset = offset

    def bind(self, system):
        super().bind(system)
        a, b = (system.body(n) for n in self.joint1)
        c, d = (system.body(n) for n in self.joint2)
        self._terms = [(d, 1.0), (c, -1.0), (b, -self.ratio), (a, self.ratio)]
        if self._offset is None:
            self._offset = (d.angle - c.angle) - self.ratio * (b.angle - a.angle)

    def equation_names(self):
        return ["moment"]

    def angle_terms(self):
        return self._terms

    def offset(self, t):
        return self._offset, 0.0, 0.0


class AngleDriver(_RelativeAngle):
    """Driving constraint: the angle of body b relative to body a follows
    ``motion(t) -> (angle [rad], rate [rad/s], acceleration [rad/s^2])``.
    Multiplier: the driving torque (with the sign of G^T lambda) [N m]."""

    n_eq = 1
    kind = "driver"

    def __init__(self, a: str, b: str, motion: Callable[[float], tuple[float, float, float]],
                 name: str | None = None):
        super().__init__(name)
        self.a_name, self.b_name = a, b
        self.motion = motion

    def bind(self, system):
        super().bind(system)
        self._terms = [(system.body(self.b_name), 1.0), (system.body(self.a_name), -1.0)]

    def equation_names(self):
        return ["torque"]

    def angle_terms(self):
        return self._terms

    def offset(self, t):
        f, fd, fdd = self.motion(t)
        return float(f), float(fd), float(fdd)


def constant_rate(angle0: float, rate: float):
    """Motion with constant rate: angle0 + rate t."""
    return lambda t: (angle0 + rate * t, rate, 0.0)


def polynomial_motion(*coefficients: float):
    """Motion angle(t) = sum c_k t^k [rad]."""
    c = np.asarray(coefficients, float)
    d1 = np.polynomial.polynomial.polyder(c)
    d2 = np.polynomial.polynomial.polyder(c, 2)
    pv = np.polynomial.polynomial.polyval
    return lambda t: (pv(t, c), pv(t, d1), pv(t, d2))
