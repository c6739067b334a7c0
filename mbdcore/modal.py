"""Modal analysis of a constrained system linearised at a configuration.

At an equilibrium (q0, v = 0) the linearised equations are M dq'' + C dq' + K dq = 0 with
K = -dF/dq, C = -dF/dv, restricted to the tangent space of the constraints, G dq = 0.
With N an orthonormal basis of the null space of G (dq = N z), the reduced problem is

    (N^T K N) z = omega^2 (N^T M N) z.

Returns natural frequencies [Hz] and mode shapes in the full coordinates.  Damping is
reported separately (``damped=True`` solves the quadratic eigenproblem).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg as sl

from .dae import ConstrainedProblem


@dataclass
class ModalResult:
    """frequencies [Hz] (ascending), omega [rad/s], shapes (n, k) in full coordinates,
    damping ratios (nan unless ``damped``)."""

    frequencies: np.ndarray
    omega: np.ndarray
    shapes: np.ndarray
    damping_ratios: np.ndarray


def null_space(G: np.ndarray, n: int) -> np.ndarray:
    """Orthonormal basis of the null space of G (n x (n - rank))."""
    if G.shape[0] == 0:
        return np.eye(n)
    return sl.null_space(G, rcond=1e-10)


def linearize(problem: ConstrainedProblem, q: np.ndarray, v=None, t: float = 0.0):
    """(M, C, K, N): mass, damping and stiffness matrices at (q, v) and the null-space
    basis of the constraint Jacobian."""
    q = np.asarray(q, float)
    v = np.zeros_like(q) if v is None else np.asarray(v, float)
    kq, kv = problem.force_jacobians(t, q, v)
    M = problem.mass_matrix(q)
    G = problem.constraint_jacobian(t, q) if problem.m else np.zeros((0, problem.n))
    return M, -kv, -kq, null_space(G, problem.n)


def modal_analysis(problem: ConstrainedProblem, q=None, t: float = 0.0, n_modes: int | None = None,
                   damped: bool = False, drop_rigid: bool = True) -> ModalResult:
    """Eigenfrequencies and mode shapes of ``problem`` linearised at ``q``.

    Parameters
    ----------
    q : array, optional
        Configuration (default: the assembled initial configuration).
    n_modes : int, optional
        Number of modes returned (lowest first).
    damped : bool
        Also compute damping ratios from the quadratic eigenproblem.
    drop_rigid : bool
        Leave out zero-frequency (rigid-body) modes.
    """
    if q is None:
        from .formulations import assemble

        q, _ = assemble(problem, t)
    M, C, K, N = linearize(problem, q, t=t)
    Mr, Kr, Cr = N.T @ M @ N, N.T @ K @ N, N.T @ C @ N
    Kr = 0.5 * (Kr + Kr.T)   # finite-difference stiffness: symmetric part
    Mr = 0.5 * (Mr + Mr.T)
    w2, Z = sl.eigh(Kr, Mr)
    scale = max(np.abs(w2).max(), 1.0)
    keep = w2 > 1e-9 * scale if drop_rigid else np.ones_like(w2, bool)
    w2, Z = w2[keep], Z[:, keep]
    omega = np.sqrt(np.clip(w2, 0.0, None))
    zeta = np.full_like(omega, np.nan)
    if damped and len(omega):
        zeta = np.array([float(z @ Cr @ z) / (2.0 * w * float(z @ Mr @ z)) if w > 0 else np.nan
                         for z, w in zip(Z.T, omega)])
    if n_modes is not None:
        omega, Z, zeta = omega[:n_modes], Z[:, :n_modes], zeta[:n_modes]
    return ModalResult(omega / (2 * np.pi), omega, N @ Z, zeta)
