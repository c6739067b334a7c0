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

import numpy as np
import scipy.linalg

from mbdcore.blocks import ParameterError
from mbdcore.dae.problem import ConstrainedProblem

__all__ = ["REDUNDANT_POLICIES", "RANK_TOLERANCE", "RowSelection", "dependent_rows",
           "exclusive_rows", "AllRows"]

#: What a System does with constraint equations that depend on the others at the
#: assembled initial configuration (over-constrained mechanisms: a planar four-bar built
#: in 3D, Bricard's linkage, ring trusses): ``keep`` them all (the planar default; the
#: solvers then need G of full row rank), ``remove`` the dependent rows, or raise an
#: ``error`` naming them.
REDUNDANT_POLICIES = ("keep", "remove", "error")
#: A pivot of the rank-revealing factorisation below this fraction of the largest row
#: norm of G marks a dependent constraint equation.
RANK_TOLERANCE = 1e-8


class RowSelection:
    """Which rows of G a rank-revealing factorisation keeps: ``kept`` (sorted row
    indices, a basis of G's row space), ``dependent`` (sorted, the others) and
    ``rank`` (the number kept)."""

    def __init__(self, kept: np.ndarray, dependent: np.ndarray):
        self.kept = np.sort(np.asarray(kept, dtype=int))
        self.dependent = np.sort(np.asarray(dependent, dtype=int))
        self.rank = int(self.kept.size)


def dependent_rows(G: np.ndarray, tol: float = RANK_TOLERANCE, sure=()) -> RowSelection:
    """The rows of ``G`` (m, n) that depend on the others: a QR factorisation of G^T
    with column pivoting (a rank-revealing QR, Golub & Van Loan, Matrix Computations,
    4th ed., section 5.4.2) orders the rows by independence; those whose pivot falls
    below ``tol`` times the largest are dependent.  ``sure``: rows known independent of
    all the others (:func:`exclusive_rows`), kept without entering the QR."""
    m = G.shape[0]
    sure = np.asarray(sure, dtype=int)
    rest = np.setdiff1d(np.arange(m), sure)
    if rest.size:
        _, r, piv = scipy.linalg.qr(G[rest].T, mode="economic", pivoting=True)
        pivots = np.abs(np.diag(r))
        rank = int(np.sum(pivots > tol * max(pivots[0], np.finfo(float).tiny))) \
            if pivots.size else 0
    else:
        piv, rank = np.zeros(0, int), 0
    return RowSelection(np.concatenate([sure, rest[piv[:rank]]]), rest[piv[rank:]])


def exclusive_rows(G: np.ndarray, joints: list, independent: list, tol: float) -> np.ndarray:
    """Row indices of the constraints ``independent`` (of ``joints``, whose rows are
    stacked in G in that order), each verified to have columns no other constraint
    touches, on which its own rows have full rank (ParameterError naming one that
    fails): any dependence among the rows has zero weight on them."""
    if not len(independent):
        return np.zeros(0, int)
    offsets = np.concatenate([[0], np.cumsum([j.n_eq for j in joints])])
    position = {id(j): k for k, j in enumerate(joints)}
    touched = np.logical_or.reduceat(G != 0.0, offsets[:-1], axis=0) \
        if G.shape[0] else np.zeros((0, G.shape[1]), bool)
    count = touched.sum(axis=0)
    scale = tol * max(float(np.abs(G).max()), np.finfo(float).tiny)
    rows = []
    for joint in independent:
        if id(joint) not in position:
            raise ParameterError(f"independent constraint {joint!r} is not in this system")
        k = position[id(joint)]
        own = np.flatnonzero(touched[k] & (count == 1))
        block = G[offsets[k]:offsets[k + 1]][:, own]
        sv = np.linalg.svd(block, compute_uv=False) if block.size else np.zeros(0)
        if np.sum(sv > scale) < joint.n_eq:
            raise ParameterError(
                f"constraint {joint.name!r} given as independent has no columns of its "
                f"own on which its {joint.n_eq} rows have full rank: accepted are "
                "constraints with such columns (or leave it out of 'independent')")
        rows.append(np.arange(offsets[k], offsets[k + 1]))
    return np.unique(np.concatenate(rows))


class AllRows(ConstrainedProblem):
    """The constraints of a System with every row, dependent ones included (for the
    projection that precedes the search for them)."""

    def __init__(self, system):
        self.system, self.n, self.m = system, system.n, system.m_all

    def constraints(self, t, q):
        return self.system.all_constraints(t, q)

    def constraint_jacobian(self, t, q):
        return self.system.all_constraint_jacobian(t, q)

    def multiplier_names(self):
        return self.system.all_equation_names()
