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
from mbdcore.dae.sparse_solver import pardiso_factors
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


def test_a_missing_pardiso_is_named_with_its_extra(monkeypatch):
    """Without pypardiso, asking for it names the package and the extra to install."""
    monkeypatch.setitem(sys.modules, "pypardiso", None)      # import fails as if absent
    with pytest.raises(ImportError, match=r"pypardiso.*flexcosim\[parallel\]"):
        GeneralizedAlpha(sparse=True, sparse_solver="pardiso")
