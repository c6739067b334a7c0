"""Implicit integrators for the index-3 equations of motion.

The problem (:class:`mbdcore.dae.ConstrainedProblem`, seeds 000, 001, 003)::

    M(q) q'' + G(q, t)^T lambda = F(t, q, q')
    g(q, t) = 0                                  G = dg/dq

is discretised directly at index 3: the position constraints are imposed at every
solve, together with the multipliers, so there is no drift and no Baumgarte term.

Two families share one Newton solver (:meth:`Index3Integrator._solve`):

``generalized-alpha`` / ``hht`` / ``newmark``
    the generalized-alpha method in the Arnold-Bruls form (acceleration-like variable
    ``a``), parameters alpha_m, alpha_f, beta, gamma as data.  HHT and Newmark are the
    same scheme with other parameters.
``bathe`` / ``bathe-broyden``
    Bathe's composite scheme (seed 003): trapezoidal rule on [t, t + gamma h], then the
    three-point backward Euler formula on [t, t + h]; each sub-step by Newton or by
    Broyden's quasi-Newton updates.

Every solve has the same structure.  The scheme makes the velocity and acceleration at
the new time affine in the position increment ``dq = q - q_ref`` about a predictor::

    v(dq) = v_ref + c_v dq          q''(dq) = a_ref + c_a dq

and Newton solves, for (dq, lambda), the *scaled* equations (Bottasso, Bauchau and
Cardona 2007; Arnold and Bruls 2007)::

    r1 = [M(q) q''(dq) + G^T lambda - F(t, q, v(dq))] / c_a = 0
    r2 = g(q, t)                                              = 0

with the scaled multiplier ``lambda~ = lambda / c_a``.  Dividing the dynamic rows by
c_a ~ 1/h^2 (equivalently, multiplying by beta h^2) turns the iteration matrix into::

    [[ M + (c_v/c_a) C_t + (1/c_a) K_t ,  G^T ],
     [ G                               ,  0   ]]      C_t = -dF/dv,  K_t = -dF/dq + d(M q'' + G^T lambda)/dq

whose condition number stays O(1) as h -> 0 instead of growing like 1/h^4 (2.56 for
the pendulum at h = 1e-2 ... 1e-5 s, against 4e8 ... 4e20 unscaled).  A solve has
converged when the last increment satisfies |dq|_inf <= tol max(1, |q|_inf) and
c_v |dq|_inf <= tol max(1, |v|_inf) (velocity errors are c_v ~ 1/h times position
errors), and the scaled residual ``max(|r1|_inf / max diag M, |g|_inf)`` is below
tol max(1, |q|_inf) -- or has stopped falling at its rounding floor (stiff terms).

Newton variants (``iteration=``): ``"newton"`` (fresh matrix at every iteration),
``"modified"`` (LU factors kept across iterations and steps, refreshed when the
contraction rate exceeds ``theta_refresh`` or a solve fails) and ``"broyden"`` (inverse
of the matrix kept and corrected by Broyden's rank-one update; refreshed only on
failure).  A solve that cannot converge with a fresh matrix raises
:class:`ConvergenceError`.
"""
from __future__ import annotations

import math
import warnings
from collections import namedtuple

import numpy as np
from scipy.linalg import LinAlgWarning, lu_factor, lu_solve

from .dae import ConstrainedProblem

ITERATIONS = ("newton", "modified", "broyden")


class ConvergenceError(RuntimeError):
    """The nonlinear solve of a step did not converge (message: time, step, residual)."""


def consistent_accelerations(problem: ConstrainedProblem, t: float, q, v):
    """Accelerations and multipliers from ``[[M, G^T], [G, 0]] [q''; lam] = [F; gamma]``.

    Parameters
    ----------
    problem : ConstrainedProblem
    t : float
        Time [s].
    q, v : array_like, shape (n,)
        Consistent positions [m, rad] and velocities [m/s, rad/s].

    Returns
    -------
    qdd : ndarray, shape (n,)
        Accelerations [m/s^2, rad/s^2].
    lam : ndarray, shape (m,)
        Lagrange multipliers.

    Raises
    ------
    ConvergenceError
        If the augmented matrix is singular (redundant constraints) or the result is not
        finite.
    """
    q = np.asarray(q, dtype=float)
    v = np.asarray(v, dtype=float)
    n = q.size
    M = np.atleast_2d(problem.mass_matrix(q))
    F = np.asarray(problem.forces(t, q, v), dtype=float)
    G = np.asarray(problem.constraint_jacobian(t, q), dtype=float).reshape(-1, n)
    m = G.shape[0]
    A = np.zeros((n + m, n + m))
    A[:n, :n] = M
    A[:n, n:] = G.T
    A[n:, :n] = G
    rhs = np.concatenate([F, np.asarray(problem.gamma(t, q, v), dtype=float).reshape(m)])
    try:
        x = np.linalg.solve(A, rhs)
    except np.linalg.LinAlgError as exc:
        raise ConvergenceError(
            f"initial accelerations: [[M, G^T], [G, 0]] is singular at t = {t:.6g} s "
            f"(redundant constraints?)") from exc
    if not np.all(np.isfinite(x)):
        raise ConvergenceError(f"initial accelerations are not finite at t = {t:.6g} s")
    return x[:n].copy(), x[n:].copy()


class Index3Integrator:
    """Base class: one step of the index-3 DAE, with the shared scaled Newton solver.

    Parameters
    ----------
    tol : float
        Convergence tolerance on the scaled residual norm and on the position and
        velocity increment norms (absolute below 1, relative above) [m, rad, m/s].
    max_iterations : int
        Newton iterations allowed per solve before it is declared failed.
    iteration : {"newton", "modified", "broyden"}
        How the iteration matrix is obtained (see the module docstring).
    theta_refresh : float
        Modified Newton: refresh the matrix when the ratio of successive increment norms
        exceeds this.
    geometric_stiffness : bool
        Include ``d(M(q) q'' + G(q)^T lambda)/dq`` (forward differences) in the matrix.
        Without it Newton still converges for small h (the term is O(h^2) against M)
        but only linearly.

    Attributes
    ----------
    name : str
    order : int
        Order of the position error for smooth solutions.
    nsteps, newton_iterations, jacobian_evaluations, failures : int
        Steps taken; linear solves of Newton corrections; builds of the iteration matrix
        (each a ``force_jacobians`` call); solves that did not converge (those retried
        with a fresh matrix included).
    a, qdd, lam : ndarray or None
        After a step: acceleration-like variable, accelerations [m/s^2] and multipliers
        at the end of the step.
    """

    name = "index3"
    order = 0

    def __init__(self, tol: float = 1e-10, max_iterations: int = 25,
                 iteration: str = "newton", theta_refresh: float = 0.5,
                 geometric_stiffness: bool = True):
        if iteration not in ITERATIONS:
            raise ValueError(f"iteration {iteration!r} is unknown; accepted: {ITERATIONS}")
        self.tol = float(tol)
        self.max_iterations = int(max_iterations)
        self.iteration = iteration
        self.theta_refresh = float(theta_refresh)
        self.geometric_stiffness = bool(geometric_stiffness)
        self.reset()

    # -- history ---------------------------------------------------------------------
    def reset(self) -> None:
        """Forget the history and the counters (start of a new simulation)."""
        self.nsteps = 0
        self.newton_iterations = 0
        self.jacobian_evaluations = 0
        self.failures = 0
        self.a = None
        self.qdd = None
        self.lam = None
        # Iteration matrices kept for reuse: key -> ("lu", (lu, piv)) or ("inv", H).
        # The key carries h, so a change of step size never reuses a stale matrix.
        self._cache: dict = {}

    def initialize(self, problem: ConstrainedProblem, t: float, q, v) -> None:
        """Start the history from consistent accelerations and multipliers at (t, q, v)."""
        qdd, lam = consistent_accelerations(problem, t, q, v)
        self.qdd = qdd
        self.lam = lam
        self.a = qdd.copy()

    def get_state(self) -> dict:
        """History needed to continue bit for bit (counters and kept matrices included)."""
        def cp(x):
            return None if x is None else np.array(x, copy=True)
        cache = {}
        for key, (kind, val) in self._cache.items():
            cache[key] = (kind, (val[0].copy(), val[1].copy()) if kind == "lu" else val.copy())
        return {"nsteps": self.nsteps, "newton_iterations": self.newton_iterations,
                "jacobian_evaluations": self.jacobian_evaluations,
                "failures": self.failures, "a": cp(self.a), "qdd": cp(self.qdd),
                "lam": cp(self.lam), "cache": cache}

    def set_state(self, state: dict) -> None:
        """Restore what :meth:`get_state` returned."""
        def cp(x):
            return None if x is None else np.array(x, dtype=float, copy=True)
        self.nsteps = int(state["nsteps"])
        self.newton_iterations = int(state["newton_iterations"])
        self.jacobian_evaluations = int(state["jacobian_evaluations"])
        self.failures = int(state["failures"])
        self.a = cp(state["a"])
        self.qdd = cp(state["qdd"])
        self.lam = cp(state["lam"])
        self._cache = {}
        for key, (kind, val) in state["cache"].items():
            self._cache[key] = (kind, (val[0].copy(), val[1].copy()) if kind == "lu"
                                else val.copy())

    def stats(self) -> dict:
        return {"method": self.name, "iteration": self.iteration, "nsteps": self.nsteps,
                "newton_iterations": self.newton_iterations,
                "jacobian_evaluations": self.jacobian_evaluations,
                "failures": self.failures}

    def step(self, problem: ConstrainedProblem, t: float, q, v, h: float):
        """Advance from t to t + h [s].

        Parameters
        ----------
        problem : ConstrainedProblem
        t : float
            Current time [s].
        q, v : ndarray, shape (n,)
            Positions [m, rad] and velocities [m/s, rad/s] at t (consistent).
        h : float
            Step size [s], > 0.

        Returns
        -------
        q_new, v_new : ndarray, shape (n,)
            At t + h; ``self.qdd``, ``self.lam`` and ``self.a`` are updated too.

        Raises
        ------
        ConvergenceError
            If Newton fails with a fresh iteration matrix.
        """
        raise NotImplementedError

    # -- the shared scaled Newton solve ------------------------------------------------
    def _iteration_matrix(self, problem, t, q, v, x_acc, lam_s, cv, ca):
        """Scaled iteration matrix at the current iterate (one Jacobian evaluation).

        ``x_acc = q''/c_a`` and ``lam_s = lambda/c_a`` are the scaled acceleration and
        multiplier, so the geometric term is already divided by c_a.
        """
        n = q.size
        self.jacobian_evaluations += 1
        M = np.atleast_2d(problem.mass_matrix(q))
        G = np.asarray(problem.constraint_jacobian(t, q), dtype=float).reshape(-1, n)
        m = G.shape[0]
        dFdq, dFdv = problem.force_jacobians(t, q, v)
        S = M - (cv / ca) * np.asarray(dFdv) - (1.0 / ca) * np.asarray(dFdq)
        if self.geometric_stiffness:
            # d/dq [M(q) x + G(q)^T lam~] at fixed x, lam~: the inertia and constraint
            # curvature terms a constant-matrix Newton would miss.
            w0 = M @ x_acc + G.T @ lam_s
            for j in range(n):
                e = math.sqrt(np.finfo(float).eps) * max(1.0, abs(q[j]))
                qj = q.copy()
                qj[j] += e
                Mj = np.atleast_2d(problem.mass_matrix(qj))
                Gj = np.asarray(problem.constraint_jacobian(t, qj), dtype=float).reshape(m, n)
                S[:, j] += (Mj @ x_acc + Gj.T @ lam_s - w0) / e
        J = np.zeros((n + m, n + m))
        J[:n, :n] = S
        J[:n, n:] = G.T
        J[n:, :n] = G
        return J

    @staticmethod
    def _factor(J, kind):
        """LU factors or inverse of J; None if J is singular or not finite."""
        if not np.all(np.isfinite(J)):
            return None
        if kind == "lu":
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", LinAlgWarning)
                lu, piv = lu_factor(J, check_finite=False)
            d = np.abs(np.diag(lu))
            if d.size and (not np.all(np.isfinite(d)) or d.min() <= 1e-14 * d.max()):
                return None
            return (lu, piv)
        try:
            H = np.linalg.inv(J)
        except np.linalg.LinAlgError:
            return None
        return H if np.all(np.isfinite(H)) else None

    def _solve(self, problem, t, h, q_ref, v_ref, a_ref, cv, ca, lam0, key):
        """Solve one implicit stage for dq = q - q_ref and lambda (see module docstring).

        Returns
        -------
        dq : ndarray, shape (n,)
        lam : ndarray, shape (m,)
        """
        cached = self.iteration != "newton"
        ckey = (key, float(h))
        # A stale kept matrix may be the reason for a failure: retry once with a fresh one.
        attempts = (False, True) if cached and ckey in self._cache else (True,)
        last = None
        for fresh_start in attempts:
            ok, dq, lam_s, info = self._newton(problem, t, q_ref, v_ref, a_ref, cv, ca,
                                               np.asarray(lam0, dtype=float) / ca, ckey,
                                               fresh_start)
            if ok:
                return dq, lam_s * ca
            self.failures += 1
            self._cache.pop(ckey, None)
            last = info
        its, res, why = last
        raise ConvergenceError(
            f"{self.name}: Newton did not converge at t = {t:.9g} s (h = {h:.3g} s) after "
            f"{its} iterations; scaled residual {res:.3g} ({why})")

    def _newton(self, problem, t, q_ref, v_ref, a_ref, cv, ca, lam_s, ckey, fresh_start):
        n = q_ref.size
        kind = "inv" if self.iteration == "broyden" else "lu"
        dq = np.zeros(n)
        x_ref = a_ref / ca
        mscale = None
        mat = None if (fresh_start or self.iteration == "newton") else self._cache.get(ckey)
        mat = None if mat is None else mat[1]
        fresh = False            # is `mat` built at the current iterate?
        inc_prev = None
        r_prev = s_prev = None
        res = inc = math.inf
        res_prev = None
        for it in range(self.max_iterations + 1):
            q = q_ref + dq
            v = v_ref + cv * dq
            x = x_ref + dq       # q'' / c_a
            M = np.atleast_2d(problem.mass_matrix(q))
            G = np.asarray(problem.constraint_jacobian(t, q), dtype=float).reshape(-1, n)
            F = np.asarray(problem.forces(t, q, v), dtype=float)
            inertia, reaction, force = M @ x, G.T @ lam_s, F / ca
            r = np.concatenate([inertia + reaction - force,
                                np.asarray(problem.constraints(t, q), dtype=float).ravel()])
            if not np.all(np.isfinite(r)):
                return False, dq, lam_s, (it, math.nan, "non-finite residual")
            if mscale is None:
                mscale = max(float(np.max(np.abs(np.diag(M)))), np.finfo(float).tiny)
            # A stiff term (k/c_a >> M) leaves a rounding floor in r1 above tol; below
            # that floor further iterations cannot reduce it, so do not ask for it.
            floor = 64.0 * np.finfo(float).eps * (np.abs(inertia) + np.abs(reaction)
                                                  + np.abs(force))
            r1 = np.maximum(np.abs(r[:n]) - floor, 0.0)
            res = max(float(np.max(r1, initial=0.0)) / mscale,
                      float(np.max(np.abs(r[n:]), initial=0.0)))
            q_scale = max(1.0, float(np.max(np.abs(q))))
            thresh = self.tol * q_scale
            # The velocity error is c_v ~ 1/h times the position error, so the increment
            # is also judged in velocity units (down to the rounding of q).
            inc_ok = (inc <= thresh and cv * inc <= self.tol * max(1.0, float(np.max(
                np.abs(v)))) + 8.0 * np.finfo(float).eps * cv * q_scale)
            # Second way out: the increments are below tol but the residual stopped
            # falling -- on a stiff term (k h^2 >> m) cancellation in q_ref + dq leaves a
            # rounding floor of about eps (omega h)^2 |q_ref| k/c_a, above tol.
            stalled = it >= 2 and res >= 0.5 * res_prev
            if it > 0 and inc_ok and (res <= thresh or stalled):
                if self.iteration != "newton" and mat is not None:
                    self._cache[ckey] = (kind, mat)
                return True, dq, lam_s, (it, res, "")
            if it == self.max_iterations:
                return False, dq, lam_s, (it, res, "iteration limit")
            res_prev = res
            if self.iteration == "broyden" and mat is not None and s_prev is not None:
                # Good Broyden on the inverse (Sherman-Morrison): H+ y = s.
                y = r - r_prev
                Hy = mat @ y
                den = float(s_prev @ Hy)
                if den != 0.0 and math.isfinite(den):
                    mat = mat + np.outer(s_prev - Hy, s_prev @ mat) / den
                fresh = False
            if mat is None or self.iteration == "newton":
                J = self._iteration_matrix(problem, t, q, v, x, lam_s, cv, ca)
                mat = self._factor(J, kind)
                if mat is None:
                    return False, dq, lam_s, (it, res, "singular iteration matrix")
                fresh = True
            self.newton_iterations += 1
            step = -(lu_solve(mat, r, check_finite=False) if kind == "lu" else mat @ r)
            if not np.all(np.isfinite(step)):
                return False, dq, lam_s, (it, res, "non-finite Newton correction")
            dq = dq + step[:n]
            lam_s = lam_s + step[n:]
            inc = float(np.max(np.abs(step[:n]), initial=0.0))
            r_prev, s_prev = r, step
            if self.iteration == "modified" and not fresh and inc_prev is not None \
                    and inc > self.theta_refresh * inc_prev:
                mat = None   # convergence slowed: rebuild at the next iterate
            inc_prev = inc
            fresh = False
        return False, dq, lam_s, (self.max_iterations, res, "iteration limit")


class GeneralizedAlphaScheme(Index3Integrator):
    """Generalized-alpha in the Arnold-Bruls form, parameters as data.

    With the acceleration-like variable a (a_0 = q''_0)::

        q_{n+1} = q_n + h v_n + h^2 (1/2 - beta) a_n + h^2 beta a_{n+1}
        v_{n+1} = v_n + h (1 - gamma) a_n + h gamma a_{n+1}
        (1 - alpha_m) a_{n+1} + alpha_m a_n = (1 - alpha_f) q''_{n+1} + alpha_f q''_n
        M q''_{n+1} + G^T lambda_{n+1} = F(t_{n+1}, q_{n+1}, v_{n+1}),  g(q_{n+1}, t_{n+1}) = 0

    so c_v = gamma/(beta h) and c_a = beta' = (1 - alpha_m)/((1 - alpha_f) beta h^2).
    The predictor takes q''_{n+1} = q''_n.

    Parameters
    ----------
    alpha_m, alpha_f, beta, gamma : float
        Scheme parameters [-] (beta > 0, alpha_m, alpha_f < 1).
    **newton
        See :class:`Index3Integrator`.
    """

    name = "generalized-alpha-scheme"

    def __init__(self, alpha_m: float, alpha_f: float, beta: float, gamma: float, **newton):
        if not (beta > 0.0 and alpha_m < 1.0 and alpha_f < 1.0):
            raise ValueError("need beta > 0, alpha_m < 1 and alpha_f < 1")
        self.alpha_m = float(alpha_m)
        self.alpha_f = float(alpha_f)
        self.beta = float(beta)
        self.gamma = float(gamma)
        # Second order exactly when gamma = 1/2 + alpha_f - alpha_m (Chung-Hulbert).
        self.order = 2 if abs(self.gamma - (0.5 + self.alpha_f - self.alpha_m)) < 1e-12 else 1
        super().__init__(**newton)

    def step(self, problem, t, q, v, h):
        q = np.asarray(q, dtype=float)
        v = np.asarray(v, dtype=float)
        if self.qdd is None:
            self.initialize(problem, t, q, v)
        am, af, b, g = self.alpha_m, self.alpha_f, self.beta, self.gamma
        a_n, qdd_n = self.a, self.qdd
        a_pred = (qdd_n - am * a_n) / (1.0 - am)
        q_ref = q + h * v + h * h * ((0.5 - b) * a_n + b * a_pred)
        v_ref = v + h * ((1.0 - g) * a_n + g * a_pred)
        cv = g / (b * h)
        ca = (1.0 - am) / ((1.0 - af) * b * h * h)
        dq, lam = self._solve(problem, t + h, h, q_ref, v_ref, qdd_n, cv, ca, self.lam, "alpha")
        self.a = a_pred + dq / (b * h * h)
        self.qdd = qdd_n + ca * dq
        self.lam = lam
        self.nsteps += 1
        return q_ref + dq, v_ref + cv * dq


class GeneralizedAlpha(GeneralizedAlphaScheme):
    """Chung-Hulbert generalized-alpha from the spectral radius at infinity (seed 001).

    alpha_m = (2 rho - 1)/(rho + 1), alpha_f = rho/(rho + 1),
    gamma = 1/2 + alpha_f - alpha_m, beta = (gamma + 1/2)^2 / 4.

    Parameters
    ----------
    rho_inf : float
        Spectral radius for h omega -> infinity, in [0, 1]; 1 is non-dissipative.

    Notes
    -----
    At index 3 keep rho_inf < 1 for long runs.  With rho_inf = 1 (alpha_m = alpha_f =
    1/2, like Newmark's trapezoidal rule) the multiplier component has the root -1 and
    the nonlinear coupling makes it grow slowly (Cardona and Geradin 1989): on the
    pendulum of the tests the multiplier error grows about 7x per second whatever h, and
    the energy error follows after some 6 s.  rho_inf = 0.99 already removes it.  Arnold
    and Bruls prove convergence for alpha_m < alpha_f < 1/2, i.e. rho_inf < 1.
    """

    name = "generalized-alpha"

    def __init__(self, rho_inf: float = 0.8, **newton):
        if not 0.0 <= rho_inf <= 1.0:
            raise ValueError("rho_inf must be in [0, 1]")
        am = (2.0 * rho_inf - 1.0) / (rho_inf + 1.0)
        af = rho_inf / (rho_inf + 1.0)
        g = 0.5 + af - am
        super().__init__(am, af, 0.25 * (g + 0.5) ** 2, g, **newton)
        self.rho_inf = float(rho_inf)


class HHT(GeneralizedAlphaScheme):
    """Hilber-Hughes-Taylor alpha method as generalized-alpha with alpha_m = 0.

    alpha_f = -alpha, gamma = 1/2 - alpha, beta = (1 - alpha)^2 / 4; spectral radius at
    infinity (1 + alpha)/(1 - alpha).  (Forces enter at t_{n+1}, Arnold-Bruls style; on
    linear problems this is the classical HHT.)

    Parameters
    ----------
    alpha : float
        In [-1/3, 0]; 0 is the trapezoidal rule.
    """

    name = "hht"

    def __init__(self, alpha: float = -0.05, **newton):
        if not -1.0 / 3.0 <= alpha <= 0.0:
            raise ValueError("HHT alpha must be in [-1/3, 0]")
        super().__init__(0.0, -alpha, 0.25 * (1.0 - alpha) ** 2, 0.5 - alpha, **newton)
        self.alpha = float(alpha)


class Newmark(GeneralizedAlphaScheme):
    """Newmark's method (alpha_m = alpha_f = 0); beta = 1/4, gamma = 1/2 is trapezoidal.

    Parameters
    ----------
    beta, gamma : float
        beta > 0 (the explicit beta = 0 is not available at index 3); order 2 only for
        gamma = 1/2.
    """

    name = "newmark"

    def __init__(self, beta: float = 0.25, gamma: float = 0.5, **newton):
        super().__init__(0.0, 0.0, beta, gamma, **newton)


class Bathe(Index3Integrator):
    """Bathe's composite scheme at index 3 (Bathe 2005, 2007; seed 003).

    Sub-step 1, trapezoidal rule on [t, t + gamma h] (unknowns q_m, lambda_m)::

        v_m   = v_n + gamma h/2 (q''_n + q''_m)
        q_m   = q_n + gamma h/2 (v_n + v_m)
        M q''_m + G^T lambda_m = F(t + gamma h, q_m, v_m),   g(q_m, t + gamma h) = 0

    so c_v = 2/(gamma h), c_a = (2/(gamma h))^2.  Sub-step 2, three-point backward Euler
    on [t, t + h] (unknowns q_{n+1}, lambda_{n+1})::

        v_{n+1}   = c1 q_n + c2 q_m + c3 q_{n+1}
        q''_{n+1} = c1 v_n + c2 v_m + c3 v_{n+1}
        c1 = (1 - gamma)/(gamma h), c2 = -1/(gamma (1 - gamma) h), c3 = (2 - gamma)/((1 - gamma) h)
        M q''_{n+1} + G^T lambda_{n+1} = F(t + h, q_{n+1}, v_{n+1}),  g(q_{n+1}, t + h) = 0

    so c_v = c3, c_a = c3^2.  Both sub-steps are predicted with an unchanged
    acceleration.  Positions and velocities are second order; the multipliers only first
    order at index 3 (q''_{n+1} differentiates velocities that are themselves
    differences of constrained positions), measured on the pendulum.  The history is q''_n (it satisfies the dynamic equation at t_n
    exactly), so ``a`` and ``qdd`` coincide.  ``lam_mid`` keeps lambda_m.

    Parameters
    ----------
    gamma : float
        Splitting fraction, in (0, 1); 0.5 is Bathe's default.
    iteration : {"newton", "modified", "broyden"}
        Sub-step solver; the two sub-steps keep separate matrices (their c_v, c_a differ).
    **newton
        See :class:`Index3Integrator`.
    """

    name = "bathe"
    order = 2

    def __init__(self, gamma: float = 0.5, iteration: str = "newton", **newton):
        if not 0.0 < gamma < 1.0:
            raise ValueError("Bathe gamma must be in (0, 1)")
        self.gamma = float(gamma)
        super().__init__(iteration=iteration, **newton)
        if iteration == "broyden":
            self.name = "bathe-broyden"
        self.lam_mid = None

    def step(self, problem, t, q, v, h):
        q = np.asarray(q, dtype=float)
        v = np.asarray(v, dtype=float)
        if self.qdd is None:
            self.initialize(problem, t, q, v)
        g = self.gamma
        qdd_n = self.qdd
        hg = g * h
        # Sub-step 1: trapezoidal rule.
        q_ref = q + hg * v + 0.5 * hg * hg * qdd_n
        v_ref = v + hg * qdd_n
        cv = 2.0 / hg
        dq, lam_m = self._solve(problem, t + hg, h, q_ref, v_ref, qdd_n, cv, cv * cv,
                                self.lam, "trapezoidal")
        q_m = q_ref + dq
        v_m = v_ref + cv * dq
        qdd_m = qdd_n + cv * cv * dq
        # Sub-step 2: three-point backward Euler, predicted with q''_{n+1} = q''_m.
        c1 = (1.0 - g) / hg
        c2 = -1.0 / (g * (1.0 - g) * h)
        c3 = (2.0 - g) / ((1.0 - g) * h)
        v_ref = (qdd_m - c1 * v - c2 * v_m) / c3
        q_ref = (v_ref - c1 * q - c2 * q_m) / c3
        dq, lam = self._solve(problem, t + h, h, q_ref, v_ref, qdd_m, c3, c3 * c3, lam_m,
                              "backward")
        self.qdd = qdd_m + c3 * c3 * dq
        self.a = self.qdd.copy()
        self.lam = lam
        self.lam_mid = lam_m
        self.nsteps += 1
        return q_ref + dq, v_ref + c3 * dq

    def reset(self) -> None:
        super().reset()
        self.lam_mid = None

    def get_state(self):
        state = super().get_state()
        state["lam_mid"] = None if self.lam_mid is None else self.lam_mid.copy()
        return state

    def set_state(self, state):
        super().set_state(state)
        lm = state.get("lam_mid")
        self.lam_mid = None if lm is None else np.array(lm, dtype=float)


IMPLICIT = {
    "generalized-alpha": GeneralizedAlpha,
    "hht": HHT,
    "newmark": Newmark,
    "bathe": Bathe,
    "bathe-broyden": lambda **p: Bathe(iteration="broyden", **p),
}
IMPLICIT_NAMES = tuple(IMPLICIT)


def make_implicit(name: str, **params) -> Index3Integrator:
    """Index-3 integrator by registry name, e.g. ``make_implicit("hht", alpha=-0.1)``.

    Raises
    ------
    ValueError
        For an unknown name; the message lists the accepted names.
    """
    key = name.lower()
    if key not in IMPLICIT:
        raise ValueError(f"implicit integrator {name!r} is unknown; accepted: "
                         f"{', '.join(IMPLICIT_NAMES)}")
    return IMPLICIT[key](**params)


Index3Result = namedtuple("Index3Result", "t q v lam stats")
Index3Result.__doc__ = """Result of :func:`integrate_index3` (unpacks as a tuple).

t : (N+1,) times [s]; q, v : (N+1, n) positions and velocities; lam : (N+1, m)
multipliers; stats : dict of the integrator's counters."""


def integrate_index3(problem: ConstrainedProblem, q0, v0, t0: float, h: float,
                     n_steps: int, method: str | Index3Integrator = "generalized-alpha",
                     **params) -> Index3Result:
    """Integrate ``n_steps`` fixed steps of size ``h`` [s] of the index-3 DAE.

    Parameters
    ----------
    problem : ConstrainedProblem
    q0, v0 : array_like, shape (n,)
        Consistent initial positions [m, rad] and velocities [m/s, rad/s] (no assembly
        is done here).
    t0, h : float
        Start time and step size [s].
    n_steps : int
    method : str or Index3Integrator
        Registry name (see :func:`make_implicit`, ``params`` go to it) or an instance.

    Returns
    -------
    Index3Result
        ``(t, q, v, lam, stats)``; ``lam[0]`` and the initial accelerations come from
        :func:`consistent_accelerations`.
    """
    integ = make_implicit(method, **params) if isinstance(method, str) else method
    q = np.array(q0, dtype=float)
    v = np.array(v0, dtype=float)
    integ.initialize(problem, t0, q, v)
    t = t0 + h * np.arange(n_steps + 1)
    Q = np.empty((n_steps + 1, q.size))
    V = np.empty_like(Q)
    L = np.empty((n_steps + 1, integ.lam.size))
    Q[0], V[0], L[0] = q, v, integ.lam
    for k in range(n_steps):
        q, v = integ.step(problem, t[k], q, v, h)
        Q[k + 1], V[k + 1], L[k + 1] = q, v, integ.lam
    return Index3Result(t, Q, V, L, integ.stats())
