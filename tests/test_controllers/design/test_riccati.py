"""The discrete Riccati equation of the arm's LQG (found by the Haswell run of the suite):
the arm sampled at 1 ms has undamped modes on the unit circle that the weights move only
slightly inside, and scipy's generalised Schur method then refuses ("Reordering of (A, B)
failed ...") under some BLAS kernels (OpenBLAS Haswell, one thread: the arm's design
tests failed there) and not under others (SkylakeX).  ``controllers.design.lq.dlqr``
falls back to the structure-preserving doubling algorithm; these tests hold that
algorithm to the equation itself on every kernel, and to scipy where scipy solves it."""
from __future__ import annotations

import control as ct
import numpy as np
import pytest
import scipy.linalg as sl

from controllers.design import DesignError
from controllers.design.adapters import linearize_arm
from controllers.design.arm_lqg import DEFAULT_Q, DEFAULT_R
from controllers.design.lq import dare_doubling, dlqr, weight_matrix


@pytest.fixture(scope="module")
def arm_dare():
    """The regulator's equation of the default LQG design: (A, B, Q, R)."""
    sampled = ct.c2d(linearize_arm(), 1e-3)
    return (np.asarray(sampled.A), np.asarray(sampled.B), weight_matrix(sampled, DEFAULT_Q, "state"),
            weight_matrix(sampled, DEFAULT_R, "input"))


def _residual(A, B, Q, R, X):
    return A.T @ X @ A - X - A.T @ X @ B @ np.linalg.solve(R + B.T @ X @ B, B.T @ X @ A) + Q


def test_doubling_solves_the_arms_riccati_equation(arm_dare):
    """X satisfies the equation to round-off of its terms, is symmetric positive
    semidefinite, and makes the closed loop stable -- with its slowest poles at
    |lambda| = 1 - 4e-5, the reason the Schur method's reordering is so fragile."""
    A, B, Q, R = arm_dare
    X = dare_doubling(A, B, Q, R)
    scale = np.abs(A.T @ X @ A).max()
    assert np.abs(_residual(A, B, Q, R, X)).max() <= 1e-11 * scale
    assert np.array_equal(X, X.T) and np.linalg.eigvalsh(X).min() >= -1e-12 * scale
    K = np.linalg.solve(R + B.T @ X @ B, B.T @ X @ A)
    radius = np.abs(np.linalg.eigvals(A - B @ K))
    assert radius.max() < 1 and radius.max() > 1 - 1e-3
    try:
        X_schur = sl.solve_discrete_are(A, B, Q, R)
    except ValueError:
        return                                   # this kernel: the case dlqr falls back on
    # both solve an equation whose solution is conditioned by the 1 - 4e-5 poles:
    # measured 2e-11 to 4e-11 relative apart under Haswell and SkylakeX
    assert np.abs(X - X_schur).max() <= 1e-8 * np.abs(X_schur).max()


def test_dlqr_gives_what_python_control_gives_where_it_solves():
    """On a well-conditioned case dlqr is control.dlqr (the fallback is not used)."""
    sys = ct.c2d(ct.ss([[0, 1], [-4, -0.4]], [[0], [1]], np.eye(2), 0), 0.01)
    A, B = np.asarray(sys.A), np.asarray(sys.B)
    ours, theirs = dlqr(A, B, np.eye(2), np.eye(1)), ct.dlqr(A, B, np.eye(2), np.eye(1))
    for a, b in zip(ours, theirs):
        assert np.array_equal(a, b)


def test_an_unweighted_mode_on_the_unit_circle_is_refused_by_name():
    """No stabilising solution (an undamped mode the weights do not see): a DesignError,
    not a silent garbage gain."""
    A = np.array([[np.cos(0.1), np.sin(0.1)], [-np.sin(0.1), np.cos(0.1)]])
    B = np.array([[0.0], [0.1]])
    with pytest.raises(DesignError, match="no stabilising solution.*modulus 1"):
        dare_doubling(A, B, np.zeros((2, 2)), np.eye(1))
