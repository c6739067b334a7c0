"""The Newton matrix assembled through a kept permutation (BlockPattern) equals scipy's
bmat of the same blocks exactly, whether the blocks keep their patterns, change them,
carry explicit zeros or come unsorted; an entry a block drops stays a stored zero."""
from __future__ import annotations

import numpy as np
import scipy.sparse

from mbdcore.dae.newton_matrix import BlockPattern


def _random(rng, shape, density, seed_pattern=None):
    A = scipy.sparse.random(*shape, density=density, format="csr",
                            random_state=seed_pattern if seed_pattern is not None
                            else int(rng.integers(1 << 30)))
    A.data = rng.standard_normal(A.nnz)
    return A


def _layout(rng, pattern_seed=7):
    n, m = 40, 12
    S = _random(rng, (n, n), 0.1, pattern_seed) + scipy.sparse.eye(n, format="csr")
    G = _random(rng, (m, n), 0.15, pattern_seed + 1)
    S.data = rng.standard_normal(S.nnz)
    G.data = rng.standard_normal(G.nnz)
    GT = G.T.tocsr()
    return [[S, GT, -(S @ GT)], [G, None, None], [G + G, None, -(G @ GT)]]


def _same(A, B):
    A, B = A.tocsc(), B.tocsc()
    assert A.shape == B.shape
    np.testing.assert_array_equal(A.toarray(), B.toarray())


def test_repeated_patterns_give_bmat_exactly():
    rng = np.random.default_rng(1)
    assemble = BlockPattern()
    for _ in range(4):                        # new values on the same patterns
        layout = _layout(rng)
        _same(assemble(layout), scipy.sparse.bmat(layout, format="csc"))


def test_a_changed_pattern_is_analysed_again():
    rng = np.random.default_rng(2)
    assemble = BlockPattern()
    first = _layout(rng, 7)
    _same(assemble(first), scipy.sparse.bmat(first, format="csc"))
    other = _layout(rng, 19)                  # other patterns, same shapes
    _same(assemble(other), scipy.sparse.bmat(other, format="csc"))
    dropped = [row[:] for row in first]
    S = dropped[0][0].copy()
    S.data[3] = 0.0
    S.eliminate_zeros()                       # as a sum that cancels drops an entry
    dropped[0][0] = S
    widest = assemble(first)
    narrower = assemble(dropped)
    _same(narrower, scipy.sparse.bmat(dropped, format="csc"))
    # the dropped entry stays a stored zero: the matrix keeps the pattern its LU was
    # analysed for
    np.testing.assert_array_equal(narrower.indptr, widest.indptr)
    np.testing.assert_array_equal(narrower.indices, widest.indices)
    _same(assemble(first), scipy.sparse.bmat(first, format="csc"))


def test_explicit_zeros_and_unsorted_blocks():
    rng = np.random.default_rng(3)
    layout = _layout(rng)
    S = layout[0][0].copy()
    S.data[::5] = 0.0                          # stored zeros stay entries
    perm = np.arange(S.indices.size)
    for r in range(S.shape[0]):               # columns unsorted within each row
        lo, hi = S.indptr[r], S.indptr[r + 1]
        perm[lo:hi] = perm[lo:hi][::-1]
    S = scipy.sparse.csr_matrix((S.data[perm], S.indices[perm], S.indptr), shape=S.shape)
    S.has_sorted_indices = False
    layout[0][0] = S
    assemble = BlockPattern()
    for _ in range(2):
        _same(assemble(layout), scipy.sparse.bmat(layout, format="csc"))
