"""The sparse LU in C (mbdcore.dae.sparse_solver, native/sparse_lu.c; issue 23): solutions
against dense LAPACK and SuperLU to tolerances from the condition number, matrices that
need pivoting (zero diagonals, saddle points), the engine's own Newton matrices, the
fill of matrices whose elimination has none, refactorisation equal to factorisation,
singular and non-finite matrices reported, the index-3 sparse path equal with either
factorisation, and the C compiling alone under -pedantic."""
import subprocess
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse
import scipy.sparse.linalg
from scipy.sparse.linalg import LinearOperator, onenormest, splu

import mbdcore.dae.sparse_solver as sparse_solver
from mbdcore.cbuild import compile_shared, find_compiler
from mbdcore.dae.index1 import assemble
from mbdcore.dae.schemes import GeneralizedAlpha
from mbdcore.multibody.ancf import cantilever
from mbdcore.dae.sparse_solver import SPARSE_LU_C_SOURCE, SingularMatrixError, SparseLU
from support.newton_matrices import (
    cable_net_problem,
    newton_matrices,
    ring_truss_matrices,
    ring_truss_problem,
)

EPS = np.finfo(float).eps


def _cond1(A) -> float:
    """1-norm condition number of sparse A, its inverse's norm estimated through SuperLU
    (exact for the small matrices, where it is computed densely)."""
    if A.shape[0] <= 400:
        return float(np.linalg.cond(A.toarray(), 1))
    lu = splu(scipy.sparse.csc_matrix(A))
    inverse = LinearOperator(A.shape, matvec=lu.solve, rmatvec=lambda x: lu.solve(x, "T"))
    return float(scipy.sparse.linalg.norm(A, 1) * onenormest(inverse))


def _assert_solves(A, lu, rng, rhs=2):
    """x = A^-1 b to the accuracy a backward-stable solve has: relative error within
    cond(A) times a growth allowance of 1e3 times eps, against SuperLU's solution."""
    b = rng.standard_normal((A.shape[0], rhs))
    x = lu.solve(b)
    reference = splu(scipy.sparse.csc_matrix(A)).solve(b)
    bound = 1e3 * _cond1(A) * EPS
    assert bound < 1e-2, "too ill-conditioned a test matrix"
    error = np.abs(x - reference).max() / np.abs(reference).max()
    assert error <= bound, (error, bound)


def _random_invertible(n, density, rng, zero_diagonal_fraction=0.5):
    """A random sparse n x n matrix with a full transversal (a scaled random permutation
    added) and a fraction of its diagonal entries removed: pivoting is needed.  (A 1 x 1
    matrix keeps its one entry.)"""
    A = scipy.sparse.random(n, n, density=density, random_state=rng, format="lil")
    perm = rng.permutation(n)
    for i in range(n):
        A[i, perm[i]] = A[i, perm[i]] + 2.0 + rng.random()
    for i in np.flatnonzero(rng.random(n) < zero_diagonal_fraction):
        if perm[i] != i:                  # the transversal kept
            A[i, i] = 0.0
    A = scipy.sparse.csc_matrix(A)
    A.eliminate_zeros()
    return A


def _assert_within_normal_bound(lu):
    """With the A^T A ordering, L below its diagonal and U above it have at most the
    entries of the Cholesky factor of Q^T A^T A Q, whatever rows were pivoted (George
    and Ng 1987): the room the analysis gives is enough."""
    assert lu.ordering == "normal"
    Lp, Li, _, Up, Ui, _, _, _ = lu.factors
    assert Li.size <= lu.cholesky_nnz and Ui.size <= lu.cholesky_nnz


@pytest.mark.parametrize("ordering", ["symmetric", "normal"])
@pytest.mark.parametrize("n, density, seed", [(1, 1.0, 0), (2, 0.5, 1), (7, 0.3, 2),
                                              (40, 0.08, 3), (300, 0.01, 4), (300, 0.01, 5)])
def test_random_matrices_with_zero_diagonals_solve_as_lapack(n, density, seed, ordering):
    rng = np.random.default_rng(seed)
    A = _random_invertible(n, density, rng)
    lu = SparseLU(A, ordering=ordering).factor(A)
    if ordering == "normal":
        _assert_within_normal_bound(lu)
    _assert_solves(A, lu, rng)
    b = rng.standard_normal(n)
    dense = np.linalg.solve(A.toarray(), b)
    assert np.abs(lu.solve(b) - dense).max() <= 1e3 * _cond1(A) * EPS * np.abs(dense).max()
    order = np.sort(lu.order)
    np.testing.assert_array_equal(order, np.arange(n))        # a permutation


def test_saddle_point_matrix_solves_as_lapack():
    """[[K, G^T], [G, 0]]: K symmetric positive definite banded, G of full row rank; the
    zero block has no diagonal to pivot on."""
    rng = np.random.default_rng(23)
    n, m = 120, 30
    K = scipy.sparse.diags([-1.0, 2.5, -1.0], [-1, 0, 1], shape=(n, n)) \
        + scipy.sparse.diags(rng.random(n))
    G = scipy.sparse.random(m, n, density=0.04, random_state=rng) \
        + scipy.sparse.csr_matrix((np.ones(m), (np.arange(m), 4 * np.arange(m))), shape=(m, n))
    A = scipy.sparse.bmat([[K, G.T], [G, None]], format="csc")
    lu = SparseLU(A).factor(A)
    _assert_solves(A, lu, rng)


def test_no_fill_where_elimination_makes_none():
    """An arrow matrix (dense last row and column, diagonal otherwise) and a tridiagonal
    one: minimum degree finds orders without fill, so L + U holds exactly A's entries
    (the Cholesky count of the ordered pattern is A's strictly lower entries), whatever
    order the arrow's dense node is numbered in."""
    n = 50
    arrow = scipy.sparse.lil_matrix((n, n))
    arrow.setdiag(4.0 + np.arange(n))
    arrow[0, :] = 1.0
    arrow[:, 0] = 1.0
    arrow[0, 0] = 100.0 * n
    tridiagonal = scipy.sparse.diags([-1.0, 4.0, -1.0], [-1, 0, 1], shape=(n, n))
    for A in (scipy.sparse.csc_matrix(arrow), scipy.sparse.csc_matrix(tridiagonal)):
        lu = SparseLU(A).factor(A)
        assert lu.cholesky_nnz == n - 1
        assert lu.lu_nnz == A.nnz
        _assert_solves(A, lu, np.random.default_rng(1))


@pytest.mark.parametrize("k", [24, 60])
def test_ordering_predicts_the_cholesky_fill_of_a_grid(k):
    """The 5-point Laplacian of a k x k grid (symmetric positive definite): the elements
    of the quotient graph are the columns of the Cholesky factor of the ordered matrix,
    so their count equals that factor's (SuperLU on the ordered matrix without
    pivoting; random positive definite values: no cancellation), at k = 60 after the
    quotient graph's lists were compacted (its elements outgrow the room); the order
    fills far less than the natural one, and L + U is that Cholesky pattern twice."""
    T = scipy.sparse.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(k, k))
    A = scipy.sparse.csc_matrix(scipy.sparse.kronsum(T, T))
    n = A.shape[0]
    lu = SparseLU(A).factor(A)
    rng = np.random.default_rng(12)
    B = scipy.sparse.csc_matrix((rng.uniform(0.5, 1.0, A.nnz), A.indices, A.indptr),
                                shape=A.shape)
    B = B + B.T + 10.0 * scipy.sparse.identity(n)

    def cholesky_nnz(M):
        f = splu(scipy.sparse.csc_matrix(M), permc_spec="NATURAL", diag_pivot_thresh=0.0)
        return f.L.nnz - n
    ordered = B[lu.order, :][:, lu.order]
    assert lu.cholesky_nnz == cholesky_nnz(ordered)
    assert lu.cholesky_nnz < 0.5 * cholesky_nnz(B)
    assert lu.lu_nnz == 2 * lu.cholesky_nnz + n
    # the quotient graph's room (slu_analyse_size) is 4 nnz + 2 n; at k = 60 the lists
    # and the elements formed (2 (nnz - n) + cholesky_nnz entries in all) exceed it
    assert (2 * (A.nnz - n) + lu.cholesky_nnz > 4 * A.nnz + 2 * n) == (k == 60)
    _assert_solves(A, lu, rng)


@pytest.fixture(scope="module")
def truss_matrices():
    return ring_truss_matrices(4)


@pytest.fixture(scope="module")
def net_matrices():
    return newton_matrices(cable_net_problem(n_bays=4, net_rings=1), 2)[0]


def test_ring_truss_newton_matrices(truss_matrices):
    """The GGL Newton matrices of the ring truss at 4 bays (648 x 648) as the integrator
    factors them, a zero diagonal block (so the A^T A ordering by default): solutions
    as LAPACK's, within the ordering's bound; the A + A^T ordering solves them too."""
    rng = np.random.default_rng(4)
    for A in truss_matrices:
        lu = SparseLU(A).factor(A)
        _assert_solves(A, lu, rng)
        _assert_within_normal_bound(lu)
        _assert_solves(A, SparseLU(A, ordering="symmetric").factor(A), rng)


def test_cable_net_newton_matrices(net_matrices):
    """The Newton matrices of the deployed truss with its net of tension-only spatial
    ANCF cables (full Newton, GGL)."""
    rng = np.random.default_rng(5)
    for A in net_matrices:
        lu = SparseLU(A).factor(A)
        _assert_solves(A, lu, rng)
        _assert_within_normal_bound(lu)


def _union(*matrices):
    """The union of the matrices' stored entries and the diagonal, explicit zeros
    included (the compiled terms fill fixed patterns, zeros and all; a sum of the
    matrices themselves would drop an entry that is zero now or cancels)."""
    union = scipy.sparse.identity(matrices[0].shape[0], format="csc")
    for A in matrices:
        S = scipy.sparse.csc_matrix(A, copy=True)
        S.data[:] = 1.0
        union = union + S
    return union


def test_refactor_of_the_same_matrix_is_the_factorisation(truss_matrices):
    """Refactoring a matrix on its own pivot order repeats the same operations: the same
    bits; refactoring the next Newton matrix on the first's order solves it."""
    first, later = truss_matrices[0], truss_matrices[-1]
    # the union of their patterns (scipy's sums drop entries that are zero now)
    lu = SparseLU(_union(first, later)).factor(first)
    again = lu.refactored(first)
    for a, b in zip(lu.factors, again.factors):
        np.testing.assert_array_equal(a, b)
    moved = lu.refactored(later)
    _assert_solves(later, moved, np.random.default_rng(6))
    assert lu.factors[2] is not moved.factors[2]          # the first factors unchanged
    _assert_solves(first, lu, np.random.default_rng(6))


def test_refactor_with_a_pivot_gone_bad_factors_afresh():
    """[[4, 1], [1, 4]] is factored on its diagonal; the same pattern with diagonal
    entries 1e-9 fails the threshold test: refactor falls back to a fresh factorisation
    (rows swapped) and still solves it."""
    A = scipy.sparse.csc_matrix(np.array([[4.0, 1.0], [1.0, 4.0]]))
    B = scipy.sparse.csc_matrix(np.array([[1e-9, 1.0], [1.0, 1e-9]]))
    lu = SparseLU(A).factor(A)
    assert lu.refactor_fallbacks == 0
    fresh = lu.refactored(B)
    assert lu.refactor_fallbacks == 1
    b = np.array([1.0, -2.0])
    np.testing.assert_allclose(fresh.solve(b), np.linalg.solve(B.toarray(), b), rtol=1e-14)


def test_entries_dropped_from_the_pattern_are_zeros():
    """A matrix with entries at part of the analysed positions (scipy drops an exact
    zero from a sum) is factored as the pattern with zeros there; one with an entry
    outside the pattern is refused, naming the pattern."""
    rng = np.random.default_rng(8)
    part = _random_invertible(60, 0.05, rng)
    A = part + scipy.sparse.random(60, 60, density=0.03, random_state=rng, format="csc")
    lu = SparseLU(A)
    assert part.nnz < A.nnz and lu.fits(part)
    _assert_solves(part, lu.factored(part), rng)
    _assert_solves(part, lu.factored(A).refactored(part), rng)
    dense = A.toarray()
    i, j = np.argwhere(dense == 0.0)[0]
    outside = A + scipy.sparse.csc_matrix(([1.0], ([i], [j])), shape=A.shape)
    assert not lu.fits(outside)
    with pytest.raises(ValueError, match="pattern"):
        lu.factor(outside)


def test_singular_matrices_are_reported():
    """An empty column (structurally singular), two equal rows (numerically singular:
    the last pivot is rounding), a zero matrix: SingularMatrixError, no factors kept."""
    rng = np.random.default_rng(9)
    A = _random_invertible(30, 0.1, rng).tolil()
    empty = A.copy()
    empty[:, 3] = 0.0
    twin = A.copy()
    twin[5, :] = A[4, :]
    zero = scipy.sparse.csc_matrix((30, 30))
    for M in (empty, twin, zero):
        M = scipy.sparse.csc_matrix(M)
        M.eliminate_zeros()
        lu = SparseLU(M)
        with pytest.raises(SingularMatrixError, match="singular"):
            lu.factor(M)
        assert lu.factors is None
        with pytest.raises(RuntimeError, match="factor"):
            lu.solve(np.ones(30))


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_matrices_are_reported(bad):
    rng = np.random.default_rng(10)
    A = _random_invertible(30, 0.1, rng)
    B = A.copy()
    B.data[17] = bad
    lu = SparseLU(A)
    with pytest.raises(SingularMatrixError, match="non-finite"):
        lu.factor(B)
    good = lu.factored(A)
    with pytest.raises(SingularMatrixError, match="non-finite"):
        good.refactored(B)


def test_several_right_hand_sides_at_once():
    rng = np.random.default_rng(11)
    A = _random_invertible(80, 0.05, rng)
    lu = SparseLU(A).factor(A)
    B = rng.standard_normal((80, 5))
    X = lu.solve(B)
    for k in range(5):
        np.testing.assert_array_equal(X[:, k], lu.solve(B[:, k]))
    np.testing.assert_array_equal(B, np.asarray(B))          # the right-hand side kept


def test_bad_arguments_are_refused():
    A = scipy.sparse.identity(4, format="csc")
    with pytest.raises(ValueError, match="tol"):
        SparseLU(A, tol=0.0)
    with pytest.raises(ValueError, match="ordering"):
        SparseLU(A, ordering="colamd")
    with pytest.raises(ValueError, match="square"):
        SparseLU(scipy.sparse.csc_matrix((3, 4)))
    with pytest.raises(TypeError, match="pattern"):
        SparseLU(np.eye(3))
    lu = SparseLU(A).factor(A)
    with pytest.raises(ValueError, match="shape"):
        lu.factor(scipy.sparse.identity(5, format="csc"))
    with pytest.raises(ValueError, match=r"\(4,\)"):
        lu.solve(np.ones(3))


def test_ring_truss_steps_equal_with_either_sparse_factorisation():
    """Five generalized-alpha steps of the ring truss at 4 bays on the sparse path with
    the project's LU and with SuperLU: the same iterations, positions equal to within
    the Newton tolerance (1e-10 relative), well above the factorisations' rounding."""
    problem = ring_truss_problem(4)
    runs = {}
    for solver in ("native", "superlu"):
        system, q, v, h, _ = problem
        _, integ = newton_matrices(problem, 0, sparse_solver=solver)
        t = 0.0
        for _ in range(5):
            q, v = integ.step(system, t, q, v, h)
            t += h
        runs[solver] = (q, v, integ.stats())
    (q1, v1, s1), (q2, v2, s2) = runs["native"], runs["superlu"]
    assert s1["sparse_solver"] == "native" and s2["sparse_solver"] == "superlu"
    assert s1["newton_iterations"] == s2["newton_iterations"]
    tol = 1e-10
    np.testing.assert_allclose(q1, q2, rtol=0, atol=10 * tol * max(1.0, np.abs(q2).max()))
    np.testing.assert_allclose(v1, v2, rtol=0, atol=10 * tol * max(1.0, np.abs(v2).max()) / h)


@pytest.mark.skipif(find_compiler() is None, reason="no C compiler")
def test_c_compiles_alone_without_warnings(tmp_path):
    """native/sparse_lu.c is plain C99 (it goes into C-source FMUs): no warning under
    -std=c99 -Wall -Wextra -pedantic, no header but the C library's."""
    done = subprocess.run([find_compiler(), "-std=c99", "-Wall", "-Wextra", "-pedantic",
                           "-O2", "-c", str(SPARSE_LU_C_SOURCE), "-o",
                           str(tmp_path / "sparse_lu.o")], capture_output=True, text=True)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    includes = [line for line in SPARSE_LU_C_SOURCE.read_text().splitlines()
                if line.startswith("#include")]
    assert includes == ["#include <float.h>", "#include <math.h>"]


def test_the_integrator_analyses_a_pattern_once(monkeypatch):
    """A hanging ANCF chain of 60 elements (244 coordinates, the sparse path by default):
    its Newton matrix keeps its pattern, so in 8 steps of full Newton (a factorisation
    per iteration) the ordering is made once and every later factorisation refactors
    on the kept pivots."""
    calls = {"analyse": 0, "factor": 0, "refactor": 0}
    for name, key in (("__init__", "analyse"), ("factor", "factor"), ("refactor", "refactor")):
        real = getattr(sparse_solver.SparseLU, name)

        def counting(self, *args, real=real, key=key, **kwargs):
            calls[key] += 1
            return real(self, *args, **kwargs)
        monkeypatch.setattr(sparse_solver.SparseLU, name, counting)
    system = cantilever(length=6.0, n_elements=60, ei=1.0, ea=1e5, gravity=(0.0, -9.81),
                        direction=-1.27)
    q, v = assemble(system)
    integ = GeneralizedAlpha(iteration="newton")
    t = 0.0
    for _ in range(8):
        q, v = integ.step(system, t, q, v, 1e-3)
        t += 1e-3
    stats = integ.stats()
    assert stats["sparse"] == "auto" and integ.uses_sparse(system)
    assert stats["factorizations"] >= 8
    assert calls["analyse"] == 1
    assert calls["factor"] == 1 and calls["refactor"] == stats["factorizations"] - 1


def test_pivot_state_makes_the_same_refactorisations(truss_matrices):
    """A SparseLU made again from its plain pivot state (what an FMU state holds: arrays,
    numbers, a string) refactors a later matrix to the same bits as the original."""
    first, later = truss_matrices[0], truss_matrices[-1]
    lu = SparseLU(_union(first, later)).factor(first).refactored(later)
    state = lu.pivot_state()
    assert all(isinstance(v, (np.ndarray, str, float, int)) for v in state.values())
    again = SparseLU.from_pivot_state(state)
    for a, b in zip(lu.refactored(first).factors, again.refactored(first).factors):
        np.testing.assert_array_equal(a, b)


@pytest.mark.skipif(find_compiler() is None, reason="no C compiler")
def test_c_alone_factors_with_the_room_its_analysis_gives(tmp_path):
    """tests/support/c/sparse_lu_driver.c: sparse_lu.c from C only, static arrays, the
    room for L and U exactly the A^T A ordering's count: a 4 x 4 saddle point factored,
    solved, refactored with its entries doubled and solved again, as LAPACK solves it."""
    driver = Path(__file__).resolve().parents[2] / "support" / "c" / "sparse_lu_driver.c"
    program = compile_shared([driver, SPARSE_LU_C_SOURCE], tmp_path / "driver",
                             shared=False, warnings_are_errors=True,
                             flags=("-std=c99", "-O2", "-Wall", "-Wextra", "-pedantic"))
    out = subprocess.run([str(program)], capture_output=True, text=True, check=True).stdout
    lines = out.splitlines()
    A = np.array([[4.0, 1.0, 0.0, 1.0], [1.0, 4.0, 1.0, 0.0], [0.0, 1.0, 4.0, 1.0],
                  [1.0, 0.0, 1.0, 0.0]])
    b = np.arange(1.0, 5.0)
    bound = 1e3 * np.linalg.cond(A, 1) * EPS
    for line, M in zip(lines[1:], (A, 2.0 * A)):
        x = np.array(line.split(), dtype=float)
        reference = np.linalg.solve(M, b)
        assert np.abs(x - reference).max() <= bound * np.abs(reference).max()
    assert int(lines[0]) >= 0 and len(lines) == 3
