"""Index-1 formulation of the constrained equations of motion, projections and
consistent initial conditions.

Index-1 with Baumgarte stabilisation and projections (Baumgarte 1972; docs/benchmarks.md §8.1)
----------------------------------------------------------------------------------------------
The constraints differentiated twice, ``G q'' = gamma``, are solved together with the
dynamics in the augmented system

    [ M   G^T ] [ q''    ]   [ F                               ]
    [ G    0  ] [ lambda ] = [ gamma - 2 alpha g' - beta^2 g   ]

(g' = G q' + g_t).  Baumgarte's terms (alpha = beta for critical damping, 5..50 1/s,
docs/benchmarks.md §8.1) pull the drift back; after every step the minimum-norm
projections of docs/benchmarks.md §8.1 put the state back on the constraint manifold:

    position  dq  = -G^T (G G^T)^-1 g(q, t)          (iterated until |g| < tol)
    velocity  dq' = -G^T (G G^T)^-1 (G q' + g_t)

The first-order system x = (q, q') is then integrated by any method of
:mod:`mbdcore.integrators` (Gill, Treanor, RK4, BDF, scipy's adaptive solvers).

Index-3 (docs/benchmarks.md §8.2, §8.4) is solved by the implicit integrators of
:mod:`mbdcore.dae.index3` (generalized-alpha, HHT, Newmark, Bathe) with Newton iterations
on the scaled iteration matrix.  By default they use the stabilised index-2 (GGL) form
of the same DAE (position and velocity constraints both enforced, q' = v + G^T mu),
which removes the weak instability of rho_inf = 1 on the plain index-3 form; pass
``constraint_form="index3"`` for the plain form.

Errors are explicit: an inconsistent initial condition that cannot be assembled raises
:class:`AssemblyError`, a singular constraint Jacobian :class:`SingularConfigurationError`
(both name the time and the constraints involved).
"""
from __future__ import annotations

import numpy as np
import scipy.sparse
from scipy.sparse.linalg import splu

from mbdcore.dae.problem import ConstrainedProblem
from mbdcore.integrators.base import ConvergenceError

__all__ = ["consistent_accelerations", "AssemblyError", "SingularConfigurationError", "problem_names",
           "project_positions", "project_velocities", "assemble", "sparse_mass_matrix",
           "sparse_constraint_terms", "SparseFactors", "sparse_lu", "augmented_accelerations",
           "Index1Baumgarte"]


class AssemblyError(RuntimeError):
    """The constraints cannot be satisfied from the given initial guess."""


class SingularConfigurationError(RuntimeError):
    """The constraint Jacobian lost rank (a singular / locked configuration)."""


def problem_names(problem, kind: str, count: int) -> list[str]:
    getter = getattr(problem, f"{kind}_names", None)
    return list(getter()) if getter else [f"{kind}{i}" for i in range(count)]


def _worst(problem, g) -> str:
    names = problem_names(problem, "multiplier", len(g))
    order = np.argsort(-np.abs(g))[:3]
    return ", ".join(f"{names[i]} = {g[i]:.3g}" for i in order)


def _check_rank(G: np.ndarray, problem, t: float) -> np.ndarray:
    """Cholesky factor of G G^T, or SingularConfigurationError if G lost rank.

    The ratio of the smallest to the largest diagonal entry of the factor estimates
    the square root of the reciprocal condition number, without an SVD per call."""
    GGt = G @ G.T
    try:
        low = np.linalg.cholesky(GGt)
        d = np.abs(np.diag(low))
        ok = d.min() > 1e-7 * d.max()
    except np.linalg.LinAlgError:
        ok = False
    if not ok:
        raise SingularConfigurationError(
            f"constraint Jacobian is singular at t = {t:.6g} s (redundant constraints or a "
            f"singular configuration; rank {np.linalg.matrix_rank(G)} of {G.shape[0]}); "
            f"constraints: {', '.join(problem_names(problem, 'multiplier', G.shape[0]))}")
    return low


def _min_norm_solve(G: np.ndarray, rhs: np.ndarray, problem, t: float) -> np.ndarray:
    """x = G^T (G G^T)^-1 rhs, or SingularConfigurationError."""
    low = _check_rank(G, problem, t)
    return G.T @ np.linalg.solve(low.T, np.linalg.solve(low, rhs))


def project_positions(problem: ConstrainedProblem, t: float, q: np.ndarray,
                      tol: float = 1e-12, max_iter: int = 50) -> np.ndarray:
    """Minimum-norm Gauss-Newton projection of q onto g(q, t) = 0 (docs/benchmarks.md §8.1).

    Raises AssemblyError if |g| does not fall below ``tol`` [m or rad].
    """
    q = np.array(q, dtype=float)
    if problem.m == 0:
        return q
    g = problem.constraints(t, q)
    for _ in range(max_iter):
        if np.abs(g).max() <= tol:
            return q
        G = problem.constraint_jacobian(t, q)
        # least-squares minimum-norm step: equals -G^T (G G^T)^-1 g where G has full
        # rank, and still makes progress (or stalls measurably) where it has not
        q = q - np.linalg.lstsq(G, g, rcond=None)[0]
        g_new = problem.constraints(t, q)
        if not np.all(np.isfinite(g_new)):
            break
        g = g_new
    if np.abs(g).max() <= tol:
        return q
    raise AssemblyError(f"the constraints cannot be satisfied at t = {t:.6g} s from this "
                        f"guess after {max_iter} iterations; largest violations: "
                        f"{_worst(problem, g)}")


def project_velocities(problem: ConstrainedProblem, t: float, q: np.ndarray,
                       v: np.ndarray) -> np.ndarray:
    """Minimum-norm velocity projection onto G q' + g_t = 0 (docs/benchmarks.md §8.1)."""
    if problem.m == 0:
        return np.array(v, dtype=float)
    G = problem.constraint_jacobian(t, q)
    return v - _min_norm_solve(G, G @ v + problem.constraint_rate(t, q), problem, t)


def assemble(problem: ConstrainedProblem, t: float = 0.0, q=None, v=None,
             tol: float = 1e-12) -> tuple[np.ndarray, np.ndarray]:
    """Consistent initial conditions: positions projected onto g = 0 from the guess,
    then velocities onto G q' + g_t = 0.  AssemblyError if impossible."""
    if q is None or v is None:
        q0, v0 = problem.initial_state()
        q = q0 if q is None else q
        v = v0 if v is None else v
    q = project_positions(problem, t, q, tol=tol)
    return q, project_velocities(problem, t, q, v)


# -- the sparse path (large systems: a beam of many elements) ---------------------------
# Problems that assemble their matrices sparse (mbdcore.multibody.System) provide
# ``mass_matrix_sparse`` and ``constraint_terms_sparse``; any other problem's dense
# matrices are converted.
def sparse_mass_matrix(problem: ConstrainedProblem, q: np.ndarray) -> scipy.sparse.csr_matrix:
    """M(q) as a CSR matrix."""
    get = getattr(problem, "mass_matrix_sparse", None)
    if get is not None:
        return get(q)
    return scipy.sparse.csr_matrix(np.atleast_2d(problem.mass_matrix(q)))


def sparse_constraint_terms(problem: ConstrainedProblem, t: float, q: np.ndarray,
                            v: np.ndarray):
    """(g, G, g_t, gamma) with G as a CSR matrix (m, n)."""
    n, m = q.size, getattr(problem, "m", 0)
    if m == 0:
        return np.zeros(0), scipy.sparse.csr_matrix((0, n)), np.zeros(0), np.zeros(0)
    get = getattr(problem, "constraint_terms_sparse", None)
    if get is not None:
        return get(t, q, v)
    if hasattr(problem, "constraint_terms"):
        g, G, gt, gam = problem.constraint_terms(t, q, v)
    else:
        g, G = problem.constraints(t, q), problem.constraint_jacobian(t, q)
        gt, gam = problem.constraint_rate(t, q), problem.gamma(t, q, v)
    G = scipy.sparse.csr_matrix(np.asarray(G, dtype=float).reshape(-1, n))
    return (np.asarray(g, dtype=float).reshape(-1), G, np.asarray(gt, dtype=float).reshape(-1),
            np.asarray(gam, dtype=float).reshape(-1))


class SparseFactors:
    """SuperLU factors of a sparse matrix A (``scipy.sparse.linalg.splu``) that a saved
    state can hold: copying shares them (they are never changed after factorising) and
    pickling keeps A, from which unpickling factorises again (SuperLU is deterministic:
    the same factors, so a restored simulation continues bit for bit).  SuperLU objects
    themselves can be neither copied nor pickled."""

    def __init__(self, matrix, factors):
        self.matrix = matrix
        self._factors = factors

    def solve(self, rhs):
        """A^-1 rhs."""
        return self._factors.solve(rhs)

    def __deepcopy__(self, memo):
        return self

    def __reduce__(self):
        return (_refactorise, (self.matrix,))


def _refactorise(matrix) -> SparseFactors:
    return SparseFactors(matrix, splu(matrix))


def sparse_lu(A):
    """SuperLU factors (:class:`SparseFactors`) of a square sparse matrix, or None if it
    is singular (a pivot below 1e-14 times the largest, the test of the dense path) or
    not finite."""
    A = scipy.sparse.csc_matrix(A)
    if not np.all(np.isfinite(A.data)):
        return None
    try:
        lu = splu(A)
    except RuntimeError:            # "Factor is exactly singular"
        return None
    d = np.abs(lu.U.diagonal())
    if d.size and (not np.all(np.isfinite(d)) or d.min() <= 1e-14 * d.max()):
        return None
    return SparseFactors(A, lu)


def augmented_accelerations(problem: ConstrainedProblem, t: float, q: np.ndarray,
                            v: np.ndarray, alpha: float = 0.0, beta: float = 0.0,
                            sparse: bool = False):
    """(q'', lambda) from the augmented index-1 system with Baumgarte terms.

    ``sparse=True`` assembles ``[[M, G^T], [G, 0]]`` as a scipy sparse matrix and factors
    it with SuperLU (cost about linear in n for a chain of elements)."""
    if sparse:
        return _augmented_accelerations_sparse(problem, t, q, v, alpha, beta)
    M = problem.mass_matrix(q)
    F = problem.forces(t, q, v)
    if problem.m == 0:
        return np.linalg.solve(M, F), np.zeros(0)
    if hasattr(problem, "constraint_terms"):
        g, G, gt, gam = problem.constraint_terms(t, q, v)
    else:
        g, G = problem.constraints(t, q), problem.constraint_jacobian(t, q)
        gt, gam = problem.constraint_rate(t, q), problem.gamma(t, q, v)
    rhs_c = gam - 2.0 * alpha * (G @ v + gt) - beta**2 * g
    n, m = problem.n, problem.m
    K = np.zeros((n + m, n + m))
    K[:n, :n] = M
    K[:n, n:] = G.T
    K[n:, :n] = G
    _check_rank(G, problem, t)
    sol = np.linalg.solve(K, np.concatenate([F, rhs_c]))
    return sol[:n], sol[n:]


def _augmented_accelerations_sparse(problem, t, q, v, alpha, beta):
    M = sparse_mass_matrix(problem, q)
    F = np.asarray(problem.forces(t, q, v), dtype=float)
    g, G, gt, gam = sparse_constraint_terms(problem, t, q, v)
    if G.shape[0] == 0:
        lu = sparse_lu(M)
        if lu is None:
            raise SingularConfigurationError(f"the mass matrix is singular at t = {t:.6g} s")
        return lu.solve(F), np.zeros(0)
    rhs_c = gam - 2.0 * alpha * (G @ v + gt) - beta**2 * g
    lu = sparse_lu(scipy.sparse.bmat([[M, G.T], [G, None]], format="csc"))
    if lu is None:
        _check_rank(G.toarray(), problem, t)     # names the constraints if G lost rank
        raise SingularConfigurationError(f"[[M, G^T], [G, 0]] is singular at t = {t:.6g} s")
    sol = lu.solve(np.concatenate([F, rhs_c]))
    n = q.size
    return sol[:n], sol[n:]


class Index1Baumgarte:
    """The index-1 formulation as a first-order system for any :class:`Integrator`.

    Parameters
    ----------
    problem : ConstrainedProblem
    alpha, beta : float
        Baumgarte parameters [1/s] (alpha = beta in 5..50 1/s, docs/benchmarks.md §8.1).
    project : bool
        Apply the position and velocity projections after every step.
    tol : float
        Constraint tolerance of the position projection [m or rad].
    sparse : bool or "auto"
        Solve the augmented system with sparse LU ("auto": above 200 coordinates, for
        systems that assemble sparse matrices, such as :class:`~mbdcore.multibody.System`).
    """

    SPARSE_AUTO_SIZE = 200

    def __init__(self, problem: ConstrainedProblem, alpha: float = 10.0, beta: float = 10.0,
                 project: bool = True, tol: float = 1e-12, sparse="auto"):
        self.problem = problem
        self.alpha, self.beta = float(alpha), float(beta)
        self.project = project
        self.tol = tol
        self.n = problem.n
        if sparse == "auto":
            sparse = problem.n > self.SPARSE_AUTO_SIZE and hasattr(problem, "mass_matrix_sparse")
        self.sparse = bool(sparse)

    def rhs(self, t: float, x: np.ndarray) -> np.ndarray:
        n = self.n
        a, _ = augmented_accelerations(self.problem, t, x[:n], x[n:], self.alpha, self.beta,
                                       sparse=self.sparse)
        return np.concatenate([x[n:], a])

    def correct(self, t: float, x: np.ndarray) -> np.ndarray:
        if not self.project or self.problem.m == 0:
            return x
        n = self.n
        q = project_positions(self.problem, t, x[:n], tol=self.tol)
        return np.concatenate([q, project_velocities(self.problem, t, q, x[n:])])


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
