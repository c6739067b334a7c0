"""Sparse linear algebra for large systems (issue 4, item 6).

The sparse path assembles M, the force Jacobians and G as scipy sparse matrices and
factors the implicit integrators' iteration matrix with SuperLU; it must give the
trajectory of the dense path, and a long ANCF chain must step without an n x n array.
"""
import math
import pickle

import numpy as np
import pytest
import scipy.sparse

import mbdcore.dae.index1 as formulations
import mbdcore.dae.index3 as implicit
import mbdcore.dae.newton_matrix as newton_matrix
from mbdcore.multibody.ancf import ANCFBeam, cantilever
from mbdcore.multibody.flexible import FiniteSegmentBeam, ModalBeam
from mbdcore.dae.index1 import assemble
from mbdcore.dae.simulate import integrate, simulate
from mbdcore.dae.schemes import GeneralizedAlpha
from mbdcore.dae.sparse_solver import SparseLU
from mbdcore.models.mechanisms import hub_beam, slider_crank, two_link_arm
from mbdcore.multibody.system import System
from mbdcore.spatial import spatial_system_block


def hanging_chain(n_elements, element_length=0.1, tilt=0.3):
    """A chain of ANCF elements clamped at the top, hanging 0.3 rad off the vertical
    under gravity (a soft rope: EI = 1 N m^2, EA = 1e5 N, rho A = 1 kg/m)."""
    return cantilever(length=element_length * n_elements, n_elements=n_elements, ei=1.0,
                      ea=1e5, gravity=(0.0, -9.81), direction=-math.pi / 2 + tilt)


def _run(system, t_end, sparse, h=1e-3):
    return simulate(system, t_end, h, "generalized-alpha", formulation="index3", rho_inf=0.8,
                    sparse=sparse)


def _assert_same_trajectory(dense, sparse):
    # same Newton iterations on the same matrix up to rounding: the paths differ by
    # the rounding of the two factorisations, far below the Newton tolerance
    assert sparse.stats["newton_iterations"] == dense.stats["newton_iterations"]
    np.testing.assert_allclose(sparse.q, dense.q, rtol=0, atol=1e-10)
    np.testing.assert_allclose(sparse.v, dense.v, rtol=0, atol=1e-10 * np.abs(dense.v).max())
    np.testing.assert_allclose(sparse.lam, dense.lam, rtol=0,
                               atol=1e-10 * np.abs(dense.lam).max())


def test_cantilever_under_gravity_sparse_equals_dense():
    """20 ANCF elements (84 coordinates) falling under their own weight, 0.2 s."""
    make = lambda: cantilever(n_elements=20, ea=1e5, gravity=(0.0, -9.81))
    dense, sparse = _run(make(), 0.2, False), _run(make(), 0.2, True)
    assert dense.stats["sparse"] is False and sparse.stats["sparse"] is True
    _assert_same_trajectory(dense, sparse)
    assert np.abs(dense.q[-1] - dense.q[0]).max() > 0.1      # it did fall


def test_slider_crank_sparse_equals_dense():
    """Rigid bodies, a spring (finite-difference Jacobians) and a motor torque."""
    dense, sparse = _run(slider_crank(), 0.5, False), _run(slider_crank(), 0.5, True)
    _assert_same_trajectory(dense, sparse)
    assert np.ptp(dense["crank.phi"]) > 0.5


@pytest.mark.parametrize("make", [
    slider_crank,
    lambda: hub_beam(lambda n, L, ra, ei, ea: ModalBeam(n, L, ra, ei, n_modes=3)),
    lambda: hub_beam(lambda n, L, ra, ei, ea: FiniteSegmentBeam(n, L, ra, ei, n_segments=4)),
    lambda: two_link_arm(lambda n, L, ra, ei, at: ANCFBeam(
        n, at, (at[0] + L, at[1]), 3, ra, ei, 1e4, damping=1e-3)),
], ids=["slider-crank", "hub-modal", "hub-segments", "arm-ancf"])
def test_sparse_system_matrices_equal_the_dense_ones(make):
    """Mass matrix, constraint terms and force Jacobians exactly; the finite-difference
    geometric terms d(M x + G^T lam)/dq and d(G v)/dq to the differencing noise,
    although the sparse ones visit only the coordinates the joints and masses read."""
    s = make()
    q, v = assemble(s)
    rng = np.random.default_rng(1)
    v = v + 0.1 * rng.standard_normal(s.n)
    x, lam, t = rng.standard_normal(s.n), rng.standard_normal(s.m), 0.3
    np.testing.assert_array_equal(s.mass_matrix_sparse(q).toarray(), s.mass_matrix(q))
    for dense, sparse in zip(s.constraint_terms(t, q, v), s.constraint_terms_sparse(t, q, v)):
        np.testing.assert_array_equal(sparse.toarray() if scipy.sparse.issparse(sparse)
                                      else sparse, dense)
    for dense, sparse in zip(s.force_jacobians(t, q, v), s.force_jacobians_sparse(t, q, v)):
        np.testing.assert_allclose(sparse.toarray(), dense, rtol=0,
                                   atol=1e-6 * max(1.0, np.abs(dense).max()))
    K, H = np.zeros((s.n, s.n)), np.zeros((s.m, s.n))
    G = s.constraint_jacobian(t, q)
    for j in range(s.n):   # what the dense iteration matrix does, every coordinate
        e = math.sqrt(np.finfo(float).eps) * max(1.0, abs(q[j]))
        qj = q.copy()
        qj[j] += e
        Gj = s.constraint_jacobian(t, qj)
        K[:, j] = (s.mass_matrix(qj) @ x + Gj.T @ lam - s.mass_matrix(q) @ x - G.T @ lam) / e
        H[:, j] = (Gj @ v - G @ v) / e
    Ks, Hs = s.geometric_stiffness_sparse(t, q, v, x, lam)
    np.testing.assert_allclose(Ks.toarray(), K, rtol=0, atol=1e-6 * np.abs(K).max())
    np.testing.assert_allclose(Hs.toarray(), H, rtol=0, atol=1e-6 * max(1.0, np.abs(H).max()))
    # the dense iteration matrix takes the same differences as arrays
    Kd, Hd = s.geometric_stiffness_sparse(t, q, v, x, lam, dense=True)
    np.testing.assert_array_equal(Kd, Ks.toarray())
    np.testing.assert_array_equal(Hd, Hs.toarray())


def test_auto_switches_to_sparse_above_200_coordinates():
    small, large = hanging_chain(10), hanging_chain(60)          # 44 and 244 coordinates
    integ = GeneralizedAlpha()
    assert not integ.uses_sparse(small) and integ.uses_sparse(large)
    assert not GeneralizedAlpha(iteration="broyden").uses_sparse(large)
    assert GeneralizedAlpha(sparse=True).uses_sparse(small)
    assert not GeneralizedAlpha(sparse=False).uses_sparse(large)
    with pytest.raises(ValueError, match="broyden"):
        GeneralizedAlpha(iteration="broyden", sparse=True)
    with pytest.raises(ValueError, match="sparse"):
        GeneralizedAlpha(sparse="yes")


def _factorised_matrices(monkeypatch, n_elements, solver, steps=3):
    """Take implicit steps on a hanging chain with every dense n x n path disabled;
    returns (system, the matrices given to the sparse ``solver`` with the sizes of their
    factors)."""
    s = hanging_chain(n_elements)
    q, v = assemble(s)

    def refuse(*args, **kwargs):
        raise AssertionError("a dense n x n matrix was built")
    monkeypatch.setattr(System, "mass_matrix", refuse)
    monkeypatch.setattr(System, "force_jacobians", refuse)
    monkeypatch.setattr(newton_matrix, "dgetrf", refuse)     # the dense LU
    seen = []
    if solver == "superlu":
        real_splu = formulations.splu

        def recording_splu(A, *args, **kwargs):
            lu = real_splu(A, *args, **kwargs)
            seen.append((A, lu.L.nnz + lu.U.nnz))
            return lu
        monkeypatch.setattr(formulations, "splu", recording_splu)
    else:
        for name in ("factor", "refactor"):
            real = getattr(SparseLU, name)

            def recording(self, A, real=real):
                done = real(self, A)
                seen.append((A, done.lu_nnz))
                return done
            monkeypatch.setattr(SparseLU, name, recording)
    integ = GeneralizedAlpha(rho_inf=0.8, sparse_solver=solver)   # "auto": sparse here
    t = 0.0
    for _ in range(steps):
        q, v = integ.step(s, t, q, v, 1e-3)
        t += 1e-3
    assert integ.stats()["failures"] == 0
    tip = s.body("beam").positions(q[s.body("beam").index:], [s.body("beam").length])[0]
    assert np.all(np.isfinite(tip))
    return s, seen


@pytest.mark.parametrize("solver", ("native", "superlu"))   # whose fill is counted
def test_long_ancf_chain_steps_with_sparse_matrices_of_linear_size(monkeypatch, solver):
    """1000 elements (4004 coordinates, 3 clamp equations): the GGL iteration matrix
    (4010 x 4010) is sparse, and its non-zeros and those of its LU factors grow
    linearly with the number of elements (measured against 100 elements), with either
    sparse factorisation."""
    s, seen = _factorised_matrices(monkeypatch, 1000, solver)
    size = s.n + 2 * s.m
    A, fill = seen[-1]
    assert scipy.sparse.issparse(A) and A.shape == (size, size)
    assert A.nnz < 16 * size and fill < 40 * size
    _, seen_small = _factorised_matrices(monkeypatch, 100, solver)
    A_small, fill_small = seen_small[-1]
    assert 8.0 < A.nnz / A_small.nnz < 11.0
    assert 8.0 < fill / fill_small < 11.0


def test_index1_sparse_and_dense_augmented_solves_agree():
    """The index-1 formulation's augmented solve, sparse (SuperLU) and dense, on a clamped
    20-element ANCF beam swinging under gravity: the same accelerations and the same
    RK4 trajectory."""
    from mbdcore.multibody.ancf import cantilever
    from mbdcore.dae.index1 import Index1Baumgarte, assemble

    system = cantilever(length=1.0, n_elements=20, rho_a=1.0, ei=1.0, ea=1e4,
                        gravity=(0.0, -9.81))
    q, v = assemble(system)
    x0 = np.concatenate([q, v])
    dense = Index1Baumgarte(system, sparse=False)
    sparse = Index1Baumgarte(system, sparse=True)
    np.testing.assert_allclose(sparse.rhs(0.0, x0), dense.rhs(0.0, x0), rtol=1e-10, atol=1e-10)
    _, xd = integrate(dense.rhs, x0, 0.0, 1e-4, 20, "rk4")
    _, xs = integrate(sparse.rhs, x0, 0.0, 1e-4, 20, "rk4")
    np.testing.assert_allclose(xs, xd, rtol=1e-10, atol=1e-12)


def test_block_on_the_sparse_path_saves_and_restores_its_state():
    """A Block whose system takes the sparse path (a 40-element 3D cable, 246
    coordinates) with the default modified Newton keeps SuperLU factors in its
    integrator: its state must copy (rollback) and pickle (FMU state serialisation),
    and a restored block continue bit for bit.  Failed before with "cannot pickle
    'SuperLU' object" in get_state."""
    model = {"format": "flexcosim-model", "version": 1, "dimension": 3,
             "gravity": [0, 0, -9.81], "ground": {"markers": {"O": [0, 0, 0]}},
             "bodies": [{"type": "cable", "name": "rope", "start": [0, 0, 0],
                         "end": [1.0, 0, 0], "n_elements": 40, "rho_a": 0.1, "ea": 1e4,
                         "ei": 1.0}],
             "joints": [{"type": "spherical", "a": "ground.O", "b": "rope.root"}]}
    block = spatial_system_block(model)(method="generalized-alpha", substeps=10)
    block.reset(0.0)
    assert block.system.n > implicit.SPARSE_AUTO_SIZE
    block.do_step(0.0, 0.01)
    saved = block.get_state()
    frozen = pickle.dumps(saved)
    block.do_step(0.01, 0.01)
    block.do_step(0.02, 0.01)
    reference = block.outputs()
    for state in (saved, pickle.loads(frozen)):
        block.set_state(state)
        block.do_step(0.01, 0.01)
        block.do_step(0.02, 0.01)
        assert block.outputs() == reference
    assert reference["rope.n40.rz"] < -1e-3      # the free end fell
