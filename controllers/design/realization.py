"""Linear systems read and reduced: the modes of a state-space system
(:func:`modal_table`) and its minimal realization (:func:`minimal_realization`, numpy
only: python-control's ``minreal`` of a StateSpace needs slycot).
"""
from __future__ import annotations

import control as ct
import numpy as np
import scipy.linalg as sl

from controllers.design.adapters import signal_labels

__all__ = ["modal_table", "minimal_realization"]


def modal_table(sys, rigid_tol: float | None = None) -> list[dict]:
    """Modes of a linear system, lowest first: one row per real eigenvalue or complex pair.

    Each row has ``frequency`` [Hz] (undamped natural, ``|lambda| / 2 pi``), ``damping``
    (ratio, ``-Re(lambda) / |lambda|``), ``eigenvalue`` (continuous time [1/s]) and
    ``rigid``.  A *rigid* mode (a free joint, an integrator: eigenvalue at the origin,
    ``|lambda| <= rigid_tol``) has neither a natural frequency nor a damping ratio: its
    ``frequency`` is 0.0, its ``damping`` nan and ``rigid`` is True; rigid rows come first.

    Parameters
    ----------
    rigid_tol : float, optional
        [1/s]; default ``1e-6 max(1, max |lambda|)`` (a double eigenvalue at the origin
        comes out of the eigenvalue solver split by about ``sqrt(eps |A|)``).
    """
    lam = np.linalg.eigvals(np.asarray(sys.A))
    if sys.dt:
        lam = np.log(lam.astype(complex)) / sys.dt
    lam = lam.astype(complex)
    if rigid_tol is None:
        rigid_tol = 1e-6 * max(1.0, float(np.abs(lam).max(initial=0.0)))
    rows = []
    for l in lam[lam.imag >= 0]:
        w = abs(l)
        if w <= rigid_tol:
            rows.append({"frequency": 0.0, "damping": float("nan"), "eigenvalue": complex(l),
                         "rigid": True})
        else:
            rows.append({"frequency": w / (2 * np.pi), "damping": -l.real / w,
                         "eigenvalue": complex(l), "rigid": False})
    return sorted(rows, key=lambda r: (not r["rigid"], r["frequency"]))


def _reachable_basis(A: np.ndarray, B: np.ndarray, rtol: float) -> np.ndarray:
    """Orthonormal basis of the reachable subspace of (A, B): the block Arnoldi
    (controllability staircase) iteration, each new block orthogonalised twice against
    the basis and its rank decided by an SVD with threshold ``rtol |A|``."""
    n = len(A)
    if B.size == 0 or n == 0:
        return np.zeros((n, 0))
    U, s, _ = np.linalg.svd(B, full_matrices=False)
    if s[0] == 0.0:
        return np.zeros((n, 0))
    V = U[:, s > rtol * s[0]]
    W = V
    scale = max(np.linalg.norm(A, 2), np.finfo(float).tiny)
    while V.shape[1] < n:
        X = A @ W
        for _ in range(2):
            X = X - V @ (V.T @ X)
        U, s, _ = np.linalg.svd(X, full_matrices=False)
        r = int(np.sum(s > rtol * scale))
        if r == 0:
            break
        W = U[:, :r]
        V = np.hstack([V, W])
    return V


def minimal_realization(sys, rtol: float = 1e-9):
    """The controllable and observable part of a state-space system (Kalman
    decomposition by orthogonal projections, numpy only: python-control's ``minreal``
    of a StateSpace needs slycot).

    The states are first scaled by :func:`scipy.linalg.matrix_balance` (a diagonal
    similarity: the arm's angles, modal amplitudes and rates differ by orders of
    magnitude); then the reachable subspace of ``(A, B)`` is kept, and of that the
    observable subspace of ``(A, C)``.  Removed are the modes the inputs cannot move
    or the outputs cannot see, e.g. the rigid mode of the other joint in one channel
    of the arm (an eigenvalue at the origin that no single-channel feedback can move).

    Parameters
    ----------
    sys : control.StateSpace
        Continuous or discrete time.
    rtol : float
        Rank threshold of each step, relative to ``|A|`` (2-norm).

    Returns
    -------
    control.StateSpace
        Same inputs, outputs, sample time and name; states ``x0 .. x<r-1>`` (a
        realization: they are not physical coordinates).  Attribute ``removed``: the
        number of states removed.
    """
    A, B, C = (np.asarray(m, float) for m in (sys.A, sys.B, sys.C))
    n = len(A)
    if n:
        _, (scale, _) = sl.matrix_balance(A, permute=False, separate=True)
        A = A * (1.0 / scale)[:, None] * scale[None, :]        # T^-1 A T, T = diag(scale)
        B = B / scale[:, None]
        C = C * scale[None, :]
    V = _reachable_basis(A, B, rtol)
    A, B, C = V.T @ A @ V, V.T @ B, C @ V
    U = _reachable_basis(A.T, C.T, rtol)
    A, B, C = U.T @ A @ U, U.T @ B, C @ U
    r = len(A)
    out = ct.ss(A, B, C, np.asarray(sys.D), sys.dt, inputs=signal_labels(sys, "input"),
                outputs=signal_labels(sys, "output"), states=[f"x{i}" for i in range(r)],
                name=sys.name)
    out.removed = n - r
    return out
