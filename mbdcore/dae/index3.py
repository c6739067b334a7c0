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

Two families share one Newton solver (:meth:`Index3Integrator._solve`):

``generalized-alpha`` / ``hht`` / ``newmark``
    the generalized-alpha method in the Arnold-Bruls form (acceleration-like variable
    ``a``), parameters alpha_m, alpha_f, beta, gamma as data.  HHT and Newmark are the
    same scheme with other parameters.
``bathe`` / ``bathe-broyden``
    Bathe's composite scheme (Bathe & Baig 2005; docs/benchmarks.md §8.4): trapezoidal
    rule on [t, t + gamma h], then the three-point backward Euler formula on [t, t + h];
    each sub-step by Newton or by Broyden's quasi-Newton updates.

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

Iterations in C.  A problem whose residual terms are all compiled
(:meth:`ConstrainedProblem.compiled_terms <mbdcore.dae.problem.ConstrainedProblem.compiled_terms>`:
constant M, constraint rows and forces as C functions; a planar or spatial ``System``
of rigid bodies, bars and ANCF beams and cables with joints of closed form, see
:class:`~mbdcore.multibody.assembly.SystemTerms`) is iterated by ``native/newton.c`` on
the dense path of modified Newton: the same iterations, residual, correction and
convergence test as the Python loop, with the kept factors, returning to the loop at
the first iteration after which it has a decision to make (converged, slow or no
contraction, kept factors past the fresh ones' count, the iteration limit, a
non-finite residual or correction), and giving the residual's terms where factors are
made; the problem's compiled blocks (``CompiledTerms.jacobian``: C_t, K_t with the
exact constraint curvature terms, d(G v)/dq) replace the Python build of
:meth:`Index3Integrator._parts`.  The Python loop keeps every decision about the matrix
and stays the reference (``System.compiled_residual = False``); both give the same
Newton path to rounding (``tests/test_mbdcore/multibody/test_compiled_newton.py``).  An
iteration of the 8-element hub-beam then costs a few microseconds instead of about 40,
and a build of its blocks a sixth of the Python build's time.  On the sparse path the
iterations stay in Python, but the scaled residual (with G as CSR) and the Newton
matrix's blocks (C_t, K_t, Hg as CSR; M constant) come from the same compiled terms,
one C call each over patterns fixed per topology (``CompiledTerms.sparse_residual``,
``sparse_jacobian``, ``sparse_mass``), instead of a Python call per body and joint.
"""
from __future__ import annotations

import ctypes
import functools
import math
from pathlib import Path

import numpy as np
import scipy.sparse
from scipy.linalg.lapack import dgetrf, dgetrs

from mbdcore.dae.index1 import (
    SingularConfigurationError,
    augmented_accelerations,
    sparse_constraint_terms,
    sparse_lu,
    sparse_mass_matrix,
)
from mbdcore.dae.problem import CompiledTerms, ConstrainedProblem
from mbdcore.dae.sparse_solver import (
    PatternError,
    SingularMatrixError,
    SparseLU,
    pardiso_factors,
    require_pardiso,
)
from mbdcore.integrators.base import MAX_HALVINGS, ConvergenceError, StepHalving
from mbdcore.cbuild import TABLE_LAYOUT_HEADER
from mbdcore.native import TableLayout, kernel_library, table_layout

__all__ = ["ITERATIONS", "CONSTRAINT_FORMS", "SPARSE_SOLVERS", "SPARSE_AUTO_SIZE", "ConvergenceError",
           "consistent_accelerations", "Index3Integrator", "GeneralizedAlphaScheme",
           "GeneralizedAlpha", "HHT", "Newmark", "Bathe", "SWITCH_ROUNDS", "newton_layouts",
           "newton_library", "NEWTON_C_SOURCE"]

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


def consistent_accelerations(problem: ConstrainedProblem, t: float, q, v,
                             sparse: bool = False):
    """Accelerations and multipliers from ``[[M, G^T], [G, 0]] [q''; lam] = [F; gamma]``.

    Parameters
    ----------
    problem : ConstrainedProblem
    t : float
        Time [s].
    q, v : array_like, shape (n,)
        Consistent positions [m, rad] and velocities [m/s, rad/s].
    sparse : bool
        Assemble the matrix sparse and factor it with SuperLU.

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
    if sparse:
        try:
            qdd, lam = augmented_accelerations(problem, t, q, v, sparse=True)
        except SingularConfigurationError as exc:
            raise ConvergenceError(f"initial accelerations: {exc}") from exc
        if not (np.all(np.isfinite(qdd)) and np.all(np.isfinite(lam))):
            raise ConvergenceError(f"initial accelerations are not finite at t = {t:.6g} s")
        return qdd, lam
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


def _finite(x) -> bool:
    """Every entry of the array finite (a sum is NaN or infinite if one is; cheaper than
    np.isfinite(x).all() on the small arrays of a Newton iteration)."""
    return math.isfinite(float(x.sum())) if x.size < 4096 else bool(np.isfinite(x).all())


def _max_abs(x) -> float:
    """max |x_i| (0 for an empty array)."""
    return float(np.abs(x).max()) if x.size else 0.0


def _constraint_parts(problem, t, q, sparse=False):
    """(g, G, g_t) at (q, t), in one pass where the problem offers it (G as CSR when
    ``sparse``)."""
    if sparse:
        return sparse_constraint_terms(problem, t, q, np.zeros(q.size))[:3]
    n = q.size
    if getattr(problem, "m", 0) == 0:
        return np.zeros(0), np.zeros((0, n)), np.zeros(0)
    terms = getattr(problem, "constraint_terms", None)
    if terms is not None:
        g, G, gt, _ = terms(t, q, np.zeros(n))
    else:
        g, G, gt = (problem.constraints(t, q), problem.constraint_jacobian(t, q),
                    problem.constraint_rate(t, q))
    G = np.asarray(G, dtype=float).reshape(-1, n)
    m = G.shape[0]
    return (np.asarray(g, dtype=float).reshape(m), G,
            np.asarray(gt, dtype=float).reshape(m))


def _sparse_geometric_terms(problem, t, q, v, x, lam):
    """d(M(q) x + G(q)^T lam)/dq and d(G(q) v)/dq (CSR) by forward differences.

    A problem may provide ``geometric_stiffness_sparse`` (System: only the coordinates
    the joints and configuration-dependent masses read).  Otherwise every coordinate
    is perturbed in place, with sparse M and G (no dense matrix per column)."""
    get = getattr(problem, "geometric_stiffness_sparse", None)
    if get is not None:
        return get(t, q, v, x, lam)
    n = q.size
    M0 = sparse_mass_matrix(problem, q)
    G0 = _constraint_parts(problem, t, q, True)[1]
    w0 = M0 @ x + G0.T @ lam
    Gv0 = G0 @ v
    qp = q.copy()
    cols_k, cols_h = [], []
    for j in range(n):
        e = math.sqrt(np.finfo(float).eps) * max(1.0, abs(q[j]))
        qp[j] = q[j] + e
        Gj = _constraint_parts(problem, t, qp, True)[1]
        cols_k.append(scipy.sparse.csc_matrix(
            ((sparse_mass_matrix(problem, qp) @ x + Gj.T @ lam - w0) / e)[:, None]))
        cols_h.append(scipy.sparse.csc_matrix(((Gj @ v - Gv0) / e)[:, None]))
        qp[j] = q[j]
    return (scipy.sparse.hstack(cols_k, format="csr"),
            scipy.sparse.hstack(cols_h, format="csr"))


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



NEWTON_C_SOURCE = Path(__file__).resolve().parent / "native" / "newton.c"
#: the loader of native/newton.c's extension module (its Newton iterations and the whole
#: compiled generalized-alpha step, mbdcore.dae.compiled_step)
newton_library = kernel_library("mbdcore.dae._newton", NEWTON_C_SOURCE, (TABLE_LAYOUT_HEADER,))


@functools.cache
def newton_layouts() -> tuple[TableLayout, TableLayout]:
    """The layouts of ``newton_t`` and ``newton_state_t`` of native/newton.c, declared
    once there (``NEWTON_LAYOUT``, ``NEWTON_STATE_LAYOUT``): their ctypes classes are
    made from the same lists."""
    return (table_layout(newton_library, "NEWTON_LAYOUT"),
            table_layout(newton_library, "NEWTON_STATE_LAYOUT"))


#: return codes of newton_iterate
_CONVERGED, _EVENT, _LIMIT, _BAD_RESIDUAL, _BAD_STEP, _RESIDUAL = range(6)


class _CompiledNewton:
    """Newton iterations with kept LU factors in C (native/newton.c) for a problem
    whose residual terms are compiled (:class:`~mbdcore.dae.problem.CompiledTerms`):
    the same iterations as :meth:`Index3Integrator._newton`'s Python loop, which keeps
    every decision about the matrix; :meth:`iterate` returns to it at the first
    iteration after which it has one to make."""

    def __init__(self, terms: CompiledTerms, integrator: "Index3Integrator"):
        n, m = terms.n, terms.m
        k = 2 * m if integrator.ggl else m
        self.terms, self.n, self.m = terms, n, m
        self.mass = np.ascontiguousarray(terms.mass_matrix(), dtype=float)
        self.work = np.zeros(5 * n + m * n + 3 * m + 2 * (n + k))
        self.G = np.zeros((m, n))
        self.w, self.v = np.zeros(n), np.zeros(n)
        problem_layout, state_layout = newton_layouts()
        st = problem_layout.ctypes_class()()
        st.n, st.m, st.ggl = n, m, int(integrator.ggl)
        st.constraints, st.forces, st.terms_ctx = terms.constraints, terms.forces, \
            terms.context
        st.M, st.work = self.mass.ctypes.data, self.work.ctypes.data
        st.tol, st.theta_refresh = integrator.tol, integrator.theta_refresh
        st.modified = int(integrator.iteration == "modified")
        st.max_iterations = integrator.max_iterations
        self.struct, self.state = st, state_layout.ctypes_class()()
        self._kernel = newton_library().newton_iterate
        self._args = (ctypes.addressof(st), ctypes.addressof(self.state))
        # arrays go to the binding as buffers (checked in C): cheaper than .ctypes.data
        self._out = (self.G, self.w, self.v)
        self._lu = None

    def begin(self, t, q_ref, v_ref, x_ref, cv, ca):
        """Before the iterations of a solve at time t [s] from (q_ref, v_ref, x_ref)
        with the scaling c_v [1/s], c_a [1/s^2]."""
        self.terms.prepare(t)
        st = self.struct
        self._refs = tuple(np.ascontiguousarray(a, dtype=float) for a in (q_ref, v_ref, x_ref))
        st.q_ref, st.v_ref, st.x_ref = (a.ctypes.data for a in self._refs)
        st.cv, st.ca = cv, ca

    def iterate(self, lu, dq, lam_s, mu, it, nu_prev, kept, its_fresh):
        """Iterations from iteration ``it`` with the factors ``lu`` (getrf's, a pair)
        until one the Python loop must see; dq, lam_s, mu updated in place.  Returns
        (code, index of the last iteration, iterations made, nu, theta or None).
        ``lu`` None: only the residual's terms at the iterate (``G``, ``w``, ``v``; code
        ``_RESIDUAL`` or ``_BAD_RESIDUAL``), to build factors there."""
        st, state = self.struct, self.state
        if lu is not self._lu:
            self._lu = lu
            st.lu, st.piv = (None, None) if lu is None else (lu[0].ctypes.data,
                                                             lu[1].ctypes.data)
        st.kept, st.its_fresh = kept, its_fresh
        state.it, state.done = it, 0
        state.nu_prev = -1.0 if nu_prev is None else nu_prev
        code = self._kernel(*self._args, dq, lam_s, mu, *self._out)
        theta = state.theta if state.theta >= 0.0 else None
        return code, state.it, state.done, state.nu, theta


class Index3Integrator(StepHalving):
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
        ``parallel``; ImportError naming it when missing), a fresh factorisation each
        time (:func:`~mbdcore.dae.sparse_solver.pardiso_factors`).
    max_halvings : int
        How many times a step whose Newton solve fails is halved before
        :class:`ConvergenceError` is raised (steps down to h / 2**max_halvings; module
        docstring, "Step halving"); 0: no retry.

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
                 sparse_solver: str = "native"):
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
                     "failures", "switch_rounds")

    # -- history ---------------------------------------------------------------------
    def reset(self) -> None:
        """Forget the history and the counters (start of a new simulation)."""
        self._clear_retries()
        self.nsteps = 0
        self.newton_iterations = 0
        self.jacobian_evaluations = 0
        self.factorizations = 0
        self.failures = 0
        self.switch_rounds = 0
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
        # (problem, its _CompiledNewton or None, its CompiledTerms or None)
        self._compiled = None
        # The last sparse factors made (SparseLU): its ordering, pivot order and L, U
        # patterns serve the next factorisation of a matrix of that pattern.
        self._sparse_lu = None
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
                "switch_rounds": self.switch_rounds, "a": cp(self.a), "qdd": cp(self.qdd),
                "lam": cp(self.lam), "mu": cp(self.mu), "cache": cache,
                "guess": {k: g.copy() for k, g in self._guess.items()},
                # what makes the last sparse factors' pivot order again (plain arrays)
                "sparse_lu": None if self._sparse_lu is None else
                self._sparse_lu.pivot_state(), **self._retry_state()}

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
        self.a = cp(state["a"])
        self.qdd = cp(state["qdd"])
        self.lam = cp(state["lam"])
        self.mu = cp(state.get("mu"))
        self._cache = {key: _copy_kept(entry) for key, entry in state["cache"].items()}
        self._guess = {k: np.array(g, dtype=float) for k, g in state.get("guess", {}).items()}
        pivots = state.get("sparse_lu")
        self._sparse_lu = None if pivots is None else SparseLU.from_pivot_state(pivots)
        self._set_retry_state(state)

    #: what a step replaces (never writes into), with ``nsteps``: a checkpoint of a step
    #: keeps references to them (:meth:`_checkpoint`)
    _STEP_STATE = ("nsteps", "a", "qdd", "lam", "mu", "_step_start", "_compiled",
                   "_sparse_lu")

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
        (module docstring, "Step halving"); ``iterations_per_step``,
        ``factorizations_per_step``, ``jacobian_evaluations_per_step`` (Bathe: two
        solves per step)."""
        per = 1.0 / max(1, self.nsteps)
        return {"method": self.name, "iteration": self.iteration,
                "constraint_form": self.constraint_form, "sparse": self.sparse,
                "sparse_solver": self.sparse_solver,
                "nsteps": self.nsteps,
                "newton_iterations": self.newton_iterations,
                "jacobian_evaluations": self.jacobian_evaluations,
                "factorizations": self.factorizations,
                "failures": self.failures,
                "switch_rounds": self.switch_rounds,
                "step_retries": self.step_retries,
                "deepest_halving": self.deepest_halving,
                "iterations_per_step": self.newton_iterations * per,
                "factorizations_per_step": self.factorizations * per,
                "jacobian_evaluations_per_step": self.jacobian_evaluations * per}

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
            halving"); the integrator is then as it was before the call.
        """
        q = np.asarray(q, dtype=float)
        v = np.asarray(v, dtype=float)
        return self._halving_step(lambda ts, hs, y: self._step(problem, ts, y[0], y[1], hs),
                                  t, h, (q, v))

    def _step(self, problem: ConstrainedProblem, t: float, q, v, h: float):
        """One step of the method from t to t + h [s] (no retry): :meth:`step`'s
        parameters and result."""
        raise NotImplementedError

    # -- the shared scaled Newton solve ------------------------------------------------
    def _blocks(self, problem, t, q, v, x_acc, lam_s, cv, ca, G):
        """The expensive part of the scaled iteration matrix (one Jacobian evaluation).

        Returns ``(S, D, H)``: S = dr1/dq = M + (c_v C_t + K_t)/c_a, D = dr1/dw =
        M + (c_v/c_a) C_t, H = d(G v)/dq / c_v.  ``x_acc = q''/c_a`` and ``lam_s =
        lambda/c_a`` are the scaled acceleration and multiplier.
        """
        return self._scale(self._parts(problem, t, q, v, x_acc * ca, lam_s * ca, G), cv, ca)

    def _parts(self, problem, t, q, v, qdd, lam, G):
        """The Jacobian blocks before scaling (one Jacobian evaluation, counted).

        Returns ``(M, C_t, K_t, Hg)``: M(q); C_t = -dF/dv; K_t = -dF/dq +
        d(M(q) q'' + G(q)^T lambda)/dq at fixed q'' [m/s^2, rad/s^2] and lambda;
        Hg = d(G v)/dq (zero without ``geometric_stiffness``).  They do not depend on the
        step size, so kept parts serve any h (:meth:`_scale`).
        """
        self.jacobian_evaluations += 1
        if scipy.sparse.issparse(G):
            return self._parts_sparse(problem, t, q, v, qdd, lam, G)
        fast = self._compiled[1] if self._compiled and self._compiled[0] is problem else None
        if fast is not None and fast.terms.jacobian is not None:
            # the compiled blocks (constant M, so no d(M q'')/dq)
            C, K, Hg = fast.terms.jacobian(q, v, lam, self.geometric_stiffness)
            return fast.mass, C, K, Hg
        n = q.size
        m = G.shape[0]
        M = np.atleast_2d(problem.mass_matrix(q))
        dFdq, dFdv = problem.force_jacobians(t, q, v)
        C = -np.asarray(dFdv, dtype=float)
        K = -np.asarray(dFdq, dtype=float)
        Hg = np.zeros((m, n))
        if self.geometric_stiffness and hasattr(problem, "geometric_stiffness_sparse"):
            # the same differences, visiting only the coordinates the joints and the
            # configuration-dependent masses read (a System): a few constraint
            # evaluations per Jacobian instead of one per coordinate
            Kg, Hg = problem.geometric_stiffness_sparse(t, q, v, qdd, lam, dense=True)
            K += Kg
        elif self.geometric_stiffness:
            # d/dq [M(q) q'' + G(q)^T lam] at fixed q'', lam: the inertia and constraint
            # curvature terms a constant-matrix Newton would miss.
            w0 = M @ qdd + G.T @ lam
            Gv0 = G @ v
            for j in range(n):
                e = math.sqrt(np.finfo(float).eps) * max(1.0, abs(q[j]))
                qj = q.copy()
                qj[j] += e
                Mj = np.atleast_2d(problem.mass_matrix(qj))
                Gj = _constraint_parts(problem, t, qj)[1]
                K[:, j] += (Mj @ qdd + Gj.T @ lam - w0) / e
                Hg[:, j] = (Gj @ v - Gv0) / e
        return M, C, K, Hg

    def _parts_sparse(self, problem, t, q, v, qdd, lam, G):
        """(M, C_t, K_t, Hg) of :meth:`_parts` as CSR matrices, without an n x n array:
        from the compiled terms where the problem has them (constant M), else in
        Python."""
        terms = self._compiled_sparse(problem)
        if terms is not None and terms.sparse_jacobian is not None:
            C, K, Hg = terms.sparse_jacobian(q, v, lam, self.geometric_stiffness)
            return terms.sparse_mass(), C, K, Hg
        M = sparse_mass_matrix(problem, q)
        get = getattr(problem, "force_jacobians_sparse", None)
        if get is not None:
            dFdq, dFdv = get(t, q, v)
        else:
            dFdq, dFdv = (scipy.sparse.csr_matrix(j) for j in problem.force_jacobians(t, q, v))
        C, K = (-dFdv).tocsr(), (-dFdq).tocsr()
        if self.geometric_stiffness:
            Kg, Hg = _sparse_geometric_terms(problem, t, q, v, qdd, lam)
            return M.tocsr(), C, (K + Kg).tocsr(), Hg.tocsr()
        return M.tocsr(), C, K, scipy.sparse.csr_matrix(G.shape)

    @staticmethod
    def _scale(parts, cv, ca):
        """(S, D, H) for the scaling c_v [1/s], c_a [1/s^2] of a step size from the
        unscaled parts: S = M + (c_v C_t + K_t)/c_a, D = M + (c_v/c_a) C_t, H = Hg/c_v."""
        M, C, K, Hg = parts
        D = M + (cv / ca) * C
        S = D + (1.0 / ca) * K
        if scipy.sparse.issparse(M):
            return S.tocsr(), D.tocsr(), (Hg / cv).tocsr()
        return S, D, Hg / cv

    def _assemble(self, blocks, G):
        """Scaled iteration matrix from the kept blocks and the current G::

            index 3:  [[S, G^T], [G, 0]]                  unknowns (dq, lam~)
            GGL:      [[S, G^T, -D G^T], [G, 0, 0], [G + H, 0, -G G^T]]
                                                           unknowns (dq, lam~, mu)
        """
        S, D, H = blocks
        n, m = S.shape[0], G.shape[0]
        if scipy.sparse.issparse(G):
            if m == 0:
                return S.tocsc()
            GT = G.T.tocsr()
            if not self.ggl:
                return scipy.sparse.bmat([[S, GT], [G, None]], format="csc")
            return scipy.sparse.bmat([[S, GT, -(D @ GT)], [G, None, None],
                                      [G + H, None, -(G @ GT)]], format="csc")
        k = 2 * m if self.ggl else m
        J = np.zeros((n + k, n + k))
        J[:n, :n] = S
        J[:n, n:n + m] = G.T
        J[n:n + m, :n] = G
        if self.ggl:
            J[:n, n + m:] = -D @ G.T
            J[n + m:, :n] = G + H
            J[n + m:, n + m:] = -G @ G.T
        return J

    def _iteration_matrix(self, problem, t, q, v, x_acc, lam_s, cv, ca):
        """Scaled iteration matrix at (q, v, x_acc, lam_s), all blocks fresh."""
        G = _constraint_parts(problem, t, q, self.uses_sparse(problem))[1]
        return self._assemble(self._blocks(problem, t, q, v, x_acc, lam_s, cv, ca, G), G)

    @staticmethod
    def _factor(J, kind):
        """LU factors or inverse of J; None if J is singular or not finite."""
        if scipy.sparse.issparse(J):
            return sparse_lu(J)          # modified and full Newton only
        if not _finite(J):
            return None
        if kind == "lu":
            # LAPACK's getrf/getrs directly (what scipy.linalg.lu_factor/lu_solve call,
            # without their per-call checks and warnings: a Newton iteration of a small
            # system is a few tens of microseconds); a singular matrix shows in the
            # pivots checked below
            lu, piv, _ = dgetrf(J)
            d = np.abs(np.diag(lu))
            if d.size and (not _finite(d) or d.min() <= 1e-14 * d.max()):
                return None
            return (lu, piv)
        try:
            H = np.linalg.inv(J)
        except np.linalg.LinAlgError:
            return None
        return H if np.all(np.isfinite(H)) else None

    def _factorize(self, J, kind):
        """:meth:`_factor`, counted in ``factorizations``."""
        self.factorizations += 1
        if self.sparse_solver == "native" and scipy.sparse.issparse(J):
            return self._native_factor(J)
        if self.sparse_solver == "pardiso" and scipy.sparse.issparse(J):
            return pardiso_factors(J)
        return self._factor(J, kind)

    def _native_factor(self, J):
        """Factors of the sparse matrix J (:class:`SparseLU`), None if it is singular or
        not finite.  J is refactored on the last factors' pivot order and patterns
        when it has their pattern (or part of it: an entry that is zero now is dropped
        by scipy's sums); a new pattern is analysed once, as the union with the last
        one, so that a pattern flickering between two stays analysed."""
        J = scipy.sparse.csc_matrix(J)
        last = self._sparse_lu
        if last is not None and last.n != J.shape[0]:
            last = None
        try:
            try:
                factors = SparseLU(J).factor(J) if last is None else last.refactored(J)
            except PatternError:
                pattern = last.pattern + scipy.sparse.csc_matrix(
                    (np.ones(J.nnz), J.indices, J.indptr), shape=J.shape)
                factors = SparseLU(pattern, room=last.room).factor(J)
        except SingularMatrixError:
            return None
        self._sparse_lu = factors
        return factors

    def _compiled_newton(self, problem):
        """The compiled iterations for ``problem`` (None if its terms are not compiled
        or it is solved sparse), made once per start: the terms are the parts as they
        are at that time."""
        return self._compiled_parts(problem)[1]

    def _compiled_sparse(self, problem):
        """The compiled terms of ``problem`` for the sparse path (None if it has none):
        the residual's terms and the Newton matrix's blocks as CSR matrices over
        patterns fixed per topology, each one C call."""
        terms = self._compiled_parts(problem)[2]
        return terms if terms is not None and terms.sparse_residual is not None else None

    def _compiled_parts(self, problem):
        """(problem, its _CompiledNewton or None, its CompiledTerms or None), made once
        per start."""
        if self._compiled is None or self._compiled[0] is not problem:
            get = getattr(problem, "compiled_terms", None)
            terms = None if get is None else get()
            dense = terms is not None and not self.uses_sparse(problem)
            self._compiled = (problem, _CompiledNewton(terms, self) if dense else None, terms)
        return self._compiled

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

    def _residual(self, problem, t, q_ref, v_ref, x_ref, cv, ca, dq, lam_s, mu, sparse):
        """The scaled Newton residual at the iterate (dq, lam~, mu) (module docstring):
        returns (q, G, mu, w, v, x, r) with x = q''/c_a (mu zeros of the right size if
        it had another)."""
        ggl = self.ggl
        terms = self._compiled_sparse(problem) if sparse else None
        if terms is not None:
            # the whole residual in one C call (the same equations as below)
            if mu is None or mu.size != (terms.m if ggl else 0):
                mu = np.zeros(terms.m if ggl else 0)
            terms.prepare(t)
            q, G, w, v, x, r = terms.sparse_residual(q_ref, v_ref, x_ref, dq, lam_s, mu,
                                                     cv, ca, ggl)
            return q, G, mu, w, v, x, r
        q = q_ref + dq
        g, G, gt = _constraint_parts(problem, t, q, sparse)
        m = g.size
        if mu is None or mu.size != (m if ggl else 0):
            mu = np.zeros(m if ggl else 0)
        w = dq - G.T @ mu if ggl else dq
        v = v_ref + cv * w
        x = x_ref + w        # q'' / c_a
        M = sparse_mass_matrix(problem, q) if sparse else np.atleast_2d(problem.mass_matrix(q))
        F = np.asarray(problem.forces(t, q, v), dtype=float)
        parts_r = [M @ x + G.T @ lam_s - F / ca, g]
        if ggl:
            parts_r.append((G @ v + gt) / cv)
        return q, G, mu, w, v, x, np.concatenate(parts_r)

    def _residual_norm(self, problem, t, q_ref, v_ref, x_ref, cv, ca, dq, lam_s, mu):
        """max |r| of :meth:`_residual` at a failed solve's last iterate [m, rad] (nan if
        it cannot be evaluated there: the failure's cause may be that it is not
        finite)."""
        try:
            with np.errstate(all="ignore"):
                r = self._residual(problem, t, q_ref, v_ref, x_ref, cv, ca, dq, lam_s, mu,
                                   self.uses_sparse(problem))[-1]
        except (ArithmeticError, ValueError, np.linalg.LinAlgError):
            return math.nan
        return _max_abs(r) if _finite(r) else math.nan

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
                    if code == _BAD_RESIDUAL:
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
                if code == _BAD_RESIDUAL:
                    return False, dq, w, lam_s, mu, (it, math.nan, "non-finite residual")
                if code == _BAD_STEP:
                    return False, dq, w, lam_s, mu, (it, math.nan,
                                                     "non-finite Newton correction")
                if code == _LIMIT:
                    break
                r = step = None
            else:
                q, G, mu, w, v, x, r = self._residual(problem, t, q_ref, v_ref, x_ref, cv, ca,
                                                      dq, lam_s, mu, sparse)
                m = G.shape[0]
                if not _finite(r):
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
                if not _finite(step):
                    return False, dq, w, lam_s, mu, (it, math.nan, "non-finite Newton correction")
                dq = dq + step[:n]
                lam_s = lam_s + step[n:n + m]
                d_w = step[:n]
                if ggl:
                    mu = mu + step[n + m:]
                    d_w = d_w - G.T @ step[n + m:]
                # Increment in units of the tolerance: positions against tol |q|, velocities
                # (c_v times the w increment) against tol |v|, floored at the rounding of q.
                q_scale = max(1.0, _max_abs(q))
                tol_q = self.tol * q_scale
                tol_w = max(self.tol * max(1.0, _max_abs(v)) / cv,
                            16.0 * eps * q_scale)
                nu = max(_max_abs(step[:n]) / tol_q, _max_abs(d_w) / tol_w)
                if not math.isfinite(nu):
                    return False, dq, w, lam_s, mu, (it, nu, "non-finite Newton correction")
                theta = None if nu_prev is None or nu_prev == 0.0 else nu / nu_prev
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
