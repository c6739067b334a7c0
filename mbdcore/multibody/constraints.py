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
import math
from typing import Callable

import numpy as np

from mbdcore.blocks import ParameterError
from mbdcore.multibody.system import E, scatter_jacobian

__all__ = ["Constraint", "MarkerPair", "Revolute", "Weld", "PointOnLine", "Prismatic",
           "SynchronousGear", "AngleDriver", "ConstantRate", "PolynomialMotion", "SpinUp",
           "constant_rate",
           "polynomial_motion"]

_counter = itertools.count(1)


class Constraint:
    """Base class: ``n_eq`` equations between bodies of a System."""

    n_eq = 0
    kind = "constraint"
    #: the rows are at most quadratic in q when the bodies' kinematics are linear in
    #: their coordinates (dot products of points and directions of natural-coordinate
    #: bodies, bars, ANCF elements): the batched assembly then evaluates them from
    #: their quadratic form (checked, :mod:`mbdcore.multibody.assembly`)
    quadratic = False

    def __init__(self, name: str | None = None):
        self.name = name or f"{self.kind}{next(_counter)}"
        self.system = None

    def bind(self, system) -> None:
        self.system = system

    def equation_names(self) -> list[str]:
        return [str(k) for k in range(self.n_eq)]

    def evaluate(self, t, view, g, G, gt, gam) -> None:
        raise NotImplementedError

    def row_forms(self):
        """The closed forms of the rows, in order, for the batched assembly
        (:mod:`mbdcore.multibody.assembly`), or None (evaluated by :meth:`evaluate`):
        ``("points", frame_a, frame_b)`` (g = r_a - r_b, two rows),
        ``("angle_sine", frame_a, frame_b, angle)`` (g = sin(theta_b - theta_a - angle)),
        ``("angle_sum", [(frame, c), ...], offset)`` (g = sum c theta - offset(t)[0])."""
        return None


class MarkerPair(Constraint):
    """A constraint between two markers ``a`` and ``b`` ("body.marker") on different
    bodies, planar or spatial: binding resolves them to ``self.a`` and ``self.b``, each
    (body, location), and refuses a pair on one body."""

    def __init__(self, a, b, name: str | None = None):
        super().__init__(name)
        self.a_ref, self.b_ref = a, b

    def bind(self, system):
        super().bind(system)
        self.a = system.marker(self.a_ref)
        self.b = system.marker(self.b_ref)
        if self.a[0] is self.b[0]:
            raise ParameterError(f"{self.name}: both markers are on body {self.a[0].name!r}")


class Revolute(MarkerPair):
    """Pin joint: marker ``a`` and marker ``b`` coincide (2 equations: x, y).
    Multipliers: the reaction force components [N] (on b, with sign convention G^T lambda)."""

    n_eq = 2
    kind = "revolute"

    def equation_names(self):
        return ["x", "y"]

    def evaluate(self, t, view, g, G, gt, gam):
        sa = view[self.a[0]]
        sb = view[self.b[0]]
        ra, _, ja, qa = sa.point(self.a[1])
        rb, _, jb, qb = sb.point(self.b[1])
        g[:] = ra - rb
        scatter_jacobian(G, sa, ja, 1.0)
        scatter_jacobian(G, sb, jb, -1.0)
        gam[:] = -(qa - qb)

    def row_forms(self):
        return [("points", self.a, self.b)]


class _RelativeAngle(Constraint):
    """Shared machinery for constraints linear in orientations: sum c_k theta_k - f(t),
    theta_k the orientation of a body (rigid: its angle) or of a body at a marker."""

    def angle_terms(self):
        """List of ((body, location), coefficient)."""
        raise NotImplementedError

    def offset(self, t):
        """(f, f', f'') [rad, rad/s, rad/s^2]."""
        return 0.0, 0.0, 0.0

    def evaluate(self, t, view, g, G, gt, gam):
        val = 0.0
        quad = 0.0
        for (body, loc), c in self.angle_terms():
            st = view[body]
            th, _, jth, qth = st.angle(loc)
            val += c * th
            quad += c * qth
            scatter_jacobian(G[0], st, jth, c)
        f, fd, fdd = self.offset(t)
        g[0] = val - f
        gt[0] = -fd
        gam[0] = fdd - quad

    def row_forms(self):
        return [("angle_sum", list(self.angle_terms()), self.offset)]


def initial_angle(frame) -> float:
    """Orientation [rad] of (body, location) in the body's initial configuration."""
    body, loc = frame
    if body.is_ground:
        return body.state(None, None).angle(loc)[0]
    qb, vb = body.initial_coordinates()
    return body.state(qb, vb).angle(loc)[0]


def _angle_row(view, frame_a, frame_b, angle, g, G, gam):
    """Relative orientation fixed: g = sin(theta_b - theta_a - angle) (one row).

    The sine form is smooth across the +-pi branch cut of a flexible body's orientation
    (an ANCF slope angle is only defined modulo 2 pi), equals the angle difference to
    third order at the solution, and keeps G = cos(d) (J_b - J_a) regular there."""
    sa, sb = view[frame_a[0]], view[frame_b[0]]
    ta, tad, ja, qa = sa.angle(frame_a[1])
    tb, tbd, jb, qb = sb.angle(frame_b[1])
    d = tb - ta - angle
    c, s = math.cos(d), math.sin(d)
    g[0] = s
    scatter_jacobian(G[0], sa, ja, -c)
    scatter_jacobian(G[0], sb, jb, c)
    # g'' = c d'' - s d'^2, d'' = J_b qdd_b - J_a qdd_a + (quad_b - quad_a)
    gam[0] = -(c * (qb - qa) - s * (tbd - tad) ** 2)


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
        self.frame_a, self.frame_b = self.pin.a, self.pin.b
        if self.angle is None:
            self.angle = initial_angle(self.frame_b) - initial_angle(self.frame_a)

    def equation_names(self):
        return ["x", "y", "moment"]

    def evaluate(self, t, view, g, G, gt, gam):
        self.pin.evaluate(t, view, g[:2], G[:2], gt[:2], gam[:2])
        _angle_row(view, self.frame_a, self.frame_b, self.angle, g[2:], G[2:], gam[2:])

    def row_forms(self):
        return [("points", self.frame_a, self.frame_b),
                ("angle_sine", self.frame_a, self.frame_b, self.angle)]


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
        self.direction = u.copy()                       # as given (for model files)
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
        n, nd, jn, qn = sa.vector(self.a[1], self.normal_local)
        d, dd = rb - ra, rbd - rad
        g[0] = n @ d
        scatter_jacobian(G[0], sa, d @ jn - n @ ja)
        scatter_jacobian(G[0], sb, n @ jb)
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
        self.frame_a, self.frame_b = self.line.a, self.line.b
        if self.angle is None:
            self.angle = initial_angle(self.frame_b) - initial_angle(self.frame_a)

    def equation_names(self):
        return ["normal", "moment"]

    def evaluate(self, t, view, g, G, gt, gam):
        self.line.evaluate(t, view, g[:1], G[:1], gt[:1], gam[:1])
        _angle_row(view, self.frame_a, self.frame_b, self.angle, g[1:], G[1:], gam[1:])


class SynchronousGear(_RelativeAngle):
    """Synchronous gear (patent CN107220421A, docs/benchmarks.md §8.2): the angle of joint 2
    follows the angle of joint 1,

        (phi_d - phi_c) - ratio (phi_b - phi_a) - offset = 0,

    where joint 1 is between bodies a and b and joint 2 between c and d (body names,
    or "body.marker" for the orientation of a flexible body at a marker).
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
        a, b = (system.frame(n) for n in self.joint1)
        c, d = (system.frame(n) for n in self.joint2)
        self._terms = [(d, 1.0), (c, -1.0), (b, -self.ratio), (a, self.ratio)]
        if self._offset is None:
            self._offset = sum(k * initial_angle(fr) for fr, k in self._terms)

    @property
    def offset_angle(self) -> float:
        """The constant offset [rad] of the gear relation."""
        return self._offset

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
        self._terms = [(system.frame(self.b_name), 1.0), (system.frame(self.a_name), -1.0)]

    def equation_names(self):
        return ["torque"]

    def angle_terms(self):
        return self._terms

    def offset(self, t):
        f, fd, fdd = self.motion(t)
        return float(f), float(fd), float(fdd)


class ConstantRate:
    """Motion with constant rate: angle0 + rate t [rad] (callable: t -> (f, f', f''))."""

    def __init__(self, angle0: float, rate: float):
        self.angle0, self.rate = float(angle0), float(rate)

    def __call__(self, t: float):
        return self.angle0 + self.rate * t, self.rate, 0.0

    def __repr__(self) -> str:
        return f"ConstantRate(angle0={self.angle0!r}, rate={self.rate!r})"


class PolynomialMotion:
    """Motion angle(t) = sum c_k t^k [rad] (callable: t -> (f, f', f''))."""

    def __init__(self, *coefficients: float):
        self.coefficients = np.asarray(coefficients, float)
        P = np.polynomial.polynomial
        self._d1 = P.polyder(self.coefficients)
        self._d2 = P.polyder(self.coefficients, 2)

    def __call__(self, t: float):
        pv = np.polynomial.polynomial.polyval
        return pv(t, self.coefficients), pv(t, self._d1), pv(t, self._d2)

    def __repr__(self) -> str:
        return f"PolynomialMotion{tuple(self.coefficients.tolist())}"


class SpinUp:
    """Smooth spin-up to a final rate (Kane, Ryan & Banerjee 1987; docs/benchmarks.md
    §2), callable t -> (angle [rad], rate [rad/s], acceleration [rad/s^2]):
    theta = (W/T)[t^2/2 + (T/2 pi)^2 (cos(2 pi t/T) - 1)] for t <= T, W (t - T/2) after;
    the rate rises from 0 to W = ``final_rate`` [rad/s] in T = ``spin_up_time`` [s] with
    zero acceleration at both ends."""

    def __init__(self, final_rate: float, spin_up_time: float = 15.0):
        self.final_rate = float(final_rate)
        self.spin_up_time = float(spin_up_time)
        if not math.isfinite(self.final_rate):
            raise ParameterError(f"SpinUp: final_rate = {final_rate!r} is invalid: accepted "
                                 "values are finite numbers [rad/s]")
        if not (math.isfinite(self.spin_up_time) and self.spin_up_time > 0.0):
            raise ParameterError(f"SpinUp: spin_up_time = {spin_up_time!r} is invalid: "
                                 "accepted values are finite numbers > 0 [s]")

    def __call__(self, t: float):
        w, T = self.final_rate, self.spin_up_time
        if t >= T:
            return w * (t - T / 2), w, 0.0
        k = 2 * math.pi / T
        return ((w / T) * (t * t / 2 + (math.cos(k * t) - 1) / k**2),
                (w / T) * (t - math.sin(k * t) / k),
                (w / T) * (1 - math.cos(k * t)))

    def __repr__(self) -> str:
        return f"SpinUp(final_rate={self.final_rate!r}, spin_up_time={self.spin_up_time!r})"


def constant_rate(angle0: float, rate: float) -> ConstantRate:
    """Motion with constant rate: angle0 + rate t."""
    return ConstantRate(angle0, rate)


def polynomial_motion(*coefficients: float) -> PolynomialMotion:
    """Motion angle(t) = sum c_k t^k [rad]."""
    return PolynomialMotion(*coefficients)
