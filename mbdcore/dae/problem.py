"""The constrained equations of motion every multibody formulation works on.

Lagrange's equations of the first kind (docs/benchmarks.md §8.1, §8.2), an index-3 DAE::

    M(q) q'' + G(q, t)^T lambda = F(t, q, q')
    g(q, t) = 0,                 G = dg/dq  (m x n, full row rank)

Differentiating the constraints twice gives the acceleration-level equation
``G q'' = gamma`` with ``gamma = -(G q')_q q' - 2 G_t q' - g_tt``.

A model hands the formulations a :class:`ConstrainedProblem`; the index-1 formulation
(Baumgarte + projections) and the index-3 implicit integrators (generalized-alpha,
HHT, Newmark, Bathe) only call the methods below.  Units: q in m and rad, t in s,
F in N and N m, lambda in the units that make G^T lambda a generalised force.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

__all__ = ["ConstrainedProblem", "CompiledTerms", "SparseBlocks"]


@dataclasses.dataclass(frozen=True)
class SparseBlocks:
    """The compiled terms' sparse context, for a step wholly in C on the sparse path
    (:mod:`mbdcore.dae.sparse_step`): ``context``, the address of a context with which
    ``constraints`` writes G, and ``jacobian_function()`` C_t, K_t, Hg, as the values of
    the CSR patterns ``G``, ``C``, ``K``, ``H`` ((indptr, indices) each, int32; fixed per
    topology); ``residual``, the address of the sparse residual's C function
    (``sparse_residual_fn`` of ``mbdcore/dae/native/newton.c``); ``mass``, the constant
    M as CSR [kg, kg m, kg m^2]."""

    context: int
    residual: int
    mass: object
    G: tuple
    C: tuple
    K: tuple
    H: tuple


@dataclasses.dataclass(frozen=True)
class CompiledTerms:
    """A problem's Newton residual terms as compiled functions, for the implicit
    integrators' compiled Newton iterations (:mod:`mbdcore.dae.index3`).

    The C signatures (``mbdcore/dae/native/newton.c``)::

        void constraints(const void *context, const double *q, double *g, double *G,
                         double *g_t);       /* G dense (m, n), row-major */
        void forces(const void *context, const double *q, const double *v, double *F);

    Attributes
    ----------
    n, m : int
        Coordinates and constraint rows (the rows the solvers see).
    mass_matrix : callable
        ``mass_matrix()``: the constant mass matrix, dense (n, n) [kg, kg m, kg m^2]
        (built on the first call: the sparse path never asks for it).
    constraints, forces, context : int
        Addresses of the two functions and of the context they are called with.
    prepare : callable
        ``prepare(t)`` before the calls of a solve at time t [s] (time-dependent
        constraint offsets, e.g. driving motions).
    owner : object
        Holds the memory the addresses point into (keep it alive with the terms).
    jacobian : callable or None
        ``jacobian(q, v, lam, geometric) -> (C_t, K_t, Hg)``, the Newton matrix's
        blocks (dense): C_t = -dF/dv, K_t = -dF/dq + d(G^T lam)/dq, Hg = d(G v)/dq (the
        constraint curvature terms only if ``geometric``); None: built in Python.
    sparse_residual : callable or None
        ``sparse_residual(q_ref, v_ref, x_ref, dq, lam_s, mu, c_v, c_a, ggl) -> (q, G, w,
        v, x, r)``: the scaled Newton residual of the sparse path at an iterate
        (:mod:`mbdcore.dae.index3`), G as CSR over a pattern fixed per topology (after
        ``prepare``); None: evaluated in Python.
    sparse_mass : callable or None
        ``sparse_mass()``, the constant M as CSR.
    sparse_jacobian : callable or None
        ``sparse_jacobian(q, v, lam, geometric) -> (C_t, K_t, Hg)`` as ``jacobian``,
        CSR matrices; None: built in Python.
    jacobian_function : callable or None
        ``jacobian_function()``: the address of the C function of ``jacobian``, called
        with ``context`` (``jacobian_fn`` of ``mbdcore/dae/native/newton.c``: K, C, H
        dense, row-major), its scratch made by that call; for a step wholly in C
        (:mod:`mbdcore.dae.compiled_step`).  None: none.
    sparse_blocks : callable or None
        ``sparse_blocks()``: the :class:`SparseBlocks` of the sparse path (made on the
        first call), for a step wholly in C; None: none.
    """

    n: int
    m: int
    mass_matrix: Callable[[], np.ndarray]
    constraints: int
    forces: int
    context: int
    prepare: Callable[[float], None]
    owner: object = None
    jacobian: Callable | None = None
    sparse_residual: Callable | None = None
    sparse_mass: Callable | None = None
    sparse_jacobian: Callable | None = None
    jacobian_function: Callable[[], int] | None = None
    sparse_blocks: Callable[[], SparseBlocks] | None = None


class ConstrainedProblem:
    """Interface of a constrained mechanical system (override what you have).

    Attributes
    ----------
    n : int
        Number of generalised coordinates.
    m : int
        Number of constraint equations (0 for an unconstrained system).
    """

    n: int = 0
    m: int = 0

    def mass_matrix(self, q: np.ndarray) -> np.ndarray:
        """M(q), shape (n, n), symmetric positive definite."""
        raise NotImplementedError

    def forces(self, t: float, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        """F(t, q, q'), shape (n,): applied, elastic, damping and velocity terms."""
        raise NotImplementedError

    def constraints(self, t: float, q: np.ndarray) -> np.ndarray:
        """g(q, t), shape (m,)."""
        return np.zeros(0)

    def constraint_jacobian(self, t: float, q: np.ndarray) -> np.ndarray:
        """G = dg/dq, shape (m, n)."""
        return np.zeros((0, self.n))

    def constraint_rate(self, t: float, q: np.ndarray) -> np.ndarray:
        """g_t = dg/dt at fixed q, shape (m,) (non-zero for driving constraints)."""
        return np.zeros(self.m)

    def gamma(self, t: float, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        """Right side of G q'' = gamma, shape (m,)."""
        return np.zeros(self.m)

    # -- derivatives for Newton iterations (finite differences unless overridden) --------
    def force_jacobians(self, t: float, q: np.ndarray, v: np.ndarray):
        """(dF/dq, dF/dv), each (n, n); default: forward differences."""
        f0 = self.forces(t, q, v)
        kq = np.empty((self.n, self.n))
        kv = np.empty((self.n, self.n))
        for j in range(self.n):
            e = np.sqrt(np.finfo(float).eps) * max(1.0, abs(q[j]))
            dq = q.copy()
            dq[j] += e
            kq[:, j] = (self.forces(t, dq, v) - f0) / e
            e = np.sqrt(np.finfo(float).eps) * max(1.0, abs(v[j]))
            dv = v.copy()
            dv[j] += e
            kv[:, j] = (self.forces(t, q, dv) - f0) / e
        return kq, kv

    def compiled_terms(self) -> CompiledTerms | None:
        """The residual terms as compiled functions (:class:`CompiledTerms`) when the
        problem has them all (constant mass, constraints and forces in C), which lets
        the implicit integrators iterate in C; None (the default): Python calls."""
        return None

    def update(self, t: float, q: np.ndarray, v: np.ndarray) -> bool:
        """Events between time steps at the accepted state; True when the forces jumped
        (the drivers then restart the integrator).  None by default."""
        return False

    def range_violation(self, q: np.ndarray):
        """The first part of the model outside its range of validity at ``q``, or None.

        A dict: ``body`` (name), ``quantity`` (e.g. "tip deflection"), ``value`` and
        ``limit`` (SI units), ``text`` (what is out of range, with the numbers) and
        ``hint`` (a likely cause, or "").  The drivers report it as divergence
        (:class:`~mbdcore.integrators.base.DivergenceError`).  None by default."""
        return None

    def energy(self, t: float, q: np.ndarray, v: np.ndarray) -> float:
        """Total mechanical energy [J] where the model defines a potential (else nan)."""
        return float("nan")
