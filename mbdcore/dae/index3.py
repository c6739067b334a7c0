"""Implicit integrators for the constrained (index-3) equations of motion.

The problem (:class:`mbdcore.dae.ConstrainedProblem`, docs/benchmarks.md §8.1, §8.2, §8.4)::

    M(q) q'' + G(q, t)^T lambda = F(t, q, q')
    g(q, t) = 0                                  G = dg/dq

is discretised without differentiating the constraints away: the position constraints
are imposed at every solve, together with the multipliers, so there is no drift and no
Baumgarte term.  Two constraint forms (``constraint_form=``):

``"ggl"`` (default) -- stabilized index 2 (Gear, Gupta and Leimkuhler 1985)::

    q' = v + G^T mu,   M v' + G^T lambda = F,   g(q, t) = 0,   G v + g_t = 0

    The hidden velocity constraint is imposed too, with a second multiplier mu (zero
    for the exact solution) that moves the positions back onto g = 0.  Arnold, Bruls
    and Cardona (Numer. Math. 129, 2015) apply generalized-alpha to this form: no
    order reduction, second order in q, v, lambda, and no weak instability at
    rho_inf = 1.  The same form is used for Bathe's sub-steps.
``"index3"`` -- the plain index-3 form (position constraints only).  Kept as an
    option, not the default, because (measured on the slider-crank, h = 1e-3 s) with
    rho_inf = 1 the (-1)^n multiplier component of the trapezoidal-type scheme grows
    about 1e6 in 1.6 s until Newton diverges (t = 1.73 s; rho_inf = 0.99: 3.83 s;
    Cardona and Geradin 1989), and Bathe's multipliers are only first order.


The schemes (generalized-alpha, HHT, Newmark, Bathe) are in :mod:`mbdcore.dae.schemes`;
they share the Newton solver here (:meth:`Index3Integrator._solve`); its iterations in
C are :mod:`mbdcore.dae.newton_native`.

Every solve has the same structure.  The scheme makes the velocity and acceleration at
the new time affine in the velocity-generated part ``w`` of the position increment
``dq = q - q_ref`` about a predictor::

    q = q_ref + dq,   w = dq - G(q)^T mu   (GGL; w = dq at index 3)
    v(w) = v_ref + c_v w          q''(w) = a_ref + c_a w

and Newton solves, for (dq, lambda~, mu), the *scaled* equations (Bottasso, Bauchau and
Cardona 2007; Arnold and Bruls 2007)::

    r1 = [M(q) q''(w) + G^T lambda - F(t, q, v(w))] / c_a = 0
    r2 = g(q, t)                                            = 0
    r3 = [G(q) v(w) + g_t(q, t)] / c_v                      = 0      (GGL only)

with the scaled multiplier ``lambda~ = lambda / c_a``; every row and unknown is then in
position units and the iteration matrix::

    [[ S      , G^T ,  -D G^T ],        S = M + (c_v C_t + K_t) / c_a
     [ G      , 0   ,   0     ],        D = M + (c_v / c_a) C_t
     [ G + H  , 0   ,  -G G^T ]]        H = d(G v)/dq / c_v
                                        C_t = -dF/dv,  K_t = -dF/dq + d(M q'' + G^T lambda)/dq

(first two block rows and columns at index 3) keeps an O(1) condition number as
h -> 0 instead of growing like 1/h^4 (2.56 for the pendulum at h = 1e-2 ... 1e-5 s,
against 4e8 ... 4e20 unscaled).

Newton.  S, D and H are the expensive part (force Jacobians, finite differences of M
and G).  They are kept unscaled (M, C_t, K_t, d(G v)/dq), so kept blocks serve any h.
``"modified"`` (default) keeps the LU factors of the assembled matrix across
iterations *and* steps, and climbs a ladder only when the contraction rate theta (see
below) says so: (1) a kept factorisation that contracts slower than ``theta_refresh``
(or diverges, or needs more iterations than the last solve with factors made in it
took) is refactorised with the current G and the kept blocks -- a stale G, not a stale
S, is what slows a kept matrix (G turns with the bodies, S differs from M by O(h^2));
(2) if the fresh G still leaves theta above ``theta_refresh`` the blocks are rebuilt
at the current iterate; (3) a solve that fails, or diverges with fresh blocks, is
retried once with everything fresh before :class:`ConvergenceError`.  The first solve
at another h, and the first after :meth:`Index3Integrator.start`, always refactorise
(h enters c_v, c_a).  In the plain index-3 form factors are kept within a step only
(its weakly unstable multiplier mode at rho_inf near 1 amplifies the larger multiplier
error kept factors leave: pendulum, rho_inf = 1, 3 s: 0.19 N against 0.01 N).  Keeping factors that cost an extra iteration is a loss here (an
iteration, with its residual, costs several factorisations of these small matrices),
so after such a miss the next steps refactorise at their first iteration, for 2, 4,
... 256 steps, before keeping is tried again.  Measured (``python
bench/newton_policy.py``, generalized-alpha GGL, CPU time, before -> after; the
former "modified" refactorised at every iteration): slider-crank (rho_inf 1,
h = 1e-3 s, 2 s) 1.07 -> 1.00 s, 2.22 -> 2.22 iterations/step, 2.22 -> 1.00
factorisations/step; ANCF hub-beam spin-up (8 elements, 6 rad/s, rho_inf 0.8,
h = 2.5e-3 s, 5 s) 1.95 -> 1.80 s, 2.51 -> 2.51, 2.51 -> 0.88; ANCF two-link arm
(4 elements per link, h = 2.5e-4 s, 0.3 s) 1.97 -> 1.85 s, 2.95 -> 2.87, 2.95 -> 0.28;
builds per step 5e-4, 0.05, 8e-4 (unchanged); final states within 1e-9 of full
Newton.  ``"newton"`` rebuilds and factorises at every iteration; ``"broyden"`` keeps
the inverse of the whole matrix and corrects it by Broyden's rank-one update (Broyden
1965; docs/benchmarks.md §8.4), rebuilt when the iteration stops contracting.  The starting
guess is the previous step's (dq, mu) of the same stage.  Convergence test (Hairer and
Wanner, Solving ODEs II, IV.8): with nu_k the k-th increment measured against the
tolerance -- position part against tol max(1, |q|), velocity part c_v |dw| against tol
max(1, |v|), floored at 16 eps |q| (the rounding of q_ref + dq) -- and
theta = nu_k / nu_{k-1}, the solve has converged when theta / (1 - theta) nu_k <= 1 (the
bound on the remaining error), or nu_k <= 0.1.  A solve that cannot converge with a
fresh matrix raises :class:`ConvergenceError` (an
:class:`~mbdcore.integrators.base.IntegrationError`) naming the time, the step and the
last residual (the max norm of the scaled residual at the last iterate, m or rad).

Step halving.  :meth:`Index3Integrator.step` retries a step whose solve failed with
halved steps (:class:`~mbdcore.integrators.base.StepHalving`, the one mechanism of
every implicit stepper, so :func:`mbdcore.dae.simulate` and the co-simulation blocks'
substeps share it): the integrator is put back exactly as before the attempt
(what ``get_state`` holds; the work counters keep the failed work), [t, t + h] is
covered by two steps of h/2, each halved again if it fails, down to
h / 2**``max_halvings`` (default 6: h/64), and the next step is of h again.  The
acceleration-like variable of generalized-alpha depends on the step: a_n approximates
q''(t_n + (alpha_m - alpha_f) h) to O(h^2) (Arnold and Bruls 2007), so at every change
of step from h to h' it is moved to q''_n + (h'/h) (a_n - q''_n), which keeps it that
approximation for the new step (without, the O(h) error of a restart would enter at
each change).  ``stats()`` counts ``step_retries`` (failed steps split into halves) and
``deepest_halving``.  When the smallest step fails too the integrator is put back as
before the step and the error says how many halvings were tried.
"""
from __future__ import annotations

import math

import numpy as np
import scipy.sparse
from scipy.linalg.lapack import dgetrs

from mbdcore.dae.index1 import consistent_accelerations
from mbdcore.dae.newton_matrix import ScaledNewtonEquations, finite, max_abs
from mbdcore.dae.newton_native import CompiledNewton
from mbdcore.dae.problem import ConstrainedProblem
from mbdcore.dae.sparse_solver import SparseLU, require_pardiso
from mbdcore.integrators.base import MAX_HALVINGS, ConvergenceError, StepHalving
from mbdcore.integrators.step_control import ErrorControlledSteps

__all__ = ["ITERATIONS", "CONSTRAINT_FORMS", "SPARSE_SOLVERS", "SPARSE_AUTO_SIZE", "ConvergenceError",
           "Index3Integrator", "SWITCH_ROUNDS"]

ITERATIONS = ("modified", "newton", "broyden")
CONSTRAINT_FORMS = ("ggl", "index3")
#: factorisations of the sparse path: the project's (mbdcore.dae.sparse_solver, its
#: ordering kept per pattern, refactored on kept pivots), scipy's SuperLU, or MKL's
#: multithreaded PARDISO (optional: the extra "parallel")
SPARSE_SOLVERS = ("native", "superlu", "pardiso")
#: ``sparse="auto"`` switches to sparse linear algebra above this many coordinates
SPARSE_AUTO_SIZE = 200
#: the most solves of one stage with a new active set of the switching force laws (a
#: tension-only cable's taut points; :meth:`Index3Integrator._solve`)
SWITCH_ROUNDS = 8

def _copy_kept(val):
    """Copy of a kept iteration-matrix entry: arrays and sparse matrices copied, sparse
    factors (:class:`~mbdcore.dae.sparse_solver.SparseLU`,
    :class:`~mbdcore.dae.index1.SparseFactors`) shared (never modified in place)."""
    if isinstance(val, dict):
        return {k: _copy_kept(x) for k, x in val.items()}
    if isinstance(val, tuple):
        return tuple(_copy_kept(x) for x in val)
    if isinstance(val, np.ndarray) or scipy.sparse.issparse(val):
        return val.copy()
    return val


class Index3Integrator(ScaledNewtonEquations, ErrorControlledSteps, StepHalving):
    """Base class: one step of the constrained equations, with the shared Newton solver.

    Parameters
    ----------
    tol : float
        Newton tolerance: the estimated remaining error of the position increment must
        be below ``tol max(1, |q|_inf)`` [m, rad] and that of the velocity below
        ``tol max(1, |v|_inf)`` [m/s, rad/s] (see the module docstring).
    max_iterations : int
        Newton iterations allowed per solve before it is declared failed.
    iteration : {"modified", "newton", "broyden"}
        How the iteration matrix is obtained (see the module docstring).
    theta_refresh : float
        Modified Newton: when the contraction rate (ratio of successive increment norms)
        exceeds this, refactorise kept factors with the current G, then, if that is not
        enough, rebuild the blocks (see the module docstring).
    geometric_stiffness : bool
        Include ``d(M(q) q'' + G(q)^T lambda)/dq`` (and for GGL ``d(G v)/dq``) by forward
        differences in the matrix.  Without it Newton still converges for small h (the
        terms are O(h^2) and O(h) against M and G) but more slowly.
    constraint_form : {"ggl", "index3"}
        ``"ggl"`` (default): stabilized index-2 form, position *and* velocity
        constraints imposed; ``"index3"``: position constraints only (see the module
        docstring for why GGL is the default).
    sparse : {"auto", True, False}
        Linear algebra of the iteration matrix.  ``True``: M, the force Jacobians and
        G are assembled as scipy sparse matrices (``mass_matrix_sparse``,
        ``force_jacobians_sparse``, ``constraint_terms_sparse`` and
        ``geometric_stiffness_sparse`` of the problem where it has them, else its
        dense matrices converted), the matrix is built sparse and factored by
        ``sparse_solver``: for a chain of n beam elements a step costs O(n) instead of
        O(n^3).  ``False``: dense LAPACK (the small-system default).
        ``"auto"`` (default): sparse above :data:`SPARSE_AUTO_SIZE` coordinates, except
        with ``iteration="broyden"``, whose updated inverse is dense by nature.
    sparse_solver : {"native", "superlu", "pardiso"}
        The sparse path's factorisation.  ``"native"`` (default): the project's sparse
        LU in C (:class:`~mbdcore.dae.sparse_solver.SparseLU`, docs/sparse_lu.md): its
        fill-reducing ordering made once per pattern of the matrix (the topology) and
        kept across steps, each factorisation a refactorisation on the pivot order of
        the last one, factored afresh where a kept pivot has become too small.
        ``"superlu"``: scipy's SuperLU (``scipy.sparse.linalg.splu``), its ordering and
        pivots chosen at every factorisation.  ``"pardiso"``: Intel MKL's PARDISO,
        multithreaded (MKL's thread count), through the optional pypardiso (the extra
        ``parallel``; ImportError naming it when missing), its analysis (ordering,
        symbolic factorisation) made once per pattern and kept while the matrices fit
        it, each factorisation its numerical phase alone
        (:class:`~mbdcore.dae.sparse_solver.PardisoAnalysis`).
    max_halvings : int
        How many times a step whose Newton solve fails is halved before
        :class:`ConvergenceError` is raised (steps down to h / 2**max_halvings; module
        docstring, "Step halving"); 0: no retry.
    line_search : bool
        Backtrack each Newton step on the scaled residual's 2-norm (Armijo; halvings
        of the step until the norm falls, at most
        :data:`~mbdcore.dae.newton_matrix.LINE_SEARCH_HALVINGS`, else the full step),
        so that a far predictor does not throw slack cables about (docs/step_control.md,
        "Line search").  In the Python iteration (the sparse
        path, problems without compiled terms), not in the C iterations of the dense
        compiled path.  Off by default.

    Attributes
    ----------
    name : str
    order : int
        Order of the position error for smooth solutions.
    nsteps, newton_iterations, jacobian_evaluations, factorizations, failures : int
        Steps taken; linear solves of Newton corrections; builds of the Jacobian blocks
        (each a ``force_jacobians`` call); LU factorisations (Broyden: inversions) of
        the iteration matrix; solves that did not converge (those retried with a fresh
        matrix included).  :meth:`stats` adds the averages per step.  ``nsteps``
        counts the steps taken, the halves of a retried step included.
    step_retries, deepest_halving : int
        Failed steps retried as two halves; the deepest halving reached (steps of
        h / 2**deepest_halving were taken).
    a, qdd, lam : ndarray or None
        After a step: acceleration-like variable, accelerations [m/s^2] and multipliers
        at the end of the step.
    mu : ndarray or None
        GGL only: the multiplier of the velocity constraint at the end of the step, as
        the position correction ``G^T mu`` [m, rad] it made (zero for the exact
        solution; O(h^3) per step).
    """

    name = "index3"
    order = 0

    def __init__(self, tol: float = 1e-10, max_iterations: int = 25,
                 iteration: str = "modified", theta_refresh: float = 0.3,
                 geometric_stiffness: bool = True, constraint_form: str = "ggl",
                 sparse="auto", max_halvings: int = MAX_HALVINGS,
                 sparse_solver: str = "native", line_search: bool = False):
        if iteration not in ITERATIONS:
            raise ValueError(f"iteration {iteration!r} is unknown; accepted: {ITERATIONS}")
        if constraint_form not in CONSTRAINT_FORMS:
            raise ValueError(f"constraint_form {constraint_form!r} is unknown; accepted: "
                             f"{CONSTRAINT_FORMS}")
        self.tol = float(tol)
        self.max_iterations = int(max_iterations)
        self.iteration = iteration
        self.theta_refresh = float(theta_refresh)
        self.geometric_stiffness = bool(geometric_stiffness)
        self.constraint_form = constraint_form
        if not (sparse is True or sparse is False or sparse == "auto"):
            raise ValueError(f"sparse = {sparse!r}: accepted True, False, 'auto'")
        if sparse is True and iteration == "broyden":
            raise ValueError("sparse=True cannot be used with iteration='broyden' (Broyden "
                             "updates a dense inverse); use 'modified' or 'newton'")
        self.sparse = sparse
        if sparse_solver not in SPARSE_SOLVERS:
            raise ValueError(f"sparse_solver {sparse_solver!r} is unknown; accepted: "
                             f"{SPARSE_SOLVERS}")
        if sparse_solver == "pardiso":
            require_pardiso()
        self.sparse_solver = sparse_solver
        if int(max_halvings) != max_halvings or max_halvings < 0:
            raise ValueError(f"max_halvings = {max_halvings!r}: accepted a whole number >= 0")
        self.max_halvings = int(max_halvings)
        if line_search is not True and line_search is not False:
            raise ValueError(f"line_search = {line_search!r}: accepted True or False")
        if line_search and iteration == "broyden":
            raise ValueError("line_search=True cannot be used with iteration='broyden' (its "
                             "updates assume full steps); use 'modified' or 'newton'")
        self.line_search = line_search
        self._last_damping = 1.0
        self.reset()

    @property
    def ggl(self) -> bool:
        return self.constraint_form == "ggl"

    def uses_sparse(self, problem) -> bool:
        """Whether steps on ``problem`` use the sparse linear algebra (see ``sparse``)."""
        if self.sparse == "auto":
            return self.iteration != "broyden" and int(problem.n) > SPARSE_AUTO_SIZE
        return bool(self.sparse)

    #: counters of work done, kept when a failed step is rolled back (StepHalving)
    WORK_COUNTERS = ("newton_iterations", "jacobian_evaluations", "factorizations",
                     "failures", "switch_rounds", "line_search_cuts")

    # -- history ---------------------------------------------------------------------
    def reset(self) -> None:
        """Forget the history and the counters (start of a new simulation)."""
        self._clear_retries()
        self._clear_control()
        # the estimate of the last step's local position error [m, rad] (schemes with
        # an embedded estimate; docs/step_control.md)
        self.local_error = None
        self.nsteps = 0
        self.newton_iterations = 0
        self.jacobian_evaluations = 0
        self.factorizations = 0
        self.pardiso_analyses = 0
        self.failures = 0
        self.switch_rounds = 0
        self.line_search_cuts = 0
        # (q, v) at the start of the step being taken (the first active set's state)
        self._step_start = None
        self.a = None
        self.qdd = None
        self.lam = None
        self.mu = None
        # Iteration matrices kept for reuse, per stage key: a dict with the step size
        # "h" it was made for and either "inv" (Broyden's inverse) or "parts" (the
        # unscaled Jacobian blocks, see _parts) and "lu" (factors of the scaled matrix
        # for that h, or None: factorise before use).
        self._cache: dict = {}
        # (problem, its CompiledNewton or None, its CompiledTerms or None)
        self._compiled = None
        # The last sparse factors made (SparseLU): its ordering, pivot order and L, U
        # patterns serve the next factorisation of a matrix of that pattern.
        self._sparse_lu = None
        # PARDISO's analysis of the last pattern (sparse_solver="pardiso"): kept while
        # the Newton matrices fit it, each factorisation then only PARDISO's phase 22
        self._pardiso_analysis = None
        # Last converged increment per stage: the starting guess of the next solve
        # (the increment is smooth in time, so this cuts the initial error by O(h)).
        self._guess: dict = {}

    def start(self, problem: ConstrainedProblem, t: float, q, v) -> None:
        """Start the history from consistent accelerations and multipliers at (t, q, v).

        Kept factorisations, Broyden inverses and Newton guesses of an earlier
        trajectory are forgotten (the next solve factorises afresh with the current G),
        counters kept.  Kept Jacobian blocks of modified Newton are kept if their sizes
        fit ``problem`` (a restart after a force jump is the same problem): at worst
        they are stale, which the contraction test detects and repairs."""
        n, m = int(problem.n), int(getattr(problem, "m", 0))
        self._cache = {key: {"h": e["h"], "parts": e["parts"], "lu": None}
                       for key, e in self._cache.items()
                       if "parts" in e and e["parts"][0].shape == (n, n)
                       and e["parts"][3].shape == (m, n)}
        self._guess = {}
        self._compiled = None
        qdd, lam = consistent_accelerations(problem, t, q, v, sparse=self.uses_sparse(problem))
        self.qdd = qdd
        self.lam = lam
        self.a = qdd.copy()
        self.mu = np.zeros_like(lam) if self.ggl else None

    def get_state(self) -> dict:
        """History needed to continue bit for bit (counters and kept matrices included)."""
        def cp(x):
            return None if x is None else np.array(x, copy=True)
        cache = {key: _copy_kept(entry) for key, entry in self._cache.items()}
        return {"nsteps": self.nsteps, "newton_iterations": self.newton_iterations,
                "jacobian_evaluations": self.jacobian_evaluations,
                "factorizations": self.factorizations, "failures": self.failures,
                "switch_rounds": self.switch_rounds,
                "line_search_cuts": self.line_search_cuts, "a": cp(self.a), "qdd": cp(self.qdd),
                "lam": cp(self.lam), "mu": cp(self.mu), "cache": cache,
                "guess": {k: g.copy() for k, g in self._guess.items()},
                # what makes the last sparse factors' pivot order again (plain arrays)
                "sparse_lu": None if self._sparse_lu is None else
                self._sparse_lu.pivot_state(), **self._retry_state(),
                **self._control_state()}

    def set_state(self, state: dict) -> None:
        """Restore what :meth:`get_state` returned."""
        def cp(x):
            return None if x is None else np.array(x, dtype=float, copy=True)
        self.nsteps = int(state["nsteps"])
        self.newton_iterations = int(state["newton_iterations"])
        self.jacobian_evaluations = int(state["jacobian_evaluations"])
        self.factorizations = int(state.get("factorizations", 0))
        self.failures = int(state["failures"])
        self.switch_rounds = int(state.get("switch_rounds", 0))
        self.line_search_cuts = int(state.get("line_search_cuts", 0))
        self.a = cp(state["a"])
        self.qdd = cp(state["qdd"])
        self.lam = cp(state["lam"])
        self.mu = cp(state.get("mu"))
        self._cache = {key: _copy_kept(entry) for key, entry in state["cache"].items()}
        self._guess = {k: np.array(g, dtype=float) for k, g in state.get("guess", {}).items()}
        pivots = state.get("sparse_lu")
        self._sparse_lu = None if pivots is None else SparseLU.from_pivot_state(pivots)
        self._set_retry_state(state)
        self._set_control_state(state)

    #: what a step replaces (never writes into), with ``nsteps``: a checkpoint of a step
    #: keeps references to them (:meth:`_checkpoint`)
    _STEP_STATE = ("nsteps", "a", "qdd", "lam", "mu", "local_error", "_step_start", "_compiled",
                   "_sparse_lu")

    def _logged(self, t: float, y):
        """A :attr:`step_log` entry: ``(t [s], q, v, lam)`` at the end of a step."""
        return (t, np.array(y[0], dtype=float), np.array(y[1], dtype=float),
                np.array(self.lam, dtype=float))

    def _checkpoint(self):
        """The state before a step, for :class:`~mbdcore.integrators.base.StepHalving`:
        what :meth:`get_state` holds but the work counters, by reference (a step
        replaces these arrays, the kept matrices and guesses, and never writes into
        them; the dictionaries of kept matrices and guesses are copied), so a
        checkpoint costs no copy of the kept factors."""
        saved = {k: getattr(self, k) for k in self._STEP_STATE}
        saved["_cache"], saved["_guess"] = dict(self._cache), dict(self._guess)
        return saved

    def _roll_back(self, saved) -> None:
        """Back to a :meth:`_checkpoint` (the work counters keep the failed work)."""
        for k, val in saved.items():
            setattr(self, k, dict(val) if k in ("_cache", "_guess") else val)

    def stats(self) -> dict:
        """Counters since :meth:`reset` and their averages per step.

        ``nsteps`` steps; ``newton_iterations`` linear solves of Newton corrections;
        ``jacobian_evaluations`` builds of the Jacobian blocks (each a
        ``force_jacobians`` call and, with ``geometric_stiffness``, n finite
        differences of M and G); ``factorizations`` LU factorisations (Broyden:
        inversions) of the iteration matrix; ``failures`` solves that did not converge
        (those retried with a fresh matrix included); ``switch_rounds`` solves repeated
        with a new active set of switching force laws; ``step_retries`` failed steps
        retried as two halves and ``deepest_halving`` the deepest halving reached
        (module docstring, "Step halving"); with error control (docs/step_control.md)
        ``accepted_steps``, ``rejected_steps`` (local error estimate above the
        tolerance), ``newton_rejections`` (steps whose Newton iteration failed, tried
        again smaller), ``h_smallest``, ``h_largest`` [s]; ``iterations_per_step``,
        ``factorizations_per_step``, ``jacobian_evaluations_per_step`` (Bathe: two
        solves per step); with ``sparse_solver="pardiso"``, ``pardiso_analyses``:
        PARDISO's analyses (phase 11), one per pattern the Newton matrices took."""
        per = 1.0 / max(1, self.nsteps)
        return {"method": self.name, "iteration": self.iteration,
                "constraint_form": self.constraint_form, "sparse": self.sparse,
                "sparse_solver": self.sparse_solver,
                **({"pardiso_analyses": self.pardiso_analyses}
                   if self.sparse_solver == "pardiso" else {}),
                "nsteps": self.nsteps,
                "newton_iterations": self.newton_iterations,
                "jacobian_evaluations": self.jacobian_evaluations,
                "factorizations": self.factorizations,
                "failures": self.failures,
                "switch_rounds": self.switch_rounds,
                "line_search_cuts": self.line_search_cuts,
                "step_retries": self.step_retries,
                "deepest_halving": self.deepest_halving,
                "iterations_per_step": self.newton_iterations * per,
                "factorizations_per_step": self.factorizations * per,
                "jacobian_evaluations_per_step": self.jacobian_evaluations * per,
                **self.control_stats()}

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
            If Newton fails with a fresh iteration matrix at the step h and at every
            halving of it down to h / 2**max_halvings (module docstring, "Step
            halving"); the integrator is then as it was before the call.  With error
            control (``error_control`` set: ``adaptive=True`` of the schemes that
            have an embedded estimate) [t, t + h] is covered by error-controlled
            steps landing on t + h, and a step below ``h_min`` raises
            :class:`~mbdcore.integrators.step_control.StepSizeError`, a
            ConvergenceError (docs/step_control.md).
        """
        q = np.asarray(q, dtype=float)
        v = np.asarray(v, dtype=float)
        control = self.error_control
        if control is not None:
            def advance(ts, hs, y):
                q_new, v_new = self._step(problem, ts, y[0], y[1], hs)
                return (q_new, v_new), control.norm(self.local_error, y[0], q_new)
            return self._controlled_interval(advance, t, h, (q, v))
        return self._halving_step(lambda ts, hs, y: self._step(problem, ts, y[0], y[1], hs),
                                  t, h, (q, v))

    def _step(self, problem: ConstrainedProblem, t: float, q, v, h: float):
        """One step of the method from t to t + h [s] (no retry): :meth:`step`'s
        parameters and result."""
        raise NotImplementedError

    # -- the shared scaled Newton solve ------------------------------------------------
    def _solve(self, problem, t, h, q_ref, v_ref, a_ref, cv, ca, lam0, key):
        """Solve one implicit stage (see module docstring).

        Returns
        -------
        dq : ndarray, shape (n,)
            Position increment q - q_ref.
        w : ndarray, shape (n,)
            Its part generated by the velocity, ``dq - G^T mu`` (``dq`` at index 3):
            v = v_ref + c_v w, q'' = a_ref + c_a w.
        lam : ndarray, shape (m,)

        A problem with switching force laws (``has_switches``: a tension-only cable's
        taut points) has its active set frozen at the step's start for the Newton solve
        (a predictor extrapolates the accelerations, which are violent where a light
        cable snaps taut), so the forces are smooth within it; where the converged state has a
        different set the stage is solved again with that one, at most
        ``SWITCH_ROUNDS`` times (a primal-dual active-set iteration: Newton across the
        kink of a light, stiff cable cycles), then the last solution is kept.  A solve
        that fails with a set (a point frozen taut that the step compresses: a two-way
        cable buckling) is tried again with every point slack, from which the rounds
        add the taut ones.
        """
        if not getattr(problem, "has_switches", False):
            return self._solve_smooth(problem, t, h, q_ref, v_ref, a_ref, cv, ca, lam0, key)
        q_start, v_start = self._step_start or (q_ref, v_ref)
        problem.freeze_switches(t, q_start, v_start)
        all_slack = False
        try:
            for _ in range(SWITCH_ROUNDS):
                try:
                    dq, w, lam = self._solve_smooth(problem, t, h, q_ref, v_ref, a_ref, cv,
                                                    ca, lam0, key)
                except ConvergenceError:
                    if all_slack:
                        raise
                    self.switch_rounds += 1
                    problem.freeze_switches(t, q_start, v_start, slack=True)
                    all_slack = True
                    continue
                q, v = q_ref + dq, v_ref + cv * w
                if problem.switches_hold(t, q, v):
                    break
                self.switch_rounds += 1
                problem.freeze_switches(t, q, v)
        finally:
            problem.release_switches()
        return dq, w, lam

    def _solve_smooth(self, problem, t, h, q_ref, v_ref, a_ref, cv, ca, lam0, key):
        """:meth:`_solve` with the forces as they are (no active set to find)."""
        h = float(h)
        # A kept matrix may be the reason for a failure: retry once with a fresh one.
        retry = self.iteration != "newton" and key in self._cache
        attempts = (False, True) if retry else (True,)
        last = None
        for fresh_start in attempts:
            ok, dq, w, lam_s, mu, info = self._newton(
                problem, t, q_ref, v_ref, a_ref, cv, ca,
                np.asarray(lam0, dtype=float) / ca, key, h, fresh_start)
            if ok:
                self._guess[(key, h)] = np.concatenate([dq, mu])
                self.mu = mu
                return dq, w, lam_s * ca
            self.failures += 1
            self._cache.pop(key, None)
            last = info
        its, err, why = last
        res = self._residual_norm(problem, t, q_ref, v_ref, a_ref / ca, cv, ca, dq, lam_s, mu)
        raise ConvergenceError(
            f"{self.name}: Newton did not converge at t = {t:.9g} s (h = {h:.3g} s) after "
            f"{its} iterations; last residual {res:.3g} (max norm of the scaled "
            f"equations, m or rad), last increment {err:.3g} x tolerance ({why})",
            time=t, step=h, residual=res)

    def _newton(self, problem, t, q_ref, v_ref, a_ref, cv, ca, lam_s, key, h, fresh_start):
        n = q_ref.size
        ggl = self.ggl
        mode = self.iteration
        broyden = mode == "broyden"
        x_ref = a_ref / ca
        eps = np.finfo(float).eps
        guess = self._guess.get((key, h))
        dq, mu = np.zeros(n), None
        if guess is not None and guess.size >= n:
            dq, mu = guess[:n].copy(), guess[n:].copy()
        entry = None if (fresh_start or mode == "newton") else self._cache.get(key)
        # Broyden keeps the inverse of the scaled matrix for one h.  Modified Newton keeps
        # the unscaled blocks (any h) and the LU factors of the matrix they made with the
        # G of some earlier iterate, for entry["h"] only: c_v, c_a scale the matrix.
        inv = entry.get("inv") if broyden and entry and entry["h"] == h else None
        parts = None if broyden or entry is None else entry["parts"]
        lu = entry["lu"] if parts is not None and entry["h"] == h else None
        # Whether kept factors earn their keep: iterations the last solve with factors
        # made in it needed, and how many more steps to refactorise at before trying
        # to keep the factors again (doubled at every miss).
        its_fresh, wait, backoff = (2, 0, 1) if parts is None else (
            entry.get("its_fresh", 2), entry.get("wait", 0), entry.get("backoff", 1))
        refactored_late = late_build = False
        sparse = self.uses_sparse(problem)
        # Freshness of the factorised matrix in use: "kept" (factors of an earlier
        # iterate or step), "refactored" (kept blocks, G of an iterate of this solve),
        # "built" (blocks of an iterate of this solve).  Slow contraction climbs it.
        level = "kept"
        built = False            # Broyden: was the inverse built during this solve?
        nu_prev = theta = None
        searched = None          # the line search's residual at the new iterate
        r_prev = s_prev = None
        nu = math.inf
        fast = self._compiled_newton(problem) if mode == "modified" and not sparse else None
        if fast is not None:
            fast.begin(t, q_ref, v_ref, x_ref, cv, ca)

        def factors(q, v, x, G, parts, lu, level, nu_prev):
            """Factors of the matrix at this iterate: kept blocks with this G, else
            blocks built here (the iterate's q, v, x = q''/c_a, G)."""
            while True:
                if parts is None:
                    parts = self._parts(problem, t, q, v, x * ca, lam_s * ca, G)
                    lu, level = None, "built"
                if lu is None:
                    lu = self._factorize(self._assemble(self._scale(parts, cv, ca), G), "lu")
                    if level == "kept":
                        # The contraction estimate goes on across a new G (as when every
                        # iteration refactorised): the blocks, which set the rate, are
                        # the same.
                        level = "refactored"
                    elif mode != "newton":
                        nu_prev = None  # new blocks start a new contraction estimate
                if lu is not None or level == "built":
                    return parts, lu, level, nu_prev
                parts = None    # kept blocks made a singular matrix: build them here

        it = 0
        while it < self.max_iterations:
            if fast is not None:
                # the iterations in C up to the next one with a decision to make (the
                # same iterations as below; theta comes from C)
                if mu is None or mu.size != (fast.m if ggl else 0):
                    mu = np.zeros(fast.m if ggl else 0)
                if lu is None or parts is None:
                    # factors (or blocks) to make at this iterate: its terms from C,
                    # then the iteration from it in C (its residual evaluated again)
                    code = fast.iterate(None, dq, lam_s, mu, it, nu_prev, False, 0)[0]
                    if code == CompiledNewton.BAD_RESIDUAL:
                        return False, dq, fast.w, lam_s, mu, (it, math.nan,
                                                              "non-finite residual")
                    parts, lu, level, nu_prev = factors(q_ref + dq, fast.v.copy(),
                                                        x_ref + fast.w, fast.G.copy(),
                                                        parts, lu, level, nu_prev)
                    if lu is None:
                        return False, dq, fast.w, lam_s, mu, (it, math.nan,
                                                              "singular iteration matrix")
                code, it, done, nu, theta = fast.iterate(lu, dq, lam_s, mu, it, nu_prev,
                                                         level == "kept", its_fresh)
                self.newton_iterations += done
                G, w, v = fast.G, fast.w, fast.v
                if code == CompiledNewton.BAD_RESIDUAL:
                    return False, dq, w, lam_s, mu, (it, math.nan, "non-finite residual")
                if code == CompiledNewton.BAD_STEP:
                    return False, dq, w, lam_s, mu, (it, math.nan,
                                                     "non-finite Newton correction")
                if code == CompiledNewton.LIMIT:
                    break
                r = step = None
            else:
                if searched is not None:    # the line search evaluated it already
                    (q, G, mu, w, v, x, r), searched = searched, None
                else:
                    q, G, mu, w, v, x, r = self._residual(problem, t, q_ref, v_ref, x_ref,
                                                          cv, ca, dq, lam_s, mu, sparse)
                m = G.shape[0]
                if not finite(r):
                    return False, dq, w, lam_s, mu, (it, math.nan, "non-finite residual")
                if broyden:
                    if inv is not None and s_prev is not None:
                        # Good Broyden on the inverse (Sherman-Morrison): H+ y = s.
                        y = r - r_prev
                        Hy = inv @ y
                        den = float(s_prev @ Hy)
                        if den != 0.0 and math.isfinite(den):
                            inv = inv + np.outer(s_prev - Hy, s_prev @ inv) / den
                    if inv is None:
                        blocks = self._blocks(problem, t, q, v, x, lam_s, cv, ca, G)
                        inv = self._factorize(self._assemble(blocks, G), "inv")
                        built = True
                        nu_prev = None  # a new matrix starts a new contraction estimate
                    if inv is None:
                        return False, dq, w, lam_s, mu, (it, math.nan, "singular iteration matrix")
                    step = -(inv @ r)
                else:
                    if mode == "newton":
                        parts = None
                    parts, lu, level, nu_prev = factors(q, v, x, G, parts, lu, level, nu_prev)
                    if lu is None:
                        return False, dq, w, lam_s, mu, (it, math.nan,
                                                         "singular iteration matrix")
                    step = -(lu.solve(r) if sparse else dgetrs(lu[0], lu[1], r)[0])
                self.newton_iterations += 1
                if not finite(step):
                    return False, dq, w, lam_s, mu, (it, math.nan, "non-finite Newton correction")
                damped = False
                if self.line_search:
                    step, searched = self._line_search(problem, t, q_ref, v_ref, x_ref, cv,
                                                       ca, dq, lam_s, mu, step, r, sparse)
                    damped = self._last_damping < 1.0
                dq = dq + step[:n]
                lam_s = lam_s + step[n:n + m]
                d_w = step[:n]
                if ggl:
                    mu = mu + step[n + m:]
                    d_w = d_w - G.T @ step[n + m:]
                # Increment in units of the tolerance: positions against tol |q|, velocities
                # (c_v times the w increment) against tol |v|, floored at the rounding of q.
                q_scale = max(1.0, max_abs(q))
                tol_q = self.tol * q_scale
                tol_w = max(self.tol * max(1.0, max_abs(v)) / cv,
                            16.0 * eps * q_scale)
                nu = max(max_abs(step[:n]) / tol_q, max_abs(d_w) / tol_w)
                if not math.isfinite(nu):
                    return False, dq, w, lam_s, mu, (it, nu, "non-finite Newton correction")
                theta = None if nu_prev is None or nu_prev == 0.0 else nu / nu_prev
                if damped:
                    # a shortened step says nothing of the contraction or of the
                    # remaining error: neither tested, the estimate starts again
                    r_prev, s_prev, nu_prev = r, step, None
                    it += 1
                    continue
            slow = theta is not None and theta > self.theta_refresh
            # Rate-based test (Hairer and Wanner, IV.8): with contraction theta the
            # remaining error is at most theta/(1 - theta) times the last increment.
            # An increment of a tenth of the tolerance is accepted outright (the first
            # iteration, and the rounding floor where theta is meaningless).
            if nu <= 0.1 or (theta is not None and theta < 1.0
                             and theta / (1.0 - theta) * nu <= 1.0):
                if broyden:
                    self._cache[key] = {"h": h, "inv": inv}
                elif mode == "modified":
                    if slow and level == "refactored":
                        # a fresh G did not restore contraction: build at the next step
                        self._cache.pop(key, None)
                    else:
                        # Index 3: the weakly unstable (-1)^n multiplier mode (rho_inf
                        # near 1) amplifies the larger multiplier error kept factors
                        # leave (pendulum, rho_inf = 1: 0.19 N against 0.01 N in 3 s),
                        # so factors are kept within a step only.
                        keep = not slow and ggl
                        if refactored_late or (level == "kept" and it + 1 > its_fresh):
                            # The kept factors cost iterations a fresh G would have
                            # saved (an iteration, residual included, costs several
                            # factorisations of these matrices): refactorise at every
                            # step for a while, twice as long at each such miss.
                            keep, backoff = False, min(2 * backoff, 256)
                            wait = backoff
                        elif level == "kept":
                            backoff = 1     # they did as well as fresh ones: go on
                        else:
                            if not late_build:
                                its_fresh = it + 1
                            if wait > 0:
                                keep, wait = False, wait - 1
                        # slow: refactorise with the G of the next step before its first
                        # iteration (blocks kept)
                        self._cache[key] = {"h": h, "parts": parts, "lu": lu if keep else None,
                                            "its_fresh": its_fresh, "wait": wait,
                                            "backoff": backoff}
                w = dq - G.T @ mu if ggl else dq
                return True, dq, w, lam_s, mu, (it + 1, nu, "")
            if broyden:
                if theta is not None and theta >= 1.0:
                    inv = None      # the updated inverse lost contraction: rebuild
            elif (theta is not None and theta >= 1.0) or (mode == "modified" and slow):
                if level == "built":
                    # an increment within the tolerance that did not shrink is not a
                    # divergence: the kink of a piecewise-smooth force (a slack cable
                    # going taut at the end of a step) or rounding; iterate on
                    if theta >= 1.0 and nu > 1.0:
                        return False, dq, w, lam_s, mu, (it + 1, nu, "diverging")
                elif level == "refactored":
                    parts = None    # the kept blocks are too stale: build them here
                    late_build = True
                else:
                    # refactorise with the current G (kept blocks)
                    lu, refactored_late = None, True
            elif level == "kept" and it + 1 >= its_fresh:
                # factors of an earlier step that need more iterations than fresh ones
                # took: refactorise with this G
                lu, refactored_late = None, True
            r_prev, s_prev = r, step
            nu_prev = nu
            it += 1
        return False, dq, w, lam_s, mu, (self.max_iterations, nu, "iteration limit")
