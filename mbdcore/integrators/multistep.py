"""Gear's backward differentiation formulas (BDF), fixed step and variable step/order.

Yan & Al Dmour (2022; docs/benchmarks.md §8.1) list Gear's method (Gear 1971) for orders
k = 1..6 (BDF1-2 A-stable, BDF3-6 A(alpha)-stable; angles in :data:`BDF_STABILITY_ANGLE`,
misprints of the paper's angle table in docs/benchmarks.md §8.7), used with variable
step and order, and an "improved Gear" family with a free parameter beta.  This module
provides

=======================  ===============================================================
:class:`BDF`              fixed-step BDF-k, k = 1..6 (registry ``bdf1`` .. ``bdf6``)
:class:`ImprovedGear`     fixed-step ``sum a_j y_{n+1-j} = h (beta f_{n+1} + (1-beta) f_n)``
                          of order k, beta free (beta = 20 in Yan & Al Dmour 2022)
:class:`GearSolver`       variable-step, variable-order BDF, orders 1..max_order <= 6,
                          ``solve(fun, t_span, y0)``
:class:`GearIntegrator`   the same solver behind the fixed-interval :class:`Integrator`
                          interface (registry ``gear``): each ``step`` integrates
                          [t, t + h] adaptively and keeps the step/order history
=======================  ===============================================================

The fixed-step methods are one class, :class:`LinearMultistep`, driven by their
coefficients (data, the way scipy.integrate's Runge-Kutta solvers carry their tableaux as
class attributes); the coefficients are checked against the order conditions in the
tests.  Two misprints in the published table (docs/benchmarks.md §8.7) are corrected
here from the order conditions: in BDF5 the oldest value has weight 12 (printed: 2), in
BDF6 the fourth weight is 225 (printed: 255); with the printed values the weights do
not even add up to the leading coefficient, i.e. the formula would not be consistent.

All implicit stages are solved by a simplified (modified) Newton iteration with one
shared helper, :func:`_simplified_newton`: the iteration matrix ``I - c J`` is factored
once and reused for as long as the iteration contracts well; the Jacobian ``J = df/dy``
comes from the user's ``jac(t, y)`` or from forward differences.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy.linalg import lu_factor, lu_solve

from mbdcore.integrators.base import (
    MAX_HALVINGS,
    RHS,
    ConvergenceError,
    IntegrationError,
    Integrator,
)

__all__ = ["EPS", "BDF_TABLE", "BDF_STABILITY_ANGLE", "multistep_coefficients", "RADAU_A",
           "RADAU_C", "LinearMultistep", "BDF", "ImprovedGear", "NEWTON_MAXITER",
           "MIN_FACTOR", "MAX_FACTOR", "GearResult", "GearSolver", "GearIntegrator"]

EPS = np.finfo(float).eps

# --------------------------------------------------------------------------------------
# Coefficients (data)
# --------------------------------------------------------------------------------------

#: BDF-k as integers ``(alpha, beta, denominator)``:
#: ``sum_j alpha_j y_{n+1-j} = h beta f_{n+1}``, all divided by ``denominator``;
#: alpha is listed from y_{n+1} (newest) to y_{n+1-k} (oldest).
BDF_TABLE = {
    1: ((1, -1), 1, 1),
    2: ((3, -4, 1), 2, 3),
    3: ((11, -18, 9, -2), 6, 11),
    4: ((25, -48, 36, -16, 3), 12, 25),
    5: ((137, -300, 300, -200, 75, -12), 60, 137),
    6: ((147, -360, 450, -400, 225, -72, 10), 60, 147),
}

#: Angle alpha [deg] of A(alpha)-stability of BDF-k (90 = A-stable), from the boundary
#: locus (Hairer & Wanner 1996, ch. V.2; checked by the tests).  Yan & Al Dmour (2022)
#: print 86.9 and 73.2 for BDF3 and BDF4 (docs/benchmarks.md §8.7).
BDF_STABILITY_ANGLE = {1: 90.0, 2: 90.0, 3: 86.03, 4: 73.35, 5: 51.84, 6: 17.84}


def multistep_coefficients(k: int, beta_new: float, beta_old: float = 0.0) -> np.ndarray:
    """Weights alpha of the order-k formula ``sum alpha_j y_{n+1-j} = h (b0 f_{n+1} + b1 f_n)``.

    The k + 1 weights solve the order conditions for polynomials of degree 0..k, with
    the nodes measured in steps from t_n (s_j = 1 - j)::

        sum_j alpha_j s_j^m = m (b0 * 1^(m-1) + b1 * 0^(m-1)),   m = 0..k

    ``beta_old = 0`` gives BDF-k scaled so that ``beta_new`` is its right-hand weight.

    Parameters
    ----------
    k : int
        Order and number of steps, >= 1.
    beta_new, beta_old : float
        Weights of f_{n+1} and f_n.

    Returns
    -------
    ndarray, shape (k + 1,)
        alpha_0 (y_{n+1}) .. alpha_k (y_{n+1-k}).
    """
    s = 1.0 - np.arange(k + 1)
    m = np.arange(k + 1)
    V = s[None, :] ** m[:, None]            # 0.0 ** 0 = 1, as the m = 0 condition needs
    rhs = m * (beta_new + beta_old * (m == 1))   # 0^(m-1) is 1 only for m = 1
    return np.linalg.solve(V, rhs.astype(float))


# --------------------------------------------------------------------------------------
# Shared numerics
# --------------------------------------------------------------------------------------

def _rms(x: np.ndarray) -> float:
    return float(np.sqrt(np.mean(np.square(x)))) if x.size else 0.0


def _fd_jacobian(fun: RHS, t: float, y: np.ndarray, f0: np.ndarray) -> np.ndarray:
    """Forward-difference df/dy.  The increment sqrt(eps) max(|y_j|, 1) balances
    truncation against cancellation for states of order one in SI units; it is
    re-rounded so that the divisor is exactly the increment that was applied."""
    n = y.size
    J = np.empty((n, n))
    for j in range(n):
        yj = y.copy()
        yj[j] = y[j] + math.sqrt(EPS) * max(abs(y[j]), 1.0)
        dj = yj[j] - y[j]
        J[:, j] = (fun(t, yj) - f0) / dj
    return J


def _simplified_newton(residual, solve, x0, scale, tol, max_iter, strict=False):
    """Newton iteration with a frozen iteration matrix.

    Converged when the estimated distance to the solution, ``rate/(1-rate) |dx|``
    (scaled RMS norm), is below ``tol``; this needs two iterations to measure the
    contraction ``rate`` unless the first increment is exactly zero.  With ``strict``
    the last increment itself must be below ``tol``: the ratio of the first two
    increments overestimates the contraction when the first one mostly removes the
    linear part of the error (seen on Radau stages started from zero, 25 x optimistic),
    and a fixed-step method has no error estimate that would absorb that.  Stops early
    when the iteration diverges (rate >= 1) or cannot reach ``tol`` within ``max_iter``.

    Returns
    -------
    converged : bool
    n_iter : int
    x : ndarray
        Last iterate.
    rate : float or None
        Last observed contraction factor.
    """
    x = x0.copy()
    dx_norm_old = None
    rate = None
    for it in range(1, max_iter + 1):
        r = residual(x)
        if not np.all(np.isfinite(r)):
            return False, it, x, rate
        dx = solve(-r)
        dx_norm = _rms(dx / scale)
        if not math.isfinite(dx_norm):
            return False, it, x, rate
        if np.all(np.abs(dx) <= 4 * EPS * np.abs(x)):
            # Increment at the round-off level of x: nothing left to converge (and a
            # rate measured from such increments would be noise, often >= 1).
            return True, it, x + dx, rate
        if dx_norm_old is not None:
            rate = dx_norm / dx_norm_old
            if rate >= 1.0 or rate ** (max_iter - it) / (1.0 - rate) * dx_norm > tol:
                return False, it, x, rate
        x = x + dx
        if strict:
            if dx_norm <= tol:
                return True, it, x, rate
        elif dx_norm == 0.0 or (rate is not None and rate / (1.0 - rate) * dx_norm < tol):
            return True, it, x, rate
        dx_norm_old = dx_norm
    return False, max_iter, x, rate


class _Counted:
    """Right-hand side wrapper that counts evaluations into an owner attribute."""

    __slots__ = ("fun", "owner")

    def __init__(self, fun, owner):
        self.fun = fun
        self.owner = owner

    def __call__(self, t, y):
        self.owner.nfev += 1
        return np.asarray(self.fun(t, y), dtype=float)


# Radau IIA, 3 stages, order 5, L-stable (Hairer & Wanner II, Table IV.5.6): starts the
# multistep methods.  It is one-step, so it needs no history, and its local error
# O(h^6) keeps the order of BDF-6 after k - 1 = 5 starting steps; being L-stable it
# also starts stiff problems where an explicit starter (RK4) would blow up.
_S6 = math.sqrt(6.0)
RADAU_A = np.array([
    [(88 - 7 * _S6) / 360, (296 - 169 * _S6) / 1800, (-2 + 3 * _S6) / 225],
    [(296 + 169 * _S6) / 1800, (88 + 7 * _S6) / 360, (-2 - 3 * _S6) / 225],
    [(16 - _S6) / 36, (16 + _S6) / 36, 1.0 / 9.0]])
RADAU_C = np.array([(4 - _S6) / 10, (4 + _S6) / 10, 1.0])


# --------------------------------------------------------------------------------------
# Fixed-step linear multistep methods
# --------------------------------------------------------------------------------------

class LinearMultistep(Integrator):
    """Fixed-step implicit k-step method ``sum_j a_j y_{n+1-j} = h (b0 f_{n+1} + b1 f_n)``.

    Each step solves ``y = psi + h b0 f(t_{n+1}, y)`` (weights normalised to a_0 = 1,
    ``psi`` collecting the known history) by simplified Newton with the iteration
    matrix ``I - h b0 J``, from a predictor that extrapolates the last k values with
    a polynomial of degree k - 1.  The Jacobian and its LU factors are kept from step
    to step; the Jacobian is re-evaluated when the iteration fails (then the step is
    retried once) or contracted slowly (rate > 0.5; then at the next step).

    The first k - 1 steps after a (re)start are taken with the 3-stage Radau IIA
    method (order 5, L-stable), which gives starting values accurate enough for
    order k <= 6.  The history restarts at :meth:`start` and whenever the step size
    changes.

    A step whose Newton iteration fails with a fresh Jacobian raises
    :class:`~mbdcore.integrators.base.ConvergenceError` inside :meth:`step`, which
    retries it with halved steps (:class:`~mbdcore.integrators.base.StepHalving`,
    down to h / 2**max_halvings); the halves restart the history at their step (Radau
    start), and so does the next step of h.

    Parameters
    ----------
    alpha : array_like, shape (k + 1,)
        Weights of y_{n+1} .. y_{n+1-k}.
    beta_new, beta_old : float
        Weights of h f_{n+1} and h f_n (same scaling as ``alpha``).
    jac : callable ``jac(t, y) -> (n, n)``, optional
        df/dy; forward differences if omitted.
    rtol, atol : float
        Newton convergence: the estimated iteration error must be below
        ``atol + rtol |y|`` componentwise in RMS (units of y for ``atol``).
    max_newton : int
        Newton iterations per attempt.
    max_halvings : int
        How many times a step whose Newton iteration fails is halved before the error
        is raised (:class:`~mbdcore.integrators.base.StepHalving`); 0: no retry.

    Attributes
    ----------
    nsteps, nfev, njev : int
        Steps, right-hand-side and Jacobian evaluations (finite-difference columns
        count as right-hand-side evaluations too).
    newton_iterations : int
        Newton iterations, all attempts.
    failures : int
        Newton solves that did not converge (each one is retried with a fresh
        Jacobian, then with halved steps).
    step_retries, deepest_halving : int
        Failed steps retried as two halves, and the deepest halving reached.
    """

    memory = True
    halves_failed_steps = True
    WORK_COUNTERS = ("nfev", "njev", "newton_iterations", "failures")

    def __init__(self, alpha, beta_new: float, beta_old: float = 0.0, jac=None,
                 rtol: float = 1e-10, atol: float = 1e-12, max_newton: int = 7,
                 max_halvings: int = MAX_HALVINGS):
        super().__init__()
        self.max_halvings = int(max_halvings)
        alpha = np.asarray(alpha, dtype=float)
        self.alpha = alpha / alpha[0]
        self.beta_new = beta_new / alpha[0]
        self.beta_old = beta_old / alpha[0]
        self.k = self.alpha.size - 1
        self.order = self.k
        self.jac = jac
        self.rtol = rtol
        self.atol = atol
        self.max_newton = max_newton
        # Extrapolation through y_n .. y_{n-k+1} to t_{n+1}: (-1)^i C(k, i+1).
        self._predictor = np.array([(-1) ** i * math.comb(self.k, i + 1)
                                    for i in range(self.k)], dtype=float)
        self._clear()

    def _clear(self) -> None:
        self.njev = 0
        self.newton_iterations = 0
        self.failures = 0
        self._t = None          # time at which the history ends [s]
        self._h = None          # step size of the history [s]
        self._ys = []           # y_n, y_{n-1}, ... newest first
        self._f = None          # f_n (only for beta_old != 0)
        self._J = None
        self._J_fresh = False   # J evaluated during the current step
        self._lu = None
        self._lu_c = None       # the c of I - c J in _lu

    def _restart(self) -> None:
        self._t, self._h, self._ys, self._f = None, None, [], None

    # -- state -----------------------------------------------------------------------
    def reset(self) -> None:
        super().reset()
        self._clear()

    def get_state(self) -> dict:
        state = super().get_state()
        state.update(
            njev=self.njev, newton_iterations=self.newton_iterations,
            failures=self.failures, history_t=self._t, h=self._h,
            ys=[y.copy() for y in self._ys],
            f=None if self._f is None else self._f.copy(),
            J=None if self._J is None else self._J.copy(),
            lu=None if self._lu is None else (self._lu[0].copy(), self._lu[1].copy()),
            lu_c=self._lu_c)
        return state

    def set_state(self, state: dict) -> None:
        super().set_state(state)
        self.njev = int(state["njev"])
        self.newton_iterations = int(state["newton_iterations"])
        self.failures = int(state["failures"])
        self._t, self._h, self._lu_c = state["history_t"], state["h"], state["lu_c"]
        self._ys = [np.array(y, dtype=float) for y in state["ys"]]
        self._f = None if state["f"] is None else np.array(state["f"], dtype=float)
        self._J = None if state["J"] is None else np.array(state["J"], dtype=float)
        lu = state["lu"]
        self._lu = None if lu is None else (np.array(lu[0]), np.array(lu[1]))
        self._J_fresh = False

    def stats(self) -> dict:
        s = super().stats()
        s.update(njev=self.njev, newton_iterations=self.newton_iterations,
                 failures=self.failures)
        return s

    # -- stepping --------------------------------------------------------------------
    def _corrected(self, y):
        # the projected value becomes the newest history value; older values stay
        if self._ys:
            self._ys[0] = y.copy()

    def _jacobian(self, fun, t, y):
        self.njev += 1
        self._J_fresh = True
        if self.jac is not None:
            J = np.array(self.jac(t, y), dtype=float).reshape(y.size, y.size)
        else:
            J = _fd_jacobian(fun, t, y, fun(t, y))
        if not np.all(np.isfinite(J)):
            raise IntegrationError(f"{self.name}: non-finite Jacobian at t = {t:.9g} s "
                                   f"(step {self.nsteps + 1})")
        self._J = J

    def _fail(self, what, t_new, h, n_iter, rate, residual):
        return ConvergenceError(
            f"{self.name}: Newton iteration of {what} did not converge at "
            f"t = {t_new:.9g} s (step {self.nsteps + 1}, h = {h:.3g} s) after {n_iter} "
            f"iterations with a fresh Jacobian; last residual {residual:.3g} (RMS in "
            f"units of atol + rtol |y|), contraction rate {rate}", t_new, h, residual)

    def _advance(self, fun, t, y, h):
        fun = _Counted(fun, self)
        if not self._ys or abs(h - self._h) > 8 * EPS * abs(h):
            # (re)start: after start(), or the step size changed
            self._t, self._h, self._ys, self._f = t, h, [y.copy()], None
        self._J_fresh = False
        if len(self._ys) < self.k:
            y_new = self._radau_step(fun, t, y, h)
            f_new = fun(t + h, y_new) if self.beta_old != 0.0 else None
        else:
            y_new, f_new = self._multistep_step(fun, t, h)
        self._ys = [y_new] + self._ys[: self.k - 1]
        self._f = f_new
        self._t = t + h
        self._h = h
        self.nsteps += 1
        return y_new.copy()

    def _solve(self, what, fun, t_new, h, residual, solve_factory, x0, scale, t_jac, y_jac):
        """Simplified Newton with one retry on a Jacobian fresh at (t_jac, y_jac);
        raises :class:`IntegrationError` if that fails too."""
        while True:
            ok, n_iter, x, rate = _simplified_newton(residual, solve_factory(), x0, scale,
                                                     1.0, self.max_newton, strict=True)
            self.newton_iterations += n_iter
            if ok:
                if rate is not None and rate > 0.5:
                    self._J = None       # slow contraction: new Jacobian next step
                return x
            self.failures += 1
            if self._J_fresh:
                with np.errstate(all="ignore"):
                    res = _rms(residual(x) / scale)
                raise self._fail(what, t_new, h, n_iter, rate, res)
            self._jacobian(fun, t_jac, y_jac)
            self._lu = None

    def _multistep_step(self, fun, t, h):
        ys = self._ys
        t_new = t + h
        c = h * self.beta_new
        psi = -sum(a * yj for a, yj in zip(self.alpha[1:], ys))
        if self.beta_old != 0.0:
            psi = psi + (h * self.beta_old) * self._f
        y_pred = sum(p * yj for p, yj in zip(self._predictor, ys))
        if self._J is None:
            self._jacobian(fun, t_new, y_pred)

        def solve_factory():
            if self._lu is None or self._lu_c != c:
                self._lu = lu_factor(np.eye(y_pred.size) - c * self._J)
                self._lu_c = c
            lu = self._lu
            return lambda b: lu_solve(lu, b)

        def residual(x):
            return x - c * fun(t_new, x) - psi

        scale = self.atol + self.rtol * np.abs(y_pred)
        y_new = self._solve("the BDF corrector", fun, t_new, h, residual, solve_factory,
                            y_pred, scale, t_new, y_pred)
        # f_{n+1} from the formula itself rather than a new evaluation: consistent
        # with y_{n+1}, and it does not amplify the Newton error by a stiff J.
        f_new = (y_new - psi) / c if self.beta_old != 0.0 else None
        return y_new, f_new

    def _radau_step(self, fun, t, y, h):
        n = y.size
        t_new = t + h
        if self._J is None:
            self._jacobian(fun, t, y)

        def solve_factory():
            lu = lu_factor(np.eye(3 * n) - h * np.kron(RADAU_A, self._J))
            return lambda b: lu_solve(lu, b)

        def residual(zflat):
            Z = zflat.reshape(3, n)
            F = np.array([fun(t + ci * h, y + zi) for ci, zi in zip(RADAU_C, Z)])
            return (Z - h * (RADAU_A @ F)).ravel()

        scale = np.tile(self.atol + self.rtol * np.abs(y), 3)
        # Stage increments start at zero: safe for stiff problems where an explicit
        # guess c_i h f would be far off.
        z = self._solve("Radau start", fun, t_new, h, residual, solve_factory,
                        np.zeros(3 * n), scale, t, y)
        return y + z[2 * n:]


class BDF(LinearMultistep):
    """Fixed-step BDF-k (Gear), k = 1..6: ``sum_j alpha_j y_{n+1-j} = h beta f_{n+1}``.

    Coefficients from :data:`BDF_TABLE`; see :class:`LinearMultistep` for the solver,
    start and state.  BDF1 is backward Euler; BDF1-2 are A-stable, BDF3-6 A(alpha)-stable
    (:data:`BDF_STABILITY_ANGLE`).
    """

    def __init__(self, k: int = 2, jac=None, rtol: float = 1e-10, atol: float = 1e-12,
                 max_newton: int = 7, max_halvings: int = MAX_HALVINGS):
        if k not in BDF_TABLE:
            raise ValueError(f"BDF order k must be 1..6, got {k!r}")
        alpha, beta, _den = BDF_TABLE[k]
        super().__init__(alpha, beta, 0.0, jac=jac, rtol=rtol, atol=atol,
                         max_newton=max_newton, max_halvings=max_halvings)
        self.name = f"bdf{k}"


class ImprovedGear(LinearMultistep):
    """The "improved Gear" formula of order k with free parameter beta (docs/benchmarks.md §8.1).

    ``sum_j alpha_j y_{n+1-j} = h (beta f_{n+1} + (1 - beta) f_n)``, alpha from the order
    conditions (:func:`multistep_coefficients`).  For beta = 20 Yan & Al Dmour (2022) print
    k = 2: ``41 y_{n+2} = 80 y_{n+1} - 39 y_n + h (40 f_{n+2} - 38 f_{n+1})`` and
    k = 3: ``182 y_{n+3} = 417 y_{n+2} - 294 y_{n+1} + 59 y_n + h (120 f_{n+3} - 114 f_{n+2})``.
    beta = 1 is BDF-k.  f_n is carried in the history (taken from the corrector
    equation, not re-evaluated).
    """

    def __init__(self, k: int = 2, beta: float = 20.0, jac=None, rtol: float = 1e-10,
                 atol: float = 1e-12, max_newton: int = 7,
                 max_halvings: int = MAX_HALVINGS):
        if not 1 <= k <= 6:
            raise ValueError(f"order k must be 1..6, got {k!r}")
        alpha = multistep_coefficients(k, beta, 1.0 - beta)
        super().__init__(alpha, beta, 1.0 - beta, jac=jac, rtol=rtol, atol=atol,
                         max_newton=max_newton, max_halvings=max_halvings)
        self.beta = beta
        self.name = f"improved-gear{k}"


# --------------------------------------------------------------------------------------
# Variable-step, variable-order Gear
# --------------------------------------------------------------------------------------

NEWTON_MAXITER = 4      # a step whose corrector needs more is retried with h/2
MIN_FACTOR = 0.2        # step-size change limits per decision
MAX_FACTOR = 10.0


def _difference_rescaling(order: int, factor: float) -> np.ndarray:
    """R with R[i, j] = prod_{m=1..i} (m - 1 - factor j)/m: maps backward differences
    on the grid of step h to those on the grid of step factor*h (same polynomial)."""
    i = np.arange(1, order + 1)[:, None]
    j = np.arange(1, order + 1)
    M = np.zeros((order + 1, order + 1))
    M[1:, 1:] = (i - 1 - factor * j) / i
    M[0] = 1.0
    return np.cumprod(M, axis=0)


def _rescale_differences(D: np.ndarray, order: int, factor: float) -> None:
    """Change the step of the history ``D`` by ``factor`` in place."""
    RU = _difference_rescaling(order, factor) @ _difference_rescaling(order, 1.0)
    D[: order + 1] = RU.T @ D[: order + 1]


@dataclass
class GearResult:
    """Result of :meth:`GearSolver.solve`.

    Attributes
    ----------
    t : ndarray, shape (m,)
        Output times [s] (the accepted step ends, or ``t_eval``).
    y : ndarray, shape (m, n)
        Solution at ``t`` (one row per time, as :func:`mbdcore.integrators.integrate`).
    stats : dict
        ``nsteps`` (accepted), ``nrejected`` (error test), ``nnewton_failures``
        (steps retried with h/2 after the corrector failed), ``nfev``, ``njev``,
        ``nlu``, ``order_counts`` {order: accepted steps}, ``orders`` (order of
        every accepted step), ``step_sizes`` [s].
    """

    t: np.ndarray
    y: np.ndarray
    stats: dict = field(default_factory=dict)


class _GearCore:
    """State and one step of the variable-step variable-order BDF.

    The history is the array ``D`` of modified backward differences of the solution on
    a grid of constant step h (Shampine & Reichelt 1997, "quasi-constant step size"):
    ``D[0] = y_n``, ``D[j] = nabla^j y_n``.  The predictor is ``sum_{j<=k} D[j]``; the
    BDF-k corrector in this form is ``gamma_k (y_{n+1} - y_pred) + sum_{j<=k} gamma_j D[j]
    = h f_{n+1}`` with gamma_j = sum_{i<=j} 1/i, and the local error estimate is
    ``(y_{n+1} - y_pred)/(k + 1)``.  A step-size change re-interpolates D exactly
    (:func:`_rescale_differences`); the order changes by at most one, after k + 1 steps
    at constant h, to whichever of k-1, k, k+1 allows the largest next step.
    """

    def __init__(self, rtol, atol, max_order, jac, max_step):
        if not 1 <= max_order <= 6:
            raise ValueError(f"max_order must be 1..6, got {max_order!r}")
        if rtol < 100 * EPS:
            raise ValueError(f"rtol = {rtol} is below round-off (100 eps)")
        self.rtol = float(rtol)
        self.atol = atol
        self.max_order = int(max_order)
        self.jac = jac
        self.max_step = float(max_step)
        self.newton_tol = max(10 * EPS / rtol, min(0.03, rtol ** 0.5))
        self.gamma = np.hstack((0.0, np.cumsum(1.0 / np.arange(1, max_order + 1))))
        self.error_const = 1.0 / np.arange(1, max_order + 3)
        self.clear_counters()
        self.t = None

    def clear_counters(self):
        self.nfev = self.njev = self.nlu = 0
        self.nsteps = self.nrejected = self.nnewton_failures = 0
        self.orders = []
        self.step_sizes = []

    _STATE = ("t", "h_abs", "order", "n_equal_steps", "D", "J", "lu", "lu_c", "nfev",
              "njev", "nlu", "nsteps", "nrejected", "nnewton_failures", "orders",
              "step_sizes")

    def get_state(self):
        import copy
        return {k: copy.deepcopy(getattr(self, k, None)) for k in self._STATE}

    def set_state(self, state):
        import copy
        for k in self._STATE:
            setattr(self, k, copy.deepcopy(state[k]))

    def _jacobian(self, fun, t, y):
        """df/dy at (t, y), or None where it is not finite (the trial step is then
        too long, e.g. past a point where f stops being defined)."""
        self.njev += 1
        if self.jac is not None:
            J = np.array(self.jac(t, y), dtype=float).reshape(y.size, y.size)
        else:
            J = _fd_jacobian(fun, t, y, fun(t, y))
        return J if np.all(np.isfinite(J)) else None

    def start(self, fun, t0, y0, span):
        """Begin at (t0, y0): order 1, initial step by Hairer-Norsett-Wanner's rule."""
        fun = _Counted(fun, self)
        y0 = np.array(y0, dtype=float)
        f0 = fun(t0, y0)
        scale = self.atol + self.rtol * np.abs(y0)
        d0, d1 = _rms(y0 / scale), _rms(f0 / scale)
        h0 = 1e-6 if d0 < 1e-5 or d1 < 1e-5 else 0.01 * d0 / d1
        h0 = min(h0, span, self.max_step)
        f1 = fun(t0 + h0, y0 + h0 * f0)
        d2 = _rms((f1 - f0) / scale) / h0
        if max(d1, d2) <= 1e-15:
            h1 = max(1e-6, 1e-3 * h0)
        else:
            h1 = (0.01 / max(d1, d2)) ** 0.5      # error ~ h^2 for order 1
        self.h_abs = min(100 * h0, h1, self.max_step)
        self.t = float(t0)
        self.order = 1
        self.n_equal_steps = 0
        self.D = np.zeros((self.max_order + 3, y0.size))
        self.D[0] = y0
        self.D[1] = f0 * self.h_abs
        self.J = self._jacobian(fun, t0, y0)
        if self.J is None:
            raise IntegrationError(f"gear: non-finite Jacobian at the start t = {t0:.9g} s")
        self.lu = None
        self.lu_c = None

    @property
    def y(self):
        return self.D[0]

    def dense(self, t):
        """Solution at t within the last step (interpolating polynomial of D) [units of y]."""
        k = self.order
        h = self.h_abs
        x = (t - (self.t - h * np.arange(k))) / (h * (1 + np.arange(k)))
        return self.D[0] + np.cumprod(x) @ self.D[1: k + 1]

    def step(self, fun, t_bound):
        """One accepted step, ending at t_bound at the latest."""
        fun = _Counted(fun, self)
        t, D = self.t, self.D
        min_step = 10 * abs(np.nextafter(t, np.inf) - t)
        if self.h_abs > self.max_step:
            _rescale_differences(D, self.order, self.max_step / self.h_abs)
            self.h_abs = self.max_step
            self.n_equal_steps = 0
        h_abs, order = self.h_abs, self.order
        gamma, error_const = self.gamma, self.error_const
        J_fresh = False
        while True:
            if h_abs < min_step:
                raise IntegrationError(
                    f"gear: step size {h_abs:.3g} s below round-off at t = {t:.9g} s "
                    f"(order {order}, {self.nrejected} rejections, "
                    f"{self.nnewton_failures} Newton failures)")
            t_new = t + h_abs
            # Land on t_bound exactly; stretch by up to 0.1 % rather than leave a sliver.
            if t_new + 1e-3 * h_abs >= t_bound:
                t_new = t_bound
                _rescale_differences(D, order, (t_new - t) / h_abs)
                self.n_equal_steps = 0
            h = t_new - t
            h_abs = h
            y_pred = D[: order + 1].sum(axis=0)
            scale = self.atol + self.rtol * np.abs(y_pred)
            psi = (gamma[1: order + 1] @ D[1: order + 1]) / gamma[order]
            c = h / gamma[order]

            def residual(y):
                return (y - y_pred) - c * fun(t_new, y) + psi

            while True:
                if self.lu is None or self.lu_c != c:
                    self.lu = lu_factor(np.eye(y_pred.size) - c * self.J)
                    self.lu_c = c
                    self.nlu += 1
                lu = self.lu
                converged, n_iter, y_new, _ = _simplified_newton(
                    residual, lambda b: lu_solve(lu, b), y_pred, scale, self.newton_tol,
                    NEWTON_MAXITER)
                if converged or J_fresh:
                    break
                J_fresh = True
                J = self._jacobian(fun, t_new, y_pred)
                if J is None:
                    converged = False
                    break
                self.J = J
                self.lu = None

            if not converged:
                self.nnewton_failures += 1
                h_abs *= 0.5
                _rescale_differences(D, order, 0.5)
                self.n_equal_steps = 0
                continue

            # Fewer Newton iterations -> less conservative step (scipy's heuristic).
            safety = 0.9 * (2 * NEWTON_MAXITER + 1) / (2 * NEWTON_MAXITER + n_iter)
            d = y_new - y_pred
            scale = self.atol + self.rtol * np.abs(y_new)
            error_norm = _rms(error_const[order] * d / scale)
            if error_norm > 1.0:
                self.nrejected += 1
                factor = max(MIN_FACTOR, safety * error_norm ** (-1.0 / (order + 1)))
                h_abs *= factor
                _rescale_differences(D, order, factor)
                self.n_equal_steps = 0
                continue
            break

        self.nsteps += 1
        self.orders.append(order)
        self.step_sizes.append(h)
        self.n_equal_steps += 1
        self.t = t_new
        self.h_abs = h_abs
        # New differences: d = nabla^{k+1} y_{n+1}, and nabla^j y_{n+1} = nabla^j y_n
        # + nabla^{j+1} y_{n+1}, filled from the top down.
        D[order + 2] = d - D[order + 1]
        D[order + 1] = d
        for i in range(order, -1, -1):
            D[i] += D[i + 1]

        if self.n_equal_steps < order + 1:
            return
        # Error estimates for orders k-1 and k+1 from the same differences.
        err_m = _rms(error_const[order - 1] * D[order] / scale) if order > 1 else np.inf
        err_p = (_rms(error_const[order + 1] * D[order + 2] / scale)
                 if order < self.max_order else np.inf)
        with np.errstate(divide="ignore"):
            factors = np.array([err_m, error_norm, err_p]) ** (
                -1.0 / np.arange(order, order + 3))
        order += int(np.argmax(factors)) - 1
        factor = min(MAX_FACTOR, safety * float(np.max(factors)))
        self.order = order
        self.h_abs *= factor
        _rescale_differences(D, order, factor)
        self.n_equal_steps = 0

    def stats(self):
        orders = np.array(self.orders, dtype=int)
        return {"nsteps": self.nsteps, "nrejected": self.nrejected,
                "nnewton_failures": self.nnewton_failures, "nfev": self.nfev,
                "njev": self.njev, "nlu": self.nlu,
                "order_counts": {int(k): int(np.sum(orders == k))
                                 for k in np.unique(orders)},
                "orders": orders, "step_sizes": np.array(self.step_sizes)}


class GearSolver:
    """Variable-step, variable-order Gear (BDF) solver for stiff y' = f(t, y).

    Orders 1..``max_order``; the default is 5 because BDF6 is A(alpha)-stable only for
    alpha = 17.8 deg: a structural mode with damping ratio below cos 17.8 deg = 0.95
    (its eigenvalues lie more than 17.8 deg off the negative real axis) can be outside
    its stability region once h |lambda| is large, whereas BDF5 (51.8 deg) is safe
    down to a damping ratio of 0.62 and the order selection can fall back to the
    A-stable orders 1-2 for lightly damped stiff modes.  ``max_order=6`` is accepted
    and pays off on smooth, strongly damped problems (Robertson: 239 instead of 289
    steps at rtol 1e-8).  Algorithm: see :class:`_GearCore`.

    Parameters
    ----------
    rtol, atol : float or array_like
        Local error tolerances: each step's estimated error must satisfy
        ``rms(err / (atol + rtol |y|)) <= 1`` (``atol`` in units of y).
    max_order : int
        Highest BDF order, 1..6.
    max_step : float
        Largest step [s].
    """

    def __init__(self, rtol: float = 1e-6, atol=1e-9, max_order: int = 5,
                 max_step: float = np.inf):
        self.rtol = rtol
        self.atol = atol
        self.max_order = max_order
        self.max_step = max_step

    def solve(self, fun: RHS, t_span, y0, jac=None, t_eval=None) -> GearResult:
        """Integrate from t_span[0] to t_span[1] (> t_span[0]) [s].

        Parameters
        ----------
        fun : callable ``fun(t, y) -> (n,)``
        t_span : (float, float)
        y0 : array_like, shape (n,)
        jac : callable ``jac(t, y) -> (n, n)``, optional
            df/dy; forward differences if omitted.
        t_eval : array_like, optional
            Increasing output times in t_span; the solution there is interpolated with
            each step's BDF polynomial.  Default: every accepted step.

        Raises
        ------
        IntegrationError
            When the step size falls to round-off level.
        """
        t0, t1 = map(float, t_span)
        if not t1 > t0:
            raise ValueError("GearSolver integrates forward: need t_span[1] > t_span[0]")
        core = _GearCore(self.rtol, self.atol, self.max_order, jac, self.max_step)
        core.start(fun, t0, y0, t1 - t0)
        ts, ys = [t0], [core.y.copy()]
        if t_eval is not None:
            t_eval = np.asarray(t_eval, dtype=float)
            ts, ys = [], []
            i = 0
            while i < t_eval.size and t_eval[i] <= t0:
                ts.append(t_eval[i])
                ys.append(core.y.copy())
                i += 1
        while core.t < t1:
            core.step(fun, t1)
            if t_eval is None:
                ts.append(core.t)
                ys.append(core.y.copy())
            else:
                while i < t_eval.size and t_eval[i] <= core.t:
                    ts.append(t_eval[i])
                    ys.append(core.dense(t_eval[i]))
                    i += 1
        return GearResult(np.array(ts), np.array(ys), core.stats())


class GearIntegrator(Integrator):
    """The Gear solver behind the fixed-interval :class:`Integrator` interface ("gear").

    ``step(fun, h)`` integrates [t, t + h] with as many internal steps as the
    tolerances need; the last one is shortened to land on t + h (the right-hand side
    may change at t + h, e.g. a co-simulation input).  Step size, order, the difference
    history and the Jacobian carry over from step to step until the next :meth:`start`,
    and are part of :meth:`get_state`.

    Parameters
    ----------
    rtol, atol, max_order, max_step
        As for :class:`GearSolver`.
    jac : callable, optional
        ``jac(t, y) -> (n, n)``; forward differences if omitted.
    """

    name = "gear"
    order = 5
    memory = True

    def __init__(self, rtol: float = 1e-8, atol=1e-10, max_order: int = 5,
                 max_step: float = np.inf, jac=None):
        super().__init__()
        self.order = max_order
        self._core = _GearCore(rtol, atol, max_order, jac, max_step)

    def reset(self) -> None:
        super().reset()
        self._core.clear_counters()

    def _restart(self) -> None:
        self._core.t = None     # the core starts on the next step (it needs fun)

    def _advance(self, fun, t, y, h):
        core = self._core
        nfev0 = core.nfev
        if core.t is None:
            core.start(fun, t, y, h)
        else:
            core.t = t      # the same time up to rounding: the stepper's own
        t_end = t + h
        while core.t < t_end:
            core.step(fun, t_end)
        self.nfev += core.nfev - nfev0
        self.nsteps += 1
        return core.y.copy()

    def _corrected(self, y):
        core = self._core
        if core.t is not None:
            core.D[0] = y.copy()   # D[0] is y_n; differences kept

    def get_state(self) -> dict:
        state = super().get_state()
        state["core"] = self._core.get_state()
        return state

    def set_state(self, state: dict) -> None:
        super().set_state(state)
        self._core.set_state(state["core"])

    def stats(self) -> dict:
        s = super().stats()
        s.update({f"internal_{k}" if k in ("nsteps", "nfev") else k: v
                  for k, v in self._core.stats().items()})
        return s
