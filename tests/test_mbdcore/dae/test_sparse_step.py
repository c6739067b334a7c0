"""The sparse path's Newton matrix as a list of terms over the compiled blocks' values
(mbdcore.dae.sparse_step): for the ANCF hub-beam at a moving state with non-zero
multipliers (where the geometric terms fill K_t and Hg), the matrix the terms make equals the one the Python sparse path assembles
from the same blocks (NewtonMatrix._assemble, scipy's bmat of S, G^T, -D G^T, G + H,
-G G^T), GGL and index 3, and the start's [[M, G^T], [G, 0]]; to the rounding of sums of
a few products of the entries."""
import numpy as np
import pytest
import scipy.sparse

from mbdcore.dae.compiled_step import CompiledAlphaStep
from mbdcore.dae.index1 import assemble
from mbdcore.dae.methods import make_method
from mbdcore.dae.sparse_solver import SparseLU
from mbdcore.dae.sparse_step import normal_fill
from mbdcore.models.mechanisms import hub_beam
from mbdcore.multibody.ancf import ANCFBeam

H = 1e-3


@pytest.mark.parametrize("form", ["ggl", "index3"])
def test_the_terms_make_the_matrix_python_assembles(form):
    system = hub_beam(lambda nm, L, ra, ei, ea: ANCFBeam(nm, (0.0, 0.0), (L, 0.0), 6, ra,
                                                         ei, ea), 6.0)
    method = make_method("generalized-alpha", sparse=True, constraint_form=form)
    stepper = CompiledAlphaStep(method, system)
    q, v = assemble(system, 0.0)
    stepper.start(0.0, q, v)
    # a moving state, multipliers of the size of the joints' forces
    v = v + np.linspace(-0.2, 0.3, v.size)
    lam = np.linspace(1.0, 2.0, stepper.m)
    terms, sparse = stepper.terms, stepper.sparse
    n, m = terms.n, terms.m
    C, K, Hg = terms.sparse_jacobian(q, v, lam, True)
    G = terms.sparse_residual(q, v, np.zeros(n), np.zeros(n), np.zeros(m), np.zeros(m),
                              1.0, 1.0, form == "ggl")[1]
    M = terms.sparse_mass()
    values = np.concatenate([M.data, C.data, K.data, G.data, Hg.data])
    ig = stepper.integrator
    cv = ig.gamma / (ig.beta * H)
    ca = (1.0 - ig.alpha_m) / ((1.0 - ig.alpha_f) * ig.beta * H * H)
    # the Python sparse path's assembly of the same blocks
    blocks = ig._scale((M, C, K, Hg), cv, ca)
    expected = ig._assemble(blocks, G).toarray()
    scales = sparse._segment_scales((1.0, cv / ca, 1.0 / ca, 1.0, 1.0 / cv))
    step = sparse.step
    made = scipy.sparse.csc_matrix((step.values(values, scales), step.Ai, step.Ap),
                                   shape=(step.N, step.N)).toarray()
    assert made.shape == expected.shape
    # each entry a sum of a few products of the entries: their rounding
    size = np.abs(expected).max()
    assert np.abs(made - expected).max() <= 1e-13 * size
    start = sparse.start
    made = scipy.sparse.csc_matrix((start.values(values, sparse._segment_scales([1.0] * 5)),
                                    start.Ai, start.Ap), shape=(start.N, start.N)).toarray()
    expected = scipy.sparse.bmat([[M, G.T], [G, None]]).toarray()
    assert np.array_equal(made, expected)


def test_the_room_of_any_pivots_is_the_fill_of_the_normal_matrix():
    """normal_fill: in the A^T A order of the sparse LU's analysis it is the count that
    analysis gives (the same symbolic factor, George & Ng's bound); in another order
    (A + A^T, the step's) a factorisation with any pivots, strict partial pivoting
    included, stays within it."""
    rng = np.random.default_rng(7)
    for k in range(4):
        n = 40 + 10 * k
        A = (scipy.sparse.random(n, n, density=0.06, random_state=rng, format="csc")
             + scipy.sparse.eye(n, format="csc")).tocsc()
        A.sort_indices()
        normal = SparseLU(A, ordering="normal")
        assert normal_fill(A.indptr, A.indices, normal.order) == normal.cholesky_nnz
        for tol in (1.0, 0.1):
            lu = SparseLU(A, tol=tol, ordering="symmetric").factor(A)
            bound = normal_fill(A.indptr, A.indices, lu.order)
            assert max(lu.factors[1].size, lu.factors[4].size) <= bound
