"""The dependent constraint rows (mbdcore.multibody.redundancy): the sparse row-by-row
Givens check against the dense QR on ring trusses with and without their cable net, the
rank along a deployment, and bad input."""
from __future__ import annotations

import math
import subprocess

import numpy as np
import pytest
import scipy.linalg

from mbdcore.blocks import ParameterError
from mbdcore.cbuild import find_compiler
from mbdcore.models.cable_net import add_cable_net
from mbdcore.models.mechanisms import four_bar
from mbdcore.models.ring_truss import ring_truss
from mbdcore.models.spatial_mechanisms import bricard, spatial_twin
from mbdcore.multibody.redundancy import (
    RANK_TOLERANCE,
    REDUNDANCY_C_SOURCE,
    dependent_rows,
    rank_along,
)


def _all_rows_jacobian(system, q):
    return system.constraint_terms_sparse(0.0, q, np.zeros(system.n), all_rows=True)[1]


def _assert_first_basis(G: np.ndarray, kept: np.ndarray, dependent: np.ndarray) -> None:
    """``kept`` is the first basis of G's row space in row order, checked densely by a
    Householder QR of G[kept]^T without pivoting (column j of Q spans what kept row j
    adds to the kept rows before it): every kept row stands off the span of the rows
    before it by more than the rank tolerance (|R_jj|, its distance to that span), and
    every dependent row lies in the span of the kept rows before it to round-off."""
    scale = np.linalg.norm(G, axis=1).max()
    Q, R = scipy.linalg.qr(G[kept].T, mode="economic")
    assert np.abs(np.diag(R)).min() > RANK_TOLERANCE * scale
    for i in dependent:
        before = int(np.searchsorted(kept, i))
        Qb = Q[:, :before]
        residual = G[i] - Qb @ (Qb.T @ G[i])
        # an orthonormal basis from Householder reflections: round-off of order
        # eps * sqrt(n) * |g_i| whatever the conditioning of the rows
        assert np.linalg.norm(residual) < 1e-11 * scale, i


@pytest.fixture(scope="module", params=[4, 6, 8, 12])
def deployed_truss(request):
    return ring_truss(n_bays=request.param, drive=False, latch=False, folded_angle=1.0)


def test_sparse_check_keeps_a_basis_of_the_dense_qr_rank_on_ring_trusses(deployed_truss):
    """At full deployment, where the truss judges its rows: as many dependent rows as
    the dense pivoted QR finds (27, 37, 47, 67 for 4, 6, 8, 12 bays: 5 N + 7), the kept
    rows of full rank and the first basis in row order.  Which rows the dense QR drops
    among equivalent ones follows the round-off of near-equal column norms (other
    names under another OpenBLAS kernel), so it is compared by rank and span, not by
    name."""
    system = deployed_truss.system
    G = _all_rows_jacobian(system, deployed_truss.coordinates(math.pi / 2))
    sparse = dependent_rows(G, method="sparse")
    dense = dependent_rows(G.toarray(), method="dense")
    assert sparse.dependent.size == dense.dependent.size == 5 * deployed_truss.n_bays + 7
    assert system.redundant_equations == [system.all_equation_names()[i]
                                          for i in sparse.dependent]
    assert dependent_rows(G[sparse.kept].toarray(), method="dense").dependent.size == 0
    _assert_first_basis(G.toarray(), sparse.kept, sparse.dependent)


@pytest.mark.parametrize("make, expected", [
    (bricard, ["P6.moment_2"]),
    (lambda: spatial_twin(four_bar()), None),
])
def test_sparse_check_on_the_spatial_mechanisms_with_redundant_rows(make, expected):
    """Bricard's linkage (Grübler 0, mobility 1: one dependent row) and the planar
    four-bar built in 3D (three): the dense QR's rank, the first basis in row order,
    at the assembled configuration where the system judges them."""
    system = make()
    found = system.check_redundancy()
    q = system.initial_state()[0]
    G = system.all_constraint_jacobian(0.0, q)
    dense = dependent_rows(G, method="dense")
    sparse = dependent_rows(G, method="sparse")
    assert len(found) == sparse.dependent.size == dense.dependent.size \
        == (1 if expected else 3)
    if expected:
        assert found == expected
    _assert_first_basis(G, sparse.kept, sparse.dependent)


@pytest.fixture(scope="module", params=[4, 6])
def truss_with_net(request):
    truss = ring_truss(n_bays=request.param, drive=False, latch=False,
                       folded_angle=math.pi / 2)
    return truss, add_cable_net(truss, net_rings=1)


def test_sparse_check_with_the_net_keeps_every_net_row(truss_with_net):
    """With the net: the dense QR's rank (its net rows kept out as independent, as the
    net is built), every net row kept, the same rows kept whether the net's joints are
    declared independent or go through the factorisation (they have columns of their
    own, so no earlier row can span them and they span no later one), the first basis."""
    truss, net = truss_with_net
    system = truss.system
    q = net.form_coordinates()
    found = list(system.redundant_equations)
    assert found and not any(name.startswith("net_") for name in found)
    assert system.check_redundancy(0.0, q) == found
    G = _all_rows_jacobian(system, q)
    names = system.all_equation_names()
    net_rows = np.array([i for i, name in enumerate(names) if name.startswith("net_")])
    dense = dependent_rows(G.toarray(), method="dense", sure=net_rows)
    sparse = dependent_rows(G, method="sparse")
    assert sparse.dependent.size == dense.dependent.size == len(found)
    _assert_first_basis(G.toarray(), sparse.kept, sparse.dependent)


def test_kept_rows_stay_a_basis_along_the_deployment_and_the_ring_loses_rank_deployed():
    """The geared 4-bay truss (one degree of freedom): along the deployment all rows
    have rank n - 1 and the rows kept at full deployment rank their number, their
    smallest pivot far from the tolerance (measured 0.02 to 0.04 of the largest row
    norm).  The ungeared 6-bay ring has N - 3 = 3 degrees of freedom folded and N - 1 =
    5 at full deployment, where its horizontal closure is stationary
    (docs/ring_truss.md): there the rank of all rows drops, found alike by the sparse
    and the dense check."""
    geared = ring_truss(n_bays=4, drive=False, latch=False, folded_angle=1.0)
    system = geared.system
    angles = (0.3, 0.8, 1.2, 1.5, math.pi / 2)
    profile = rank_along(system, [geared.coordinates(a) for a in angles])
    for every, kept, smallest in profile:
        assert every == system.n - 1 == kept == system.m
        assert smallest > 1e-3
    free = ring_truss(n_bays=6, drive=False, latch=False, folded_angle=1.0, gears=False)
    q = [free.coordinates(a) for a in (1.0, 1.5, math.pi / 2)]
    for method in ("sparse", "dense"):
        mobility = [free.system.n - every
                    for every, _, _ in rank_along(free.system, q, method=method)]
        assert mobility == [3, 3, 5]


def test_bad_input_is_named():
    G = np.array([[1.0, 0.0], [0.0, np.nan]])
    for method in ("sparse", "dense"):
        with pytest.raises(ParameterError, match="non-finite"):
            dependent_rows(G, method=method)
    with pytest.raises(ParameterError, match="method = 'qr'.*'dense', 'sparse'"):
        dependent_rows(np.eye(2), method="qr")
    with pytest.raises(ParameterError, match="tol = 0.0.*0 < tol < 1"):
        dependent_rows(np.eye(2), tol=0.0)
    with pytest.raises(ParameterError, match="method = 'svd'"):
        bricard().check_redundancy(method="svd")


def test_a_zero_row_and_a_repeated_row_are_dependent():
    """The smallest cases: a zero row, a row repeated (the later one dropped), a row a
    combination of earlier ones, each found alike by both methods."""
    G = np.array([[1.0, 2.0, 0.0], [0.0, 0.0, 0.0], [1.0, 2.0, 0.0], [0.0, 1.0, 1.0],
                  [1.0, 3.0, 1.0]])
    assert list(dependent_rows(G, method="sparse").dependent) == [1, 2, 4]
    assert dependent_rows(G, method="dense").dependent.size == 3


@pytest.mark.skipif(find_compiler() is None, reason="no C compiler")
def test_c_compiles_alone_without_warnings(tmp_path):
    """native/redundancy.c is plain C99: no warning under -std=c99 -Wall -Wextra
    -pedantic, no header but the C library's."""
    done = subprocess.run([find_compiler(), "-std=c99", "-Wall", "-Wextra", "-pedantic",
                           "-O2", "-c", str(REDUNDANCY_C_SOURCE), "-o",
                           str(tmp_path / "redundancy.o")], capture_output=True, text=True)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    includes = [line for line in REDUNDANCY_C_SOURCE.read_text().splitlines()
                if line.startswith("#include")]
    assert includes == ["#include <float.h>", "#include <math.h>"]
