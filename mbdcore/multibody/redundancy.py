"""Dependent constraint equations of a System: which rows of the constraint Jacobian G
depend on the others at a configuration, found by a rank-revealing factorisation.

:meth:`System.check_redundancy <mbdcore.multibody.system.System.check_redundancy>`
projects the configuration onto all the constraints (:class:`AllRows`), evaluates G
there and asks :func:`dependent_rows` which rows to drop; the System then applies its
policy (:data:`REDUNDANT_POLICIES`).  Constraints independent by construction (a cable
end joined to a node) are verified by :func:`exclusive_rows` and kept out of the
factorisation.  docs/ring_truss.md ("Redundant rows") says at which configuration the
ring truss judges them and why.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import scipy.linalg
import scipy.sparse
import scipy.sparse.csgraph

from mbdcore.blocks import ParameterError
from mbdcore.dae.problem import ConstrainedProblem
from mbdcore.native import kernel_library

__all__ = ["REDUNDANT_POLICIES", "RANK_TOLERANCE", "RANK_METHODS", "RowSelection",
           "dependent_rows", "exclusive_rows", "rank_along", "AllRows",
           "REDUNDANCY_C_SOURCE"]

#: What a System does with constraint equations that depend on the others at the
#: assembled initial configuration (over-constrained mechanisms: a planar four-bar built
#: in 3D, Bricard's linkage, ring trusses): ``keep`` them all (the planar default; the
#: solvers then need G of full row rank), ``remove`` the dependent rows, or raise an
#: ``error`` naming them.
REDUNDANT_POLICIES = ("keep", "remove", "error")
#: A pivot of the rank-revealing factorisation below this fraction of the largest row
#: norm of G marks a dependent constraint equation.
RANK_TOLERANCE = 1e-8
#: How the dependent rows are found (:func:`dependent_rows`): ``dense``, a QR of G^T
#: with column pivoting (O(m n^2) time, O(m n) memory; which of several equivalent rows
#: it drops follows the round-off of near-equal norms, so it may differ between BLAS
#: kernels), or ``sparse``, G's rows in order rotated into a banded R (George & Heath):
#: the first basis of the row space in row order, no pivoting, no BLAS.
RANK_METHODS = ("dense", "sparse")

REDUNDANCY_C_SOURCE = Path(__file__).resolve().parent / "native" / "redundancy.c"
_library = kernel_library("mbdcore.multibody._redundancy", REDUNDANCY_C_SOURCE)
# the error codes of native/redundancy.c's rank_rows
_NONFINITE, _OUT_OF_BAND = -1, -2


class RowSelection:
    """Which rows of G a rank-revealing factorisation keeps: ``kept`` (sorted row
    indices, a basis of G's row space), ``dependent`` (sorted, the others), ``rank``
    (the number kept) and ``smallest_pivot``, the smallest pivot of the kept rows over
    the largest row norm of G (how far the kept rows are from losing rank; 0 if none)."""

    def __init__(self, kept: np.ndarray, dependent: np.ndarray, smallest_pivot: float):
        self.kept = np.sort(np.asarray(kept, dtype=int))
        self.dependent = np.sort(np.asarray(dependent, dtype=int))
        self.rank = int(self.kept.size)
        self.smallest_pivot = float(smallest_pivot)


def dependent_rows(G, tol: float = RANK_TOLERANCE, sure=(), method: str = "dense"
                   ) -> RowSelection:
    """The rows of ``G`` (m, n; dense, or scipy sparse for ``sparse``) that depend on
    the others, ``method`` one of :data:`RANK_METHODS`.

    ``dense``: a QR factorisation of G^T with column pivoting (a rank-revealing QR,
    Golub & Van Loan, Matrix Computations, 4th ed., section 5.4.2) orders the rows by
    independence; those whose pivot falls below ``tol`` times the largest are
    dependent.  ``sparse``: the rows rotated one by one into R
    (``native/redundancy.c``); a row left with no entry above ``tol`` times the largest
    row norm depends on the rows kept before it.  Both keep a basis of G's row space of
    the same rank where the pivots of G have a gap around ``tol``; the dense one the
    best-conditioned rows it finds greedily, the sparse one the first in row order.
    ``sure``: rows known independent of all the others (:func:`exclusive_rows`), kept
    without entering the factorisation."""
    if method not in RANK_METHODS:
        raise ParameterError(f"method = {method!r} is invalid: accepted values are "
                             f"{', '.join(map(repr, RANK_METHODS))}")
    if not (0.0 < tol < 1.0):
        raise ParameterError(f"tol = {tol!r} is invalid: accepted 0 < tol < 1")
    m = G.shape[0]
    sure = np.asarray(sure, dtype=int)
    rest = np.setdiff1d(np.arange(m), sure)
    if method == "sparse":
        kept, smallest = _first_basis(scipy.sparse.csr_matrix(G)[rest], tol)
        return RowSelection(np.concatenate([sure, rest[kept]]), rest[~kept], smallest)
    if not rest.size:
        return RowSelection(sure, rest, 0.0)
    G = G.toarray() if scipy.sparse.issparse(G) else np.asarray(G, dtype=float)
    if not np.all(np.isfinite(G[rest])):
        raise ParameterError("the constraint Jacobian has non-finite entries: no rank")
    _, r, piv = scipy.linalg.qr(G[rest].T, mode="economic", pivoting=True)
    pivots = np.abs(np.diag(r))
    largest = max(pivots[0], np.finfo(float).tiny) if pivots.size else 1.0
    rank = int(np.sum(pivots > tol * largest))
    return RowSelection(np.concatenate([sure, rest[piv[:rank]]]), rest[piv[rank:]],
                        pivots[rank - 1] / largest if rank else 0.0)


def _first_basis(G: scipy.sparse.csr_matrix, tol: float) -> tuple[np.ndarray, float]:
    """(kept, smallest pivot): the rows of G kept by the row-by-row Givens QR of
    ``native/redundancy.c`` (a boolean mask) and the smallest |R_kk| of the kept rows
    over the largest row norm.  The columns in reverse Cuthill-McKee order of the
    pattern of G^T G, whose band R's rows stay in."""
    m, n = G.shape
    if m == 0:
        return np.zeros(0, bool), 0.0
    G = G.copy()
    G.sum_duplicates()
    pattern = scipy.sparse.csr_matrix((np.ones(G.nnz), G.indices, G.indptr), shape=G.shape)
    order = scipy.sparse.csgraph.reverse_cuthill_mckee(
        (pattern.T @ pattern).tocsr(), symmetric_mode=True)
    position = np.empty(n, dtype=np.int32)
    position[order] = np.arange(n, dtype=np.int32)
    placed = position[G.indices]
    first = np.minimum.reduceat(placed, G.indptr[:-1]) if G.nnz else np.zeros(0, int)
    last = np.maximum.reduceat(placed, G.indptr[:-1]) if G.nnz else np.zeros(0, int)
    nonempty = np.diff(G.indptr) > 0
    width = int((last - first)[nonempty[:first.size]].max()) + 1 if G.nnz else 1
    norms = np.sqrt(np.asarray(G.multiply(G).sum(axis=1)).ravel())
    scale = float(norms.max()) if norms.size else 0.0
    if not np.isfinite(scale):
        raise ParameterError("the constraint Jacobian has non-finite entries: no rank")
    if scale == 0.0:
        return np.zeros(m, bool), 0.0
    R = np.zeros(n * width)
    filled = np.zeros(n, dtype=np.int32)
    kept = np.zeros(m, dtype=np.int32)
    code = _library().rank_rows(m, n, width, G.indptr.astype(np.int32),
                                G.indices.astype(np.int32), np.ascontiguousarray(G.data),
                                position, tol * scale, R, filled, np.zeros(n + width), kept)
    if code == _NONFINITE:
        raise ParameterError("the constraint Jacobian has non-finite entries: no rank")
    if code < 0:        # the band is taken from the rows themselves: a bug if reached
        raise RuntimeError(f"rank_rows: a row wider than the band of {width} columns")
    pivots = np.abs(R.reshape(n, width)[filled.astype(bool), 0])
    return kept.astype(bool), float(pivots.min() / scale) if pivots.size else 0.0


def exclusive_rows(G, joints: list, independent: list, tol: float) -> np.ndarray:
    """Row indices of the constraints ``independent`` (of ``joints``, whose rows are
    stacked in G, dense or scipy sparse, in that order), each verified to have columns
    no other constraint touches, on which its own rows have full rank (ParameterError
    naming one that fails): any dependence among the rows has zero weight on them."""
    if not len(independent):
        return np.zeros(0, int)
    G = scipy.sparse.csr_matrix(G)
    offsets = np.concatenate([[0], np.cumsum([j.n_eq for j in joints])]).astype(int)
    position = {id(j): k for k, j in enumerate(joints)}
    owner = np.repeat(np.arange(len(joints)), np.diff(offsets))
    rows_of = scipy.sparse.csr_matrix((np.ones(G.shape[0]), (owner, np.arange(G.shape[0]))),
                                      shape=(len(joints), G.shape[0]))
    touched = (rows_of @ (abs(G) > 0).astype(float)).tocsr()
    count = np.asarray((touched > 0).sum(axis=0)).ravel()
    scale = tol * max(float(abs(G).max()) if G.nnz else 0.0, np.finfo(float).tiny)
    rows = []
    for joint in independent:
        if id(joint) not in position:
            raise ParameterError(f"independent constraint {joint!r} is not in this system")
        k = position[id(joint)]
        cols = touched[k].indices[touched[k].data > 0]
        own = cols[count[cols] == 1]
        block = G[offsets[k]:offsets[k + 1]][:, own].toarray()
        sv = np.linalg.svd(block, compute_uv=False) if block.size else np.zeros(0)
        if np.sum(sv > scale) < joint.n_eq:
            raise ParameterError(
                f"constraint {joint.name!r} given as independent has no columns of its "
                f"own on which its {joint.n_eq} rows have full rank: accepted are "
                "constraints with such columns (or leave it out of 'independent')")
        rows.append(np.arange(offsets[k], offsets[k + 1]))
    return np.unique(np.concatenate(rows))


def rank_along(system, configurations, t: float = 0.0, method: str = "sparse",
               tol: float = RANK_TOLERANCE) -> list[tuple[int, int, float]]:
    """Where the rank of a system's constraint rows changes along a path: for each
    configuration q of ``configurations`` (taken as given, not projected), (rank of all
    rows, rank of the rows the solvers keep, the smallest pivot of the kept rows over
    the largest row norm, :attr:`RowSelection.smallest_pivot`).  The kept rows are a
    basis on the whole path while their rank stays their number and that pivot stays
    away from ``tol``; the rank of all rows drops where the mechanism passes a
    singular configuration (the ungeared ring truss at full deployment)."""
    kept = system.kept_rows
    out = []
    for q in configurations:
        G = system.constraint_terms_sparse(t, np.asarray(q, dtype=float),
                                           np.zeros(system.n), all_rows=True)[1]
        every = dependent_rows(G, tol, method=method)
        solvers = every if kept is None else dependent_rows(G[kept], tol, method=method)
        out.append((every.rank, solvers.rank, solvers.smallest_pivot))
    return out


class AllRows(ConstrainedProblem):
    """The constraints of a System with every row, dependent ones included (for the
    projection that precedes the search for them)."""

    def __init__(self, system):
        self.system, self.n, self.m = system, system.n, system.m_all

    def constraints(self, t, q):
        # through the sparse evaluation: no dense m x n G where q is on the constraints
        # already (the ring truss's configurations), the usual case
        return self.system.constraint_terms_sparse(t, q, np.zeros(self.n), all_rows=True)[0]

    def constraint_jacobian(self, t, q):
        return self.system.all_constraint_jacobian(t, q)

    def multiplier_names(self):
        return self.system.all_equation_names()
