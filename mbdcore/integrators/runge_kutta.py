"""Explicit Runge-Kutta steppers for first-order systems y' = f(t, y).

They implement :class:`mbdcore.integrators.base.Integrator` (``start(t, y)``,
``step(fun, h)``).  Methods that differ only by coefficients are data (as in
scipy.integrate, whose RK23, RK45 and DOP853 are Butcher tableaux over one step
function): the explicit Runge-Kutta family is a Butcher tableau over one shared stage
loop, and Gill's round-off-compensated scheme is its own four-register algorithm driven
by its coefficient vectors.  Names (in :mod:`mbdcore.dae.methods`):

=============== ===================================================================
``rk4``         classical Runge-Kutta, order 4 (Butcher tableau)
``gill``        Runge-Kutta-Gill, order 4, with Gill's round-off compensation (Gill
                1951; docs/benchmarks.md §8.1); the compensation register ``q`` is
                carried from step to step and is part of the stepper's state
``gill-tableau`` Gill's coefficients as a plain tableau (no compensation), for checks
``treanor``     Treanor's exponentially fitted 4-stage method, order 4 (Treanor 1966;
                docs/benchmarks.md §8.1): per component a decay rate ``p`` is estimated
                from two stages; ``p <= 0`` gives classical RK4, ``p > 0`` integrates
                ``y' = -p y + (smooth part)`` exactly for the linear part, which
                tolerates stiff decaying components (order 2 while ``p h >> 1``)
=============== ===================================================================
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from mbdcore.integrators.base import IntegrationError, Integrator
from mbdcore.jit import njit

__all__ = ["ExplicitRungeKutta", "RK4", "GillTableau", "Gill", "Treanor",
           "explicit_rk_steps", "gill_steps", "C_FIXED_STEP_HEADER", "c_stepping",
           "CSteppedKernel"]

#: RK4 and Gill in C99 (for models whose equations are C: the arm's kernel, the C FMUs),
#: summed as the steppers below sum them.
C_FIXED_STEP_HEADER = Path(__file__).resolve().parent / "native" / "fixed_step.h"


class ExplicitRungeKutta(Integrator):
    """Explicit Runge-Kutta method given by its Butcher tableau (class attributes).

    ``A`` (s x s, strictly lower triangular), ``B`` (s), ``C`` (s).
    """

    A: np.ndarray
    B: np.ndarray
    C: np.ndarray

    def _advance(self, fun, t, y, h):
        s = len(self.B)
        k = np.empty((s, y.size))
        for i in range(s):
            yi = y
            for j in range(i):
                if self.A[i, j] != 0.0:
                    yi = yi + (h * self.A[i, j]) * k[j]
            k[i] = fun(t + self.C[i] * h, yi)
        self.nfev += s
        self.nsteps += 1
        inc = np.zeros(y.size)          # summed as explicit_rk_steps does: bit-equal paths
        for i in range(s):
            inc = inc + self.B[i] * k[i]
        return y + h * inc

    def _advance_compiled(self, rhs, args, y, h, n):
        self.nfev += n * len(self.B)
        self.nsteps += n
        return explicit_rk_steps(rhs, np.array(y, dtype=float), args, self.A, self.B, h, n)


class RK4(ExplicitRungeKutta):
    """Classical fourth-order Runge-Kutta."""

    name = "rk4"
    order = 4
    stages = 4
    A = np.array([[0, 0, 0, 0], [0.5, 0, 0, 0], [0, 0.5, 0, 0], [0, 0, 1.0, 0]])
    B = np.array([1, 2, 2, 1]) / 6.0
    C = np.array([0, 0.5, 0.5, 1.0])


_R = math.sqrt(0.5)


class GillTableau(ExplicitRungeKutta):
    """Gill's coefficients as a plain tableau (no round-off compensation); for checks."""

    name = "gill-tableau"
    order = 4
    A = np.array([[0, 0, 0, 0],
                  [0.5, 0, 0, 0],
                  [_R - 0.5, 1 - _R, 0, 0],
                  [0, -_R, 1 + _R, 0]])
    B = np.array([1.0, 2 * (1 - _R), 2 * (1 + _R), 1.0]) / 6.0
    C = np.array([0, 0.5, 0.5, 1.0])


class Gill(Integrator):
    """Runge-Kutta-Gill with round-off compensation (Gill 1951; docs/benchmarks.md §8.1).

    Four registers per component: ``y`` and the compensation accumulator ``q``.  For
    stage j = 1..4 with ``k = h f(t + c_j h, y)``::

        y_new = y + a_j (k - b_j q);   r = y_new - y;   y <- y_new;   q <- q + 3 r - c_j k

    with a = (1/2, 1 - sqrt(1/2), 1 + sqrt(1/2), 1/6), b = (2, 1, 1, 2),
    c = (1/2, 1 - sqrt(1/2), 1 + sqrt(1/2), 1/2).  In exact arithmetic q returns to
    zero after the fourth stage for constant f; taking r as the increment actually
    stored (after rounding y + a_j(...)) makes q collect three times the rounding error
    and feed it back in the next step, which is why it is carried across steps (it
    starts at zero).
    """

    name = "gill"
    order = 4
    stages = 4
    a = (0.5, 1 - _R, 1 + _R, 1.0 / 6.0)
    b = (2.0, 1.0, 1.0, 2.0)
    c = (0.5, 1 - _R, 1 + _R, 0.5)
    t_frac = (0.0, 0.5, 0.5, 1.0)

    def __init__(self) -> None:
        self.q: np.ndarray | None = None
        super().__init__()

    def _restart(self) -> None:
        self.q = None

    def _advance(self, fun, t, y, h):
        q = np.zeros_like(y) if self.q is None else self.q
        y = np.array(y, dtype=float)
        for j in range(4):
            k = h * fun(t + self.t_frac[j] * h, y)
            y_new = y + self.a[j] * (k - self.b[j] * q)
            r = y_new - y          # the increment as actually stored, rounding included
            y = y_new
            q = q + 3.0 * r - self.c[j] * k
        self.q = q
        self.nfev += 4
        self.nsteps += 1
        return y

    def _advance_compiled(self, rhs, args, y, h, n):
        q = np.zeros_like(y) if self.q is None else self.q
        y, self.q = gill_steps(rhs, np.array(y, dtype=float), q.copy(), args,
                               np.array(self.a), np.array(self.b), np.array(self.c), h, n)
        self.nfev += 4 * n
        self.nsteps += n
        return y

    def get_state(self):
        state = super().get_state()
        state["q"] = None if self.q is None else self.q.copy()
        return state

    def set_state(self, state):
        super().set_state(state)
        q = state.get("q")
        self.q = None if q is None else np.array(q, dtype=float)


@njit
def explicit_rk_steps(rhs, y, args, A, B, h, n):
    """``n`` steps of ``h`` [s] of the explicit Runge-Kutta method with tableau (A, B) for
    ``y' = rhs(y, *args)``: the stage loop of :class:`ExplicitRungeKutta` compiled (the
    same operations in the same order)."""
    s = B.shape[0]
    k = np.empty((s, y.shape[0]))
    for _ in range(n):
        for i in range(s):
            yi = y
            for j in range(i):
                if A[i, j] != 0.0:
                    yi = yi + (h * A[i, j]) * k[j]
            k[i] = rhs(yi, *args)
        inc = np.zeros(y.shape[0])
        for i in range(s):
            inc = inc + B[i] * k[i]
        y = y + h * inc
    return y


@njit
def gill_steps(rhs, y, q, args, a, b, c, h, n):
    """``n`` steps of :class:`Gill` (with its compensation register ``q``) for
    ``y' = rhs(y, *args)``, compiled; returns (y, q)."""
    for _ in range(n):
        for j in range(4):
            k = h * rhs(y, *args)
            y_new = y + a[j] * (k - b[j] * q)
            r = y_new - y
            y = y_new
            q = q + 3.0 * r - c[j] * k
    return y, q


@njit
def _exp_fit_coefficients(z: float):
    """Treanor's r2, r3, r4 for z = p h >= 0 [-].

    r2 = (1 - e^-z)/z, r3 = (1 - r2)/z, r4 = (1/2 - r3)/z; the closed forms cancel
    catastrophically for small z, where the series sum_k (-z)^k/(k+m)! is used
    (12 terms: error below 0.1^12/12! for z < 0.1).
    """
    if z < 0.1:
        r2 = r3 = r4 = 0.0
        term = 1.0
        f1, f2, f3 = 1.0, 2.0, 6.0          # (k+1)!, (k+2)!, (k+3)! for k = 0
        for k in range(12):
            r2 += term / f1
            r3 += term / f2
            r4 += term / f3
            term *= -z
            f1 *= k + 2
            f2 *= k + 3
            f3 *= k + 4
        return r2, r3, r4
    r2 = -math.expm1(-z) / z
    r3 = (1.0 - r2) / z
    r4 = (0.5 - r3) / z
    return r2, r3, r4


@njit
def _treanor_decay_rates(w2, w3, q2, q3):
    """Fitted decay rates p_i [1/s] from the two stages at t + h/2: Treanor's
    p_i = -(q3_i - q2_i)/(w3_i - w2_i), set to 0 where it is not positive, and capped by
    rho = |q3 - q2| / |w3 - w2| (2-norms over all components).

    Why the cap: q3 - q2 = J (w3 - w2) + O(h^4), so the stage ratio is the diagonal
    J_ii only if the other components do not feed component i.  Where f_i is nearly
    constant along the motion but depends on other components (the rigid crank's
    angular velocity under a constant torque), w3_i - w2_i is O(h^3) while the coupled
    terms are O(h^2): the ratio grows like 1/h, p h stays O(1) however small h is, and
    the method converged with order 2 (p h ~ 4 at every step of the crank at h = 1 ms).
    rho is |J d| / |d| + O(h^2) for d = w3 - w2, at most the 2-norm of J, so the cap
    keeps every p_i bounded independently of h (the condition for order 4: see
    :func:`_treanor_fourth_point`).  For one component rho = |p| (no change); where a
    stiff component dominates the stage differences, as its own decay makes it do,
    rho is about its rate.  The cap is this project's, not Treanor's (1966).
    """
    n = w2.shape[0]
    nw = 0.0
    nq = 0.0
    for i in range(n):
        nw += (w3[i] - w2[i]) ** 2
        nq += (q3[i] - q2[i]) ** 2
    rho = math.sqrt(nq / nw) if nw > 0.0 else 0.0
    p = np.zeros(n)
    for i in range(n):
        dw = w3[i] - w2[i]
        if dw != 0.0:
            pi = -(q3[i] - q2[i]) / dw
            if pi > 0.0:
                p[i] = min(pi, rho)
    return p


@njit
def _treanor_fourth_point(p, w1, q2, q3, h):
    """The fourth stage point w4 for rates p [1/s]: w1 + h [q2 + 2 r3(p h) (q3 - q2)].

    Why this form: the two stages before it are explicit Euler half-steps that know
    nothing of p, and with them the fitted step is fourth order (for bounded p) only if
    w4 is RK4's point w1 + h q3 up to O(h^4) (expansion of the local error with the
    non-commuting L = -diag(p) and Jacobian J).  Here w4 - (w1 + h q3) =
    h (2 r3 - 1)(q3 - q2) = O(p h^4), and at p = 0 (r3 = 1/2) it is RK4's point.  The
    form used before, w1 + h [2 r3 (q3 - q1) + r2 (q1 - q2) + q2], is RK4's point plus
    p h^2 (q2 - q1)/6 = O(p h^3); that left the local error -h^4 K L J f / 72
    (K = J - L; p f' (f' + p) f h^4 / 72 for one component), which vanishes only where
    p = -J exactly, so the method was third order on coupled systems.  The weight
    2 r3 -> 2/(p h) keeps the stiff components of w4 from growing like (p h)^3, as RK4's
    w1 + h q3 does (for y' = -p y, w4 -> (1 - p h/2) w1 as p h grows).
    """
    n = w1.shape[0]
    w4 = np.empty(n)
    for i in range(n):
        if p[i] > 0.0:
            _, r3, _ = _exp_fit_coefficients(p[i] * h)
            w4[i] = w1[i] + h * (q2[i] + 2.0 * r3 * (q3[i] - q2[i]))
        else:
            w4[i] = w1[i] + h * q3[i]
    return w4


@njit
def _treanor_increment(p, w1, w2, w3, w4, q1, q2, q3, q4, h):
    n = w1.shape[0]
    dy = np.empty(n)
    for i in range(n):
        if p[i] > 0.0:
            r2, r3, r4 = _exp_fit_coefficients(p[i] * h)
            a1 = q1[i] + p[i] * w1[i]
            a2 = q2[i] + p[i] * w2[i]
            a3 = q3[i] + p[i] * w3[i]
            a4 = q4[i] + p[i] * w4[i]
            dy[i] = h * (q1[i] * r2 + (-3.0 * a1 + 2.0 * a2 + 2.0 * a3 - a4) * r3
                         + 4.0 * (a1 - a2 - a3 + a4) * r4)
        else:
            dy[i] = (h / 6.0) * (q1[i] + 2.0 * (q2[i] + q3[i]) + q4[i])
    return dy


class Treanor(Integrator):
    """Treanor's exponentially fitted Runge-Kutta method (Treanor 1966; docs/benchmarks.md §8.1).

    Per component i, with stages w1 = y, w2 = w1 + h/2 q1, w3 = w1 + h/2 q2 and
    q_k = f(w_k) (q1 at t, q2 and q3 at t + h/2), the fitted decay rate [1/s] is
    ``p = -(q3 - q2)/(w3 - w2)`` where that is positive, else 0, capped by
    ``|q3 - q2| / |w3 - w2|`` (:func:`_treanor_decay_rates`).  Where ``p = 0`` the step
    is classical RK4.  Where ``p > 0``, with r_m as in :func:`_exp_fit_coefficients`,::

        w4 = w1 + h [q2 + 2 r3 (q3 - q2)]
        dy = h { q1 r2 + [-3 Q1 + 2 Q2 + 2 Q3 - Q4] r3 + 4 [Q1 - Q2 - Q3 + Q4] r4 }

    with Q_k = q_k + p w_k (the forcing g = f + p y at the stages).  For y' = -p y + g(t)
    with g quadratic in t the step is exact; as p -> 0 it tends to RK4.

    Order 4 for fitted rates that stay bounded as h -> 0, which the cap ensures
    (measured 4.0 on the rigid crank, the pendulum, the oscillator and a nonlinear
    system).  On a stiff component with p h >> 1 the error is that of the quadratic fit
    of the forcing weighted by e^(-p (h - tau)), about g''' h^2 / (12 p^2): order 2 in
    h there (with the 1/p^2 factor), rising to 4 as p h falls below 1.  Stable on a
    decaying component at any p h (RK4 needs p h < 2.785).
    """

    name = "treanor"
    order = 4

    def _advance(self, fun, t, y, h):
        w1 = np.asarray(y, dtype=float)
        q1 = fun(t, w1)
        w2 = w1 + 0.5 * h * q1
        q2 = fun(t + 0.5 * h, w2)
        w3 = w1 + 0.5 * h * q2
        q3 = fun(t + 0.5 * h, w3)
        p = _treanor_decay_rates(w2, w3, q2, q3)
        w4 = _treanor_fourth_point(p, w1, q2, q3, h)
        q4 = fun(t + h, w4)
        self.nfev += 4
        self.nsteps += 1
        return w1 + _treanor_increment(p, w1, w2, w3, w4, q1, q2, q3, q4, h)


def c_stepping(stepper, size: int):
    """How a C kernel's ``advance`` runs ``stepper`` with the loops of
    :data:`C_FIXED_STEP_HEADER`: (method number, Gill's round-off register) — 0 for RK4,
    1 for Gill (its register copied, zeros at the start) — or None for a method that
    has no C loop (the caller then steps in Python)."""
    if isinstance(stepper, Gill):
        return 1, (np.zeros(size) if stepper.q is None else np.array(stepper.q, dtype=float))
    if type(stepper) is RK4:
        return 0, np.zeros(size)
    return None


class CSteppedKernel:
    """Base of a compiled right-hand side that brings its own C stepping loop over
    :data:`C_FIXED_STEP_HEADER` (the arm, the drive, the antenna axis): ``advance``, the
    hook :meth:`~mbdcore.integrators.Integrator.step_autonomous` calls, runs ``n`` steps
    of RK4 or Gill in one C call.  A subclass implements ``_advance(x, register, args, h,
    n, method) -> int`` (x advanced in place; nonzero: the C loop failed, reported as
    :attr:`failure`)."""

    failure = "non-finite state"

    def _advance(self, x, register, args, h: float, n: int, method: int) -> int:
        raise NotImplementedError

    def advance(self, stepper, y, args, h, n):
        """``n`` steps of ``stepper`` in C, or None if it is not RK4 or Gill."""
        chosen = c_stepping(stepper, y.size)
        if chosen is None:
            return None
        method, register = chosen
        x = np.array(y, dtype=float)
        if self._advance(x, register, args, float(h), int(n), method):
            raise IntegrationError(self.failure)
        if method == 1:
            stepper.q = register          # Gill's round-off register carries on
        return x
