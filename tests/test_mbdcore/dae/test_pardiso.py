"""The optional parallel sparse solver of the sparse Newton path, MKL's PARDISO through
pypardiso (``sparse_solver="pardiso"``, the extra ``parallel``): the same Newton
iterates as SuperLU on ring truss steps, and a clear error when the package is
missing."""
from __future__ import annotations

import importlib.util
import sys

import numpy as np
import pytest

from mbdcore.dae.schemes import GeneralizedAlpha
from mbdcore.dae.sparse_solver import PARDISO_SLOTS, PardisoAnalysis, SparseLU, pardiso_factors
from support.newton_matrices import newton_matrices, ring_truss_problem

HAS_PARDISO = importlib.util.find_spec("pypardiso") is not None


@pytest.mark.skipif(not HAS_PARDISO, reason="pypardiso (the extra 'parallel') is not installed")
def test_ring_truss_steps_equal_with_pardiso_and_superlu():
    """Five generalized-alpha steps of the 4-bay ring truss on the sparse path, full
    Newton, factored by PARDISO and by SuperLU: the same iterations in every step and
    positions and velocities equal to within the Newton tolerance (1e-10 relative):
    the two factorisations differ by rounding, kappa(J) eps, far below it."""
    problem = ring_truss_problem(4)
    runs = {}
    for solver in ("superlu", "pardiso"):
        system, q, v, h, _ = problem
        _, integ = newton_matrices(problem, 0, sparse_solver=solver, iteration="newton")
        t, iterations = 0.0, []
        for _ in range(5):
            before = integ.stats()["newton_iterations"]
            q, v = integ.step(system, t, q, v, h)
            iterations.append(integ.stats()["newton_iterations"] - before)
            t += h
        runs[solver] = (q, v, iterations, integ.stats())
    (q1, v1, it1, s1), (q2, v2, it2, s2) = runs["superlu"], runs["pardiso"]
    assert s2["sparse_solver"] == "pardiso" and s2["failures"] == 0
    assert it1 == it2
    tol = 1e-10
    np.testing.assert_allclose(q2, q1, rtol=0, atol=10 * tol * max(1.0, np.abs(q1).max()))
    np.testing.assert_allclose(v2, v1, rtol=0, atol=10 * tol * max(1.0, np.abs(v1).max()) / h)


@pytest.mark.skipif(not HAS_PARDISO, reason="pypardiso (the extra 'parallel') is not installed")
def test_pardiso_refuses_what_it_cannot_factor():
    """A non-finite matrix and one with an empty row give no factors (None), as the
    other factorisations of the Newton path."""
    import scipy.sparse
    A = scipy.sparse.csr_matrix(np.array([[2.0, 1.0], [1.0, np.inf]]))
    assert pardiso_factors(A) is None
    assert pardiso_factors(scipy.sparse.csr_matrix(np.array([[1.0, 0.0], [0.0, 0.0]]))) is None
    lu = pardiso_factors(scipy.sparse.csr_matrix(np.array([[4.0, 1.0], [2.0, 3.0]])))
    np.testing.assert_allclose(lu.solve(np.array([1.0, 2.0])), [0.1, 0.6], rtol=1e-14)


@pytest.mark.skipif(not HAS_PARDISO, reason="pypardiso (the extra 'parallel') is not installed")
def test_pardiso_analyses_a_pattern_once_and_solves_as_the_native_lu():
    """Full Newton on the 4-bay truss: every iteration factors a new matrix.  Their
    pattern grows over the first iterations from rest (entries zero at v = 0 appear),
    then stays: PARDISO analyses each new pattern once (phase 11, counted; the union
    with the last) and factors every later matrix on that analysis (phase 22 only).
    Each matrix's solution equals the native LU's to the conditioning of the matrix:
    |x_P - x_N| <= c kappa(J) eps |x|; factors made before more than PARDISO_SLOTS
    later ones (their slot taken) still solve their own matrix."""
    import scipy.sparse
    matrices, integ = newton_matrices(ring_truss_problem(4), 4, sparse_solver="pardiso",
                                      iteration="newton")
    stats = integ.stats()
    assert len(matrices) == stats["factorizations"]
    # the patterns' growth, from the recorded matrices
    union, grown = None, []
    for k, J in enumerate(matrices):
        ones = scipy.sparse.csc_matrix((np.ones(J.nnz), J.indices, J.indptr), shape=J.shape)
        if union is None or (union + ones).nnz > union.nnz:
            grown.append(k)
            union = ones if union is None else union + ones
    assert stats["pardiso_analyses"] == len(grown)
    # the last analysis served every factorisation since: several of one pattern
    assert integ._pardiso_analysis.factorizations == len(matrices) - grown[-1] >= 4

    fresh = PardisoAnalysis(union, matrices[-1])
    kept = [fresh.factor(J) for J in matrices]          # more than the slots: reused
    assert len(matrices) > PARDISO_SLOTS
    rng = np.random.default_rng(5)
    for J, factors in zip(matrices, kept):
        b = rng.standard_normal(J.shape[0])
        x_native = SparseLU(J).factor(J).solve(b)
        x_pardiso = factors.solve(b)
        kappa = np.linalg.cond(J.toarray())
        bound = 100 * kappa * np.finfo(float).eps * np.abs(x_native).max()
        assert np.abs(x_pardiso - x_native).max() <= bound
    # the first factors' slot was taken: their solve factored them again, no analysis
    assert fresh.factorizations > len(matrices)


@pytest.mark.skipif(not HAS_PARDISO, reason="pypardiso (the extra 'parallel') is not installed")
def test_pardiso_analyses_again_when_the_pattern_changes():
    """A matrix with an entry outside the analysed pattern gets a new analysis of the
    union of both patterns (one more phase 11), on which the first pattern factors
    again without a third."""
    import scipy.sparse
    from mbdcore.dae.newton_matrix import ScaledNewtonEquations

    class Newton(ScaledNewtonEquations):
        sparse_solver = "pardiso"
        _pardiso_analysis = None
        pardiso_analyses = 0
    newton = Newton()
    A = scipy.sparse.csc_matrix(np.array([[4.0, 1.0, 0.0], [1.0, 3.0, 0.0], [0.0, 0.0, 2.0]]))
    B = scipy.sparse.csc_matrix(np.array([[4.0, 0.0, 1.0], [1.0, 3.0, 0.0], [1.0, 0.0, 2.0]]))
    b = np.array([1.0, 2.0, 3.0])
    for J, analyses in ((A, 1), (A, 1), (B, 2), (A, 2), (B, 2)):
        x = newton._pardiso_factor(J).solve(b)
        assert newton.pardiso_analyses == analyses
        np.testing.assert_allclose(J @ x, b, rtol=0, atol=1e-14 * 10)


def test_a_missing_pardiso_is_named_with_its_extra(monkeypatch):
    """Without pypardiso, asking for it names the package and the extra to install."""
    monkeypatch.setitem(sys.modules, "pypardiso", None)      # import fails as if absent
    with pytest.raises(ImportError, match=r"pypardiso.*flexcosim\[parallel\]"):
        GeneralizedAlpha(sparse=True, sparse_solver="pardiso")
