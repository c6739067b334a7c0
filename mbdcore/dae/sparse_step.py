"""The sparse path of the whole generalized-alpha step in C (``alpha_step`` of
``mbdcore/dae/native/newton.c`` with ``newton_t.sparse``): the tables that let C
assemble the Newton matrix into a CSC pattern fixed once per topology and factor it with
``mbdcore/dae/native/sparse_lu.c``, with no search and no allocation per step.

From the compiled terms' sparse blocks (:class:`~mbdcore.dae.problem.SparseBlocks`:
the CSR patterns of G, C_t, K_t, Hg and the constant M), :func:`newton_matrix_terms`
lists every contribution to the scaled iteration matrix of
:meth:`mbdcore.dae.newton_matrix.NewtonMatrix._assemble`::

    index 3:  [[S, G^T], [G, 0]]
    GGL:      [[S, G^T, -D G^T], [G, 0, 0], [G + H/c_v, 0, -G G^T]]
    S = M + (c_v C_t + K_t)/c_a,  D = M + (c_v/c_a) C_t

as (position, block value a, block value b or -1, weight): an entry is the sum of
weight x a x b over its terms, each block value scaled by its block's factor (1, c_v/c_a,
1/c_a, 1, 1/c_v for M, C_t, K_t, G, Hg), so the products D G^T and G G^T are sums over
their shared columns.  The start's matrix [[M, G^T], [G, 0]] (``alpha_start``) likewise.

:class:`SparseNewton` makes the C structures (``sparse_newton_t`` and one
``sparse_matrix_t`` per matrix, declared once in newton.c): the pattern, its
fill-reducing ordering (minimum degree on A + A^T, the diagonal preferred as pivot; the
room of L and U for any pivots from the fill of A^T A in that order, :func:`normal_fill`)
and a reference factorisation of a representative matrix
(the blocks at the given state and step size), whose pivot order and L, U patterns every
factorisation in C reuses (``slu_refactor``), factoring afresh only where a kept pivot
fails the threshold test (:data:`~mbdcore.dae.sparse_solver.PIVOT_TOLERANCE`).
"""
from __future__ import annotations

import ctypes
import functools

import numpy as np
import scipy.sparse

from mbdcore.dae.newton_native import newton_library
from mbdcore.dae.sparse_solver import PIVOT_TOLERANCE, SparseLU, sparse_lu_library
from mbdcore.native import TableLayout, table_layout

__all__ = ["SparseNewton", "newton_matrix_terms", "normal_fill",
           "sparse_newton_layout", "sparse_matrix_layout", "BLOCKS"]

#: the blocks' segments in the values C assembles from (``SEG_M`` ... of newton.c)
BLOCKS = ("M", "C", "K", "G", "H")


@functools.cache
def sparse_newton_layout() -> TableLayout:
    """The layout of ``sparse_newton_t`` (native/newton.c, ``SPARSE_NEWTON_LAYOUT``)."""
    return table_layout(newton_library, "SPARSE_NEWTON_LAYOUT")


@functools.cache
def sparse_matrix_layout() -> TableLayout:
    """The layout of ``sparse_matrix_t`` (native/newton.c, ``SPARSE_MATRIX_LAYOUT``)."""
    return table_layout(newton_library, "SPARSE_MATRIX_LAYOUT")


def _entries(pattern, offset: int):
    """(rows, cols, value indices) of a CSR pattern whose values start at ``offset``."""
    indptr, indices = (np.asarray(a, dtype=np.int64) for a in pattern)
    rows = np.repeat(np.arange(indptr.size - 1), np.diff(indptr))
    return rows, indices, offset + np.arange(indices.size)


def _products(left, right, sign: float):
    """The terms of sign x L R^T over shared columns: ``left``, ``right`` (rows, cols,
    value indices) of L and R; returns (rows of L, rows of R, a, b, weights)."""
    lr, lc, lv = left
    rr, rc, rv = right
    order = np.argsort(rc, kind="stable")
    rr, rc, rv = rr[order], rc[order], rv[order]
    first = np.searchsorted(rc, lc, side="left")
    count = np.searchsorted(rc, lc, side="right") - first
    at = np.repeat(first, count) + (np.arange(count.sum()) - np.repeat(np.cumsum(count) - count,
                                                                       count))
    pick = np.repeat(np.arange(lc.size), count)
    return lr[pick], rr[at], lv[pick], rv[at], np.full(at.size, sign)


def _offsets(blocks) -> dict:
    sizes = {"M": blocks.mass.indices.size, "C": blocks.C[1].size, "K": blocks.K[1].size,
             "G": blocks.G[1].size, "H": blocks.H[1].size}
    out, at = {}, 0
    for name in BLOCKS:
        out[name] = at
        at += sizes[name]
    return out


def _linear(rows, cols, values):
    """Terms of single block values (no product), weight 1."""
    return rows, cols, values, np.full(values.size, -1, np.int64), np.ones(values.size)


def newton_matrix_terms(blocks, n: int, m: int, ggl: bool, start: bool = False):
    """(rows, cols, a, b, weights) of every term of the scaled iteration matrix (module
    docstring) over the values of ``blocks`` (a :class:`SparseBlocks`) in the order of
    :data:`BLOCKS`; ``start``: of the start's matrix [[M, G^T], [G, 0]] instead."""
    off = _offsets(blocks)
    M = _entries((blocks.mass.indptr, blocks.mass.indices), off["M"])
    C, K = _entries(blocks.C, off["C"]), _entries(blocks.K, off["K"])
    G, H = _entries(blocks.G, off["G"]), _entries(blocks.H, off["H"])
    parts = [_linear(*X) for X in ((M,) if start else (M, C, K))]
    parts += [_linear(G[1], n + G[0], G[2]), _linear(n + G[0], G[1], G[2])]
    if ggl and not start:
        k = n + m
        for D in (M, C):                                  # -D G^T at (i, n + m + k)
            r, rg, a, b, w = _products(D, G, -1.0)
            parts.append((r, k + rg, a, b, w))
        for X in (G, H):                                  # G + H/c_v at (n + m + k, j)
            parts.append(_linear(k + X[0], X[1], X[2]))
        r, rg, a, b, w = _products(G, G, -1.0)            # -G G^T
        parts.append((k + r, k + rg, a, b, w))
    return tuple(np.concatenate(p) for p in zip(*parts))


class SparseNewton:
    """The C structures of the sparse path for ``n`` coordinates, ``m`` rows, ``ggl``
    (module docstring): :attr:`struct` the ``sparse_newton_t``, all arrays held here;
    its ``step`` and ``start`` matrices are made by :meth:`reference`, which fixes their
    pivot orders, before the first step."""

    def __init__(self, blocks, n: int, m: int, ggl: bool, tol: float = PIVOT_TOLERANCE):
        self.blocks, self.n, self.m, self.ggl = blocks, n, m, bool(ggl)
        self.offsets = _offsets(blocks)
        self.sizes = [blocks.mass.indices.size, blocks.C[1].size, blocks.K[1].size,
                      blocks.G[1].size, blocks.H[1].size]
        self.values = np.zeros(sum(self.sizes))
        self.values[:self.sizes[0]] = blocks.mass.data
        self.tol = float(tol)
        self.step = _Matrix(n + (2 * m if ggl else m), newton_matrix_terms(blocks, n, m, ggl),
                            self.tol)
        self.start = _Matrix(n + m, newton_matrix_terms(blocks, n, m, False, start=True),
                             self.tol)
        lib = sparse_lu_library().ADDRESSES
        self.struct = sparse_newton_layout().structure(
            n=n, m=m, ggl=int(ggl), residual=blocks.residual, factor=lib["slu_factor"],
            refactor=lib["slu_refactor"], solve=lib["slu_solve"], tol=self.tol,
            nM=self.sizes[0], nC=self.sizes[1], nK=self.sizes[2], nG=self.sizes[3],
            nH=self.sizes[4], G_indptr=_ints(blocks.G[0]), G_indices=_ints(blocks.G[1]),
            H_indptr=_ints(blocks.H[0]), H_indices=_ints(blocks.H[1]), values=self.values,
            step=None, start=None)

    def reference(self, values, scales_step) -> None:
        """Fix each matrix's pivot order and L, U patterns: the factorisation of the
        matrix the blocks' ``values`` (in the order of :data:`BLOCKS`, M's included)
        make, the step's with the blocks scaled by ``scales_step`` (five factors), the
        start's unscaled; the structures are (re)made for them."""
        values = np.asarray(values, dtype=float)
        self.step.reference(values, self._segment_scales(scales_step))
        self.start.reference(values, self._segment_scales([1.0] * 5))
        self.struct.step = self.step.make()
        self.struct.start = self.start.make()

    def _segment_scales(self, scales) -> np.ndarray:
        return np.repeat(np.asarray(scales, dtype=float), self.sizes)


def _ints(a) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.int32)


def normal_fill(Ap, Ai, order) -> int:
    """The strictly lower entries of the Cholesky factor of (A Q)^T (A Q), A the CSC
    pattern (Ap, Ai) and Q the column order ``order``: a bound of the entries of L below
    and of U above the diagonal of P A Q = L U for every choice of pivot rows (George &
    Ng 1987, "Symbolic factorization for sparse Gaussian elimination with partial
    pivoting", SIAM J. Sci. Stat. Comput. 8(6)), so the room of a factorisation on that
    order.  Symbolic: column j of the factor holds the rows i > j of column j of
    (A Q)^T (A Q) and those of its children in the elimination tree."""
    N = len(order)
    rows_of = [Ai[Ap[c]:Ap[c + 1]] for c in order]    # A's rows in column k of A Q
    steps_of_row = [[] for _ in range(N)]
    for k, rows in enumerate(rows_of):
        for r in rows:
            steps_of_row[r].append(k)
    children = [[] for _ in range(N)]
    patterns, total = [None] * N, 0
    for j in range(N):
        below = {i for r in rows_of[j] for i in steps_of_row[r] if i > j}
        for c in children[j]:
            below |= patterns[c]
            patterns[c] = None                        # merged: no longer needed
        below.discard(j)
        patterns[j] = below
        total += len(below)
        if below:
            children[min(below)].append(j)
    return total


class _Matrix:
    """One matrix of the step: its pattern (CSC), terms, ordering and reference
    factorisation, and its ``sparse_matrix_t``."""

    def __init__(self, N: int, terms, tol: float):
        rows, cols, a, b, w = terms
        keys, at = np.unique(cols * N + rows, return_inverse=True)
        self.N = N
        self.Ai = _ints(keys % N)
        self.Ap = _ints(np.searchsorted(keys // N, np.arange(N + 1)))
        self.at, self.a, self.b, self.w = _ints(at.ravel()), _ints(a), _ints(b), \
            np.ascontiguousarray(w, dtype=float)
        pattern = scipy.sparse.csc_matrix((np.ones(self.Ai.size), self.Ai, self.Ap),
                                          shape=(N, N))
        # minimum degree on A + A^T (less fill, so less work per factorisation, than on
        # A^T A: 50,000 entries of L and U against 62,000 on the 4-bay truss); the room
        # of a fresh factorisation, whatever its pivots, from A^T A in that order
        self.lu = SparseLU(pattern, tol=tol, ordering="symmetric")
        self.room = max(normal_fill(self.Ap, self.Ai, self.lu.order), 1)
        self.struct = None

    def values(self, block_values, scale) -> np.ndarray:
        """The matrix's values (CSC) from the blocks' values, each scaled by ``scale``
        (one factor per value), as C assembles them."""
        x = self.w * scale[self.a] * block_values[self.a]
        product = self.b >= 0
        x[product] *= scale[self.b[product]] * block_values[self.b[product]]
        out = np.zeros(self.Ai.size)
        np.add.at(out, self.at, x)
        return out

    def reference(self, block_values, scale) -> None:
        """Its pivot order and L, U patterns: those of the matrix of these values."""
        A = scipy.sparse.csc_matrix((self.values(block_values, scale), self.Ai, self.Ap),
                                    shape=(self.N, self.N))
        self.lu.factor(A)
        self.factors = self.lu.factors

    def make(self) -> int:
        """The ``sparse_matrix_t`` (made anew; its address)."""
        Lp, Li, _, Up, Ui, _, _, prow = self.factors
        N, room = self.N, self.room
        #: the values C assembles last (CSC over the pattern)
        self.Ax = np.zeros(self.Ai.size)
        self.struct = sparse_matrix_layout().structure(
            N=N, nnz=self.Ai.size, Ap=self.Ap, Ai=self.Ai, Q=_ints(self.lu.order),
            n_terms=self.at.size, term_at=self.at, term_a=self.a, term_b=self.b,
            term_w=self.w, ref_lnz=Li.size, ref_unz=Ui.size, lroom=room, uroom=room,
            ref_Lp=_ints(Lp), ref_Li=_ints(Li), ref_Up=_ints(Up), ref_Ui=_ints(Ui),
            ref_prow=_ints(prow), Ax=self.Ax, Lx=np.zeros(room),
            Ux=np.zeros(room), Udiag=np.zeros(N), Lp=np.zeros(N + 1, np.int32),
            Li=np.zeros(room, np.int32), Up=np.zeros(N + 1, np.int32),
            Ui=np.zeros(room, np.int32), prow=np.zeros(N, np.int32),
            iwork=np.zeros(6 * N, np.int32), info=np.zeros(3, np.int32),
            fresh=np.zeros(1, np.int32), x=np.zeros(N), y=np.zeros(N))
        return ctypes.addressof(self.struct)
