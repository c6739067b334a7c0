"""The scaled Newton equations of the implicit index-3/GGL integrators: their residual
and iteration matrix, dense or sparse (the equations and the scaling are in
:mod:`mbdcore.dae.index3`'s module docstring, "Every solve has the same structure").

:class:`ScaledNewtonEquations` is the base of :class:`~mbdcore.dae.index3.Index3Integrator`,
which keeps the Newton iteration and its policy about the matrix; here the blocks
(M, C_t, K_t, d(G v)/dq) are built, scaled, assembled and factored, and the scaled
residual is evaluated (in C where the problem's terms are compiled,
:mod:`mbdcore.dae.newton_native`).
"""
from __future__ import annotations

import math

import numpy as np
import scipy.sparse
from scipy.linalg.lapack import dgetrf

from mbdcore.dae.index1 import sparse_constraint_terms, sparse_lu, sparse_mass_matrix
from mbdcore.dae.newton_native import CompiledNewton
from mbdcore.dae.sparse_solver import (
    PardisoAnalysis,
    PatternError,
    SingularMatrixError,
    SparseLU,
)

__all__ = ["finite", "max_abs", "constraint_parts", "sparse_geometric_terms",
           "BlockPattern", "ScaledNewtonEquations", "LINE_SEARCH_HALVINGS"]

#: the most halvings of a Newton step by the line search (``line_search=True``)
LINE_SEARCH_HALVINGS = 8


def finite(x) -> bool:
    """Every entry of the array finite (a sum is NaN or infinite if one is; cheaper than
    np.isfinite(x).all() on the small arrays of a Newton iteration)."""
    return math.isfinite(float(x.sum())) if x.size < 4096 else bool(np.isfinite(x).all())


def max_abs(x) -> float:
    """max |x_i| (0 for an empty array)."""
    return float(np.abs(x).max()) if x.size else 0.0


def constraint_parts(problem, t, q, sparse=False):
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


def sparse_geometric_terms(problem, t, q, v, x, lam):
    """d(M(q) x + G(q)^T lam)/dq and d(G(q) v)/dq (CSR) by forward differences.

    A problem may provide ``geometric_stiffness_sparse`` (System: only the coordinates
    the joints and configuration-dependent masses read).  Otherwise every coordinate
    is perturbed in place, with sparse M and G (no dense matrix per column)."""
    get = getattr(problem, "geometric_stiffness_sparse", None)
    if get is not None:
        return get(t, q, v, x, lam)
    n = q.size
    M0 = sparse_mass_matrix(problem, q)
    G0 = constraint_parts(problem, t, q, True)[1]
    w0 = M0 @ x + G0.T @ lam
    Gv0 = G0 @ v
    qp = q.copy()
    cols_k, cols_h = [], []
    for j in range(n):
        e = math.sqrt(np.finfo(float).eps) * max(1.0, abs(q[j]))
        qp[j] = q[j] + e
        Gj = constraint_parts(problem, t, qp, True)[1]
        cols_k.append(scipy.sparse.csc_matrix(
            ((sparse_mass_matrix(problem, qp) @ x + Gj.T @ lam - w0) / e)[:, None]))
        cols_h.append(scipy.sparse.csc_matrix(((Gj @ v - Gv0) / e)[:, None]))
        qp[j] = q[j]
    return (scipy.sparse.hstack(cols_k, format="csr"),
            scipy.sparse.hstack(cols_h, format="csr"))


class BlockPattern:
    """``scipy.sparse.bmat(layout, format="csc")`` for a layout of blocks whose patterns
    repeat (the Newton matrix's blocks over a topology), without a new bmat per call (a
    third of a net deployment's step was scipy building it).

    Each block's values are placed in the union of the patterns it has had (scipy's sums
    and products drop an entry that is zero at one configuration and not at the next,
    so a block's own pattern flickers), and the blocks' union patterns into the CSC
    matrix through a permutation found once per union.  Entries of the union that a
    block does not have now are stored zeros: the matrix's pattern stays the same, so
    its sparse LU is refactored on the kept analysis.  A block with an entry outside its
    union widens it and the permutation is found again."""

    def __init__(self):
        self._unions = None          # per block: (shape, indptr, indices, keys)
        self._last = None            # per block: (indptr, indices, positions in union)
        self._csc = None

    def __call__(self, layout):
        blocks = [[None if b is None else _canonical_csr(b) for b in row] for row in layout]
        flat = [b for row in blocks for b in row if b is not None]
        if self._unions is None or len(self._unions) != len(flat) or any(
                u[0] != b.shape for u, b in zip(self._unions, flat)):
            self._unions = [(b.shape, b.indptr.copy(), b.indices.copy(), _keys(b))
                            for b in flat]
            self._last = [None] * len(flat)
            self._csc = None
        values = [self._in_union(k, b) for k, b in enumerate(flat)]
        if self._csc is None:
            self._analyse(blocks)
        indptr, indices, order, shape = self._csc
        data = np.concatenate(values)[order]
        return scipy.sparse.csc_matrix((data, indices, indptr), shape=shape, copy=False)

    def _in_union(self, k: int, b) -> np.ndarray:
        """Block k's values on its union pattern (widened if b has an entry outside)."""
        last = self._last[k]
        if last is None or not (np.array_equal(last[0], b.indptr)
                                and np.array_equal(last[1], b.indices)):
            shape, _, _, keys = self._unions[k]
            mine = _keys(b)
            at = np.searchsorted(keys, mine)
            inside = at < keys.size
            inside[inside] = keys[at[inside]] == mine[inside]
            if not inside.all():
                keys = np.union1d(keys, mine)
                rows, cols = np.divmod(keys, shape[1])
                union = scipy.sparse.csr_matrix((np.ones(keys.size), (rows, cols)),
                                                shape=shape)
                self._unions[k] = (shape, union.indptr, union.indices, keys)
                self._csc = None
                at = np.searchsorted(keys, mine)
            last = (b.indptr.copy(), b.indices.copy(), at)
            self._last[k] = last
        out = np.zeros(self._unions[k][3].size)
        out[last[2]] = b.data
        return out

    def _analyse(self, blocks) -> None:
        """The permutation: bmat of the union patterns with each value replaced by its
        place (from 1, so none is a zero bmat could drop) in the concatenated values."""
        marked, k, at = [], 1, 0
        for row in blocks:
            out = []
            for b in row:
                if b is None:
                    out.append(None)
                    continue
                shape, indptr, indices, _ = self._unions[at]
                out.append(scipy.sparse.csr_matrix(
                    (np.arange(k, k + indices.size, dtype=float), indices, indptr),
                    shape=shape))
                k += indices.size
                at += 1
            marked.append(out)
        csc = scipy.sparse.bmat(marked, format="csc")
        self._csc = (csc.indptr, csc.indices, csc.data.astype(np.int64) - 1, csc.shape)


def _keys(b) -> np.ndarray:
    """The entries of a canonical CSR matrix as sorted row-major keys row n_cols + col."""
    rows = np.repeat(np.arange(b.shape[0], dtype=np.int64), np.diff(b.indptr))
    return rows * b.shape[1] + b.indices


def _canonical_csr(b):
    """``b`` as CSR with sorted, unique column indices (bmat's and the permutation's
    premise)."""
    b = b.tocsr() if scipy.sparse.issparse(b) else scipy.sparse.csr_matrix(b)
    if not b.has_canonical_format:
        b = b.copy()
        b.sum_duplicates()
    return b


class ScaledNewtonEquations:
    """The scaled residual and iteration matrix of one implicit stage (mixin of
    :class:`~mbdcore.dae.index3.Index3Integrator`, whose attributes ``ggl``,
    ``geometric_stiffness``, ``sparse_solver``, ``iteration`` and counters it uses)."""

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
                Gj = constraint_parts(problem, t, qj)[1]
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
            Kg, Hg = sparse_geometric_terms(problem, t, q, v, qdd, lam)
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
            if getattr(self, "_block_pattern", None) is None:
                self._block_pattern = BlockPattern()
            if not self.ggl:
                return self._block_pattern([[S, GT], [G, None]])
            return self._block_pattern([[S, GT, -(D @ GT)], [G, None, None],
                                        [G + H, None, -(G @ GT)]])
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
        G = constraint_parts(problem, t, q, self.uses_sparse(problem))[1]
        return self._assemble(self._blocks(problem, t, q, v, x_acc, lam_s, cv, ca, G), G)

    @staticmethod
    def _factor(J, kind):
        """LU factors or inverse of J; None if J is singular or not finite."""
        if scipy.sparse.issparse(J):
            return sparse_lu(J)          # modified and full Newton only
        if not finite(J):
            return None
        if kind == "lu":
            # LAPACK's getrf/getrs directly (what scipy.linalg.lu_factor/lu_solve call,
            # without their per-call checks and warnings: a Newton iteration of a small
            # system is a few tens of microseconds); a singular matrix shows in the
            # pivots checked below
            lu, piv, _ = dgetrf(J)
            d = np.abs(np.diag(lu))
            if d.size and (not finite(d) or d.min() <= 1e-14 * d.max()):
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
            return self._pardiso_factor(J)
        return self._factor(J, kind)

    @staticmethod
    def _pattern_union(pattern, J):
        """The pattern of the kept analysis (ones at its entries) and J's, J's format:
        a pattern flickering between two stays analysed."""
        return pattern + J.__class__((np.ones(J.nnz), J.indices, J.indptr), shape=J.shape)

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
                factors = SparseLU(self._pattern_union(last.pattern, J),
                                   room=last.room).factor(J)
        except SingularMatrixError:
            return None
        self._sparse_lu = factors
        return factors

    def _pardiso_factor(self, J):
        """PARDISO's factors of the sparse matrix J, None if it is singular or not
        finite: on the kept analysis of its pattern (phase 22 only) while J fits it, a
        new analysis (phase 11, counted in ``pardiso_analyses``) of the union with the
        last pattern when it does not (:class:`PardisoAnalysis`)."""
        J = scipy.sparse.csr_matrix(J)
        last, pattern = self._pardiso_analysis, J
        if last is not None and last.n == J.shape[0]:
            try:
                return last.factor(J)
            except PatternError:
                pattern = self._pattern_union(last.pattern, J)
        try:
            self._pardiso_analysis = PardisoAnalysis(pattern, J)
        except SingularMatrixError:
            return None
        self.pardiso_analyses += 1
        return self._pardiso_analysis.factor(J)

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
        """(problem, its CompiledNewton or None, its CompiledTerms or None), made once
        per start."""
        if self._compiled is None or self._compiled[0] is not problem:
            get = getattr(problem, "compiled_terms", None)
            terms = None if get is None else get()
            dense = terms is not None and not self.uses_sparse(problem)
            self._compiled = (problem, CompiledNewton(terms, self) if dense else None, terms)
        return self._compiled

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
        g, G, gt = constraint_parts(problem, t, q, sparse)
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
        return max_abs(r) if finite(r) else math.nan

    def _line_search(self, problem, t, q_ref, v_ref, x_ref, cv, ca, dq, lam_s, mu, step, r,
                     sparse):
        """Backtracking on the scaled residual's 2-norm (Armijo; Dennis and Schnabel,
        Numerical Methods for Unconstrained Optimization, 6.3): the Newton step times
        alpha = 1, 1/2, 1/4, ... until |r(alpha)| <= (1 - 1e-4 alpha) |r|, at most
        LINE_SEARCH_HALVINGS times; if none passes, the full step (plain Newton's).
        Returns (the step taken, the residual tuple of :meth:`_residual` at the new
        iterate or None); ``_last_damping`` is alpha."""
        n, m = dq.size, lam_s.size
        norm0 = float(np.linalg.norm(r))
        alpha = 1.0
        for _ in range(LINE_SEARCH_HALVINGS + 1):
            trial = step if alpha == 1.0 else alpha * step
            with np.errstate(all="ignore"):
                res = self._residual(problem, t, q_ref, v_ref, x_ref, cv, ca, dq + trial[:n],
                                     lam_s + trial[n:n + m],
                                     mu + trial[n + m:] if self.ggl else mu, sparse)
            norm = float(np.linalg.norm(res[-1]))
            if math.isfinite(norm) and norm <= (1.0 - 1e-4 * alpha) * norm0:
                self._last_damping = alpha
                if alpha < 1.0:
                    self.line_search_cuts += 1
                return trial, res
            alpha *= 0.5
        self._last_damping = 1.0
        return step, None
