"""The implicit index-3/GGL integration schemes on the shared Newton machinery of
:class:`mbdcore.dae.index3.Index3Integrator` (its module docstring: the constraint
forms, the scaled Newton solve, step halving).

Two families share one Newton solver (:meth:`Index3Integrator._solve`):

``generalized-alpha`` / ``hht`` / ``newmark``
    the generalized-alpha method in the Arnold-Bruls form (acceleration-like variable
    ``a``), parameters alpha_m, alpha_f, beta, gamma as data.  HHT and Newmark are the
    same scheme with other parameters.
``bathe`` / ``bathe-broyden``
    Bathe's composite scheme (Bathe & Baig 2005; docs/benchmarks.md §8.4): trapezoidal
    rule on [t, t + gamma h], then the three-point backward Euler formula on [t, t + h];
    each sub-step by Newton or by Broyden's quasi-Newton updates.

"""
from __future__ import annotations

import numpy as np

from mbdcore.dae.index3 import Index3Integrator
from mbdcore.integrators.step_control import ErrorControl

__all__ = ["GeneralizedAlphaScheme", "GeneralizedAlpha", "HHT", "Newmark", "Bathe"]


class GeneralizedAlphaScheme(Index3Integrator):
    """Generalized-alpha in the Arnold-Bruls form, parameters as data.

    With the acceleration-like variable a (a_0 = q''_0)::

        q_{n+1} = q_n + h v_n + h^2 (1/2 - beta) a_n + h^2 beta a_{n+1}
        v_{n+1} = v_n + h (1 - gamma) a_n + h gamma a_{n+1}
        (1 - alpha_m) a_{n+1} + alpha_m a_n = (1 - alpha_f) q''_{n+1} + alpha_f q''_n
        M q''_{n+1} + G^T lambda_{n+1} = F(t_{n+1}, q_{n+1}, v_{n+1}),  g(q_{n+1}, t_{n+1}) = 0

    so c_v = gamma/(beta h) and c_a = beta' = (1 - alpha_m)/((1 - alpha_f) beta h^2).
    In the GGL form (default) the position update gets ``+ G(q_{n+1})^T mu_{n+1}`` and
    ``G(q_{n+1}) v_{n+1} + g_t = 0`` is imposed too (Arnold, Bruls and Cardona 2015).
    The predictor takes q''_{n+1} = q''_n.

    Every step estimates its local position error (``local_error``, docs/step_control.md)::

        e = h^2 C (a_{n+1} - a_n),   C = beta + (alpha_m - alpha_f)/2 - 1/6

    (the h^3 q^(3) term of the position update against Taylor's h^3/6, with a_n
    approximating q''(t_n + (alpha_m - alpha_f) h)); it is O(h^3), the local error's
    order, and tends to it as h -> 0.  ``adaptive=True`` uses it to choose the steps.

    Parameters
    ----------
    alpha_m, alpha_f, beta, gamma : float
        Scheme parameters [-] (beta > 0, alpha_m, alpha_f < 1).
    adaptive : bool
        Error-controlled steps within each step the caller asks for, landing on its end
        (docs/step_control.md); needs a second-order parameter set with C != 0.
    rtol, atol, h_min : float
        With ``adaptive``: the local position error of each coordinate within
        ``atol + rtol |q_i|`` [m, rad] (defaults 1e-3, 1e-6), the smallest step [s]
        (default None: 1e-6 of the caller's step); refused without ``adaptive``.
    **newton
        See :class:`Index3Integrator`.
    """

    name = "generalized-alpha-scheme"

    def __init__(self, alpha_m: float, alpha_f: float, beta: float, gamma: float,
                 adaptive: bool = False, rtol: float | None = None,
                 atol: float | None = None, h_min: float | None = None, **newton):
        if not (beta > 0.0 and alpha_m < 1.0 and alpha_f < 1.0):
            raise ValueError("need beta > 0, alpha_m < 1 and alpha_f < 1")
        self.alpha_m = float(alpha_m)
        self.alpha_f = float(alpha_f)
        self.beta = float(beta)
        self.gamma = float(gamma)
        # Second order exactly when gamma = 1/2 + alpha_f - alpha_m (Chung-Hulbert).
        self.order = 2 if abs(self.gamma - (0.5 + self.alpha_f - self.alpha_m)) < 1e-12 else 1
        self.error_constant = self.beta + 0.5 * (self.alpha_m - self.alpha_f) - 1.0 / 6.0
        super().__init__(**newton)
        self.error_control = self._error_control(adaptive, rtol, atol, h_min)

    def _error_control(self, adaptive, rtol, atol, h_min):
        """The ErrorControl of ``adaptive=True`` (None for fixed steps), its options
        checked."""
        given = [k for k, val in (("rtol", rtol), ("atol", atol), ("h_min", h_min))
                 if val is not None]
        if adaptive is not True and adaptive is not False:
            raise ValueError(f"adaptive = {adaptive!r}: accepted True or False")
        if not adaptive:
            if given:
                raise ValueError(f"{', '.join(given)} set the error control of "
                                 "adaptive=True; with fixed steps (adaptive=False) they "
                                 "do nothing")
            return None
        if self.order != 2 or abs(self.error_constant) < 1e-12:
            raise ValueError(
                f"adaptive=True needs a second-order parameter set with an embedded error "
                f"estimate (gamma = 1/2 + alpha_f - alpha_m and beta + (alpha_m - alpha_f)/2 "
                f"!= 1/6); this one has gamma = {self.gamma:.6g}, beta = {self.beta:.6g}")
        return ErrorControl(1e-3 if rtol is None else rtol, 1e-6 if atol is None else atol,
                            h_min, order=3)

    def _step(self, problem, t, q, v, h):
        self._step_start = (q, v)
        if self.qdd is None:
            self.start(problem, t, q, v)
        am, af, b, g = self.alpha_m, self.alpha_f, self.beta, self.gamma
        a_n, qdd_n = self.a, self.qdd
        a_pred = (qdd_n - am * a_n) / (1.0 - am)
        q_ref = q + h * v + h * h * ((0.5 - b) * a_n + b * a_pred)
        v_ref = v + h * ((1.0 - g) * a_n + g * a_pred)
        cv = g / (b * h)
        ca = (1.0 - am) / ((1.0 - af) * b * h * h)
        dq, w, lam = self._solve(problem, t + h, h, q_ref, v_ref, qdd_n, cv, ca, self.lam,
                                 "alpha")
        self.a = a_pred + w / (b * h * h)
        self.local_error = (h * h * self.error_constant) * (self.a - a_n)
        self.qdd = qdd_n + ca * w
        self.lam = lam
        self.nsteps += 1
        return q_ref + dq, v_ref + cv * w

    def _step_size_changed(self, h_old, h_new):
        """a_n approximates q''(t_n + (alpha_m - alpha_f) h) to O(h^2) (Arnold and
        Bruls 2007), so a - q''_n is proportional to the step: scaled by h_new/h_old
        it is that approximation for steps of h_new (module docstring, "Step
        halving")."""
        if self.a is not None and self.qdd is not None:
            self.a = self.qdd + (h_new / h_old) * (self.a - self.qdd)


class GeneralizedAlpha(GeneralizedAlphaScheme):
    """Chung-Hulbert generalized-alpha from the spectral radius at infinity (Chung & Hulbert
    1993; docs/benchmarks.md §8.2).

    alpha_m = (2 rho - 1)/(rho + 1), alpha_f = rho/(rho + 1),
    gamma = 1/2 + alpha_f - alpha_m, beta = (gamma + 1/2)^2 / 4.

    Parameters
    ----------
    rho_inf : float
        Spectral radius for h omega -> infinity, in [0, 1]; 1 is non-dissipative.

    Notes
    -----
    In the default GGL form every rho_inf in [0, 1] is usable; rho_inf = 1 is
    non-dissipative (slider-crank, h = 1e-3 s: energy level drifts 7.5e-7 in 10 s).
    With ``constraint_form="index3"`` keep rho_inf < 1 for long runs: with rho_inf = 1
    (alpha_m = alpha_f = 1/2, like Newmark's trapezoidal rule) the multiplier
    component has the root -1 and the nonlinear coupling makes it grow (Cardona and
    Geradin 1989): on the pendulum of the tests about 7x per second whatever h; on the
    slider-crank Newton diverges at 1.73 s (rho_inf = 1) and 3.83 s (rho_inf = 0.99).
    Arnold and Bruls prove index-3 convergence for alpha_m < alpha_f < 1/2, i.e.
    rho_inf < 1.
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
    """Bathe's composite scheme at index 3 (Bathe 2005, 2007; docs/benchmarks.md §8.4).

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

    so c_v = c3, c_a = c3^2.  In the GGL form the position formulas get the
    correction G^T mu (q_m = ... + G^T mu_m, c3 q_{n+1} = ... + c3 G^T mu_{n+1}) and
    G v + g_t = 0 is imposed at t + gamma h and t + h.  Both sub-steps are predicted
    with an unchanged acceleration.  Positions, velocities and (GGL) multipliers are
    second order; with ``constraint_form="index3"`` the multipliers are only first
    order (q''_{n+1} differentiates velocities that are themselves differences of
    constrained positions), measured on the pendulum and the slider-crank.  The
    history is q''_n (it satisfies the dynamic equation at t_n exactly), so ``a`` and
    ``qdd`` coincide.  ``lam_mid`` keeps lambda_m.

    Parameters
    ----------
    gamma : float
        Splitting fraction, in (0, 1); 0.5 is Bathe's default.
    iteration : {"modified", "newton", "broyden"}
        Sub-step solver; the two sub-steps keep separate matrices (their c_v, c_a differ).
    **newton
        See :class:`Index3Integrator`.
    """

    name = "bathe"
    order = 2

    def __init__(self, gamma: float = 0.5, iteration: str = "modified", **newton):
        if not 0.0 < gamma < 1.0:
            raise ValueError("Bathe gamma must be in (0, 1)")
        self.gamma = float(gamma)
        super().__init__(iteration=iteration, **newton)
        if iteration == "broyden":
            self.name = "bathe-broyden"
        self.lam_mid = None

    def _step(self, problem, t, q, v, h):
        self._step_start = (q, v)
        if self.qdd is None:
            self.start(problem, t, q, v)
        g = self.gamma
        qdd_n = self.qdd
        hg = g * h
        # Sub-step 1: trapezoidal rule.
        q_ref = q + hg * v + 0.5 * hg * hg * qdd_n
        v_ref = v + hg * qdd_n
        cv = 2.0 / hg
        dq, w, lam_m = self._solve(problem, t + hg, h, q_ref, v_ref, qdd_n, cv, cv * cv,
                                   self.lam, "trapezoidal")
        q_m = q_ref + dq
        v_m = v_ref + cv * w
        qdd_m = qdd_n + cv * cv * w
        # Sub-step 2: three-point backward Euler, predicted with q''_{n+1} = q''_m.
        c1 = (1.0 - g) / hg
        c2 = -1.0 / (g * (1.0 - g) * h)
        c3 = (2.0 - g) / ((1.0 - g) * h)
        v_ref = (qdd_m - c1 * v - c2 * v_m) / c3
        q_ref = (v_ref - c1 * q - c2 * q_m) / c3
        dq, w, lam = self._solve(problem, t + h, h, q_ref, v_ref, qdd_m, c3, c3 * c3, lam_m,
                                 "backward")
        self.qdd = qdd_m + c3 * c3 * w
        self.a = self.qdd.copy()
        self.lam = lam
        self.lam_mid = lam_m
        self.nsteps += 1
        return q_ref + dq, v_ref + c3 * w

    _STEP_STATE = Index3Integrator._STEP_STATE + ("lam_mid",)

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
