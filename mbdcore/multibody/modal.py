"""Linear and static analysis of constrained systems.

* :func:`static_equilibrium`: F(q) + mu P(q) - G^T lambda = 0, g(q) = 0 by Newton with
  load stepping (large deflections of flexible structures).
* :func:`modal_analysis`: natural frequencies and mode shapes linearised at a static
  state, the constraints eliminated with a null-space basis N of G (dq = N z):

      (N^T K N) z = omega^2 (N^T M N) z,   K = -dF/dq + d(G^T lambda)/dq,  C = -dF/dv.

  The second term of K is the stiffness of the reactions turning with the joints (the
  whole restoring stiffness of a pendulum in absolute coordinates); it vanishes where
  lambda = 0.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import scipy.linalg as sl

from mbdcore.blocks import ParameterError
from mbdcore.dae.index1 import AssemblyError, project_positions
from mbdcore.dae.problem import ConstrainedProblem

__all__ = ["ModalResult", "null_space", "reaction_stiffness_terms", "EquilibriumError",
           "StaticSolution", "static_equilibrium", "modal_analysis", "natural_frequencies",
           "linearize"]


@dataclass
class ModalResult:
    """frequencies [Hz] (ascending), omega [rad/s] (negative: an unstable direction),
    shapes (n, k) in the full coordinates (mass-normalised, G shapes = 0), damping
    ratios (modal approximation z^T C z / (2 omega); nan for omega <= 0)."""

    frequencies: np.ndarray
    omega: np.ndarray
    shapes: np.ndarray
    damping_ratios: np.ndarray


def null_space(G: np.ndarray, n: int) -> np.ndarray:
    """Orthonormal basis of the null space of G (n x (n - rank))."""
    if G.shape[0] == 0:
        return np.eye(n)
    return sl.null_space(G, rcond=1e-10)


def _point_loads(system, q: np.ndarray, loads) -> np.ndarray:
    """Generalised forces of dead point loads {marker: (Fx, Fy)} [N] at q."""
    f = np.zeros(system.n)
    for ref, force in loads:
        body, loc = system.marker(ref)
        if body.index is None:
            continue
        sl = slice(body.index, body.index + body.n_coords)
        J = body.state(q[sl], np.zeros(body.n_coords)).point(loc)[2]
        f[sl] += J.T @ force
    return f


def reaction_stiffness_terms(system, t, q, lam, loads, mu, G) -> np.ndarray:
    """d(mu P(q) - G(q)^T lam)/dq by central differences over the coordinates that the
    constraints and loads touch (an ANCF beam's own terms are analytic elsewhere).

    Assumes, as holds for the engine's joints, that G and the load Jacobians depend on
    q only through coordinates in which they have non-zero entries."""
    active = np.abs(G).sum(axis=0) > 0
    if loads:
        active |= np.abs(_point_loads(system, q, [(r, np.ones(2)) for r, _ in loads])) > 0
    out = np.zeros((system.n, system.n))

    def h(x):
        val = -system.constraint_jacobian(t, x).T @ lam if system.m else np.zeros(system.n)
        return val + mu * _point_loads(system, x, loads) if loads else val

    for j in np.flatnonzero(active):
        d = 1e-6 * max(1.0, abs(q[j]))
        qp, qm = q.copy(), q.copy()
        qp[j] += d
        qm[j] -= d
        out[:, j] = (h(qp) - h(qm)) / (2.0 * d)
    return out


class EquilibriumError(RuntimeError):
    """Newton's method did not reach a static equilibrium."""


@dataclass
class StaticSolution:
    """Result of :func:`static_equilibrium`.

    Attributes
    ----------
    q : ndarray (n,)       equilibrium coordinates [m, rad, -]
    lam : ndarray (m,)     multipliers: reactions with the sign of G^T lambda [N, N m]
    load_steps : list      load factors reached, ending with 1.0
    iterations : int       Newton iterations in all
    """

    q: np.ndarray
    lam: np.ndarray
    load_steps: list = field(default_factory=list)
    iterations: int = 0


def static_equilibrium(system, loads=None, q0=None, t: float = 0.0,
                       steps: int = 1, tol: float = 1e-10, max_iterations: int = 30,
                       max_halvings: int = 10) -> StaticSolution:
    """Static equilibrium F(q) + mu P(q) - G^T lambda = 0, g(q) = 0 by Newton.

    ``F`` are the system's own forces at zero velocity (elastic forces, gravity, force
    elements at full value); ``P`` are the dead point ``loads``, applied in ``steps``
    equal load increments mu = 1/steps, ..., 1.  A step whose Newton iteration does not
    converge is halved (up to ``max_halvings`` times), so large loads on a flexible
    structure need no hand-tuned stepping.

    Parameters
    ----------
    system : System
    loads : dict of str to (float, float), optional
        Marker reference (``"beam.tip"``) -> force [N] in the ground frame, fixed in
        direction.
    q0 : array_like, optional
        Starting guess (default: the assembled initial configuration).
    t : float
        Time at which forces and constraints are evaluated [s].
    steps : int
        Initial number of load increments.
    tol : float
        Convergence: the Newton increment |dq|_inf <= tol max(1, |q|_inf) [m, -] (with
        quadratic convergence the error left is far smaller) and the force residual
        below sqrt(tol) times the largest generalised force (a guard only: the forces
        of a stiff beam cancel to rounding errors of eps times their size).

    Returns
    -------
    StaticSolution

    Raises
    ------
    EquilibriumError
        If a load increment fails after ``max_halvings`` halvings (a limit point,
        buckling, or an unconstrained rigid-body mode with a net load).
    """
    loads = [(ref, np.asarray(f, float)) for ref, f in (loads or {}).items()]
    for ref, f in loads:
        system.marker(ref)
        if f.shape != (2,) or not np.all(np.isfinite(f)):
            raise ParameterError(f"load at {ref!r} = {f!r} must be a finite (Fx, Fy) [N]")
    if q0 is None:
        q0 = system.initial_state()[0]
    try:
        q = project_positions(system, t, np.asarray(q0, float))
    except AssemblyError as exc:
        raise EquilibriumError(f"the starting guess cannot be assembled: {exc}") from None
    n, m = system.n, system.m
    zero_v = np.zeros(n)
    lam = np.zeros(m)
    total_iterations = 0

    def solve_at(mu, q, lam):
        nonlocal total_iterations
        for _ in range(max_iterations):
            F = system.forces(t, q, zero_v)
            P = _point_loads(system, q, loads) if loads else 0.0
            G = system.constraint_jacobian(t, q) if m else np.zeros((0, n))
            r = F + mu * P - G.T @ lam
            g = system.constraints(t, q) if m else np.zeros(0)
            # elastic forces of a stiff beam cancel to rounding errors of order
            # eps |F|: the residual test is loose, the increment test is the strict one
            scale = max(1.0, np.abs(F).max(), np.abs(mu * P).max() if loads else 0.0)
            dFdq = system.force_jacobians(t, q, zero_v)[0]
            A = np.zeros((n + m, n + m))
            A[:n, :n] = dFdq + reaction_stiffness_terms(system, t, q, lam, loads, mu, G)
            A[:n, n:] = -G.T
            A[n:, :n] = G
            try:
                with np.errstate(all="ignore"):
                    dx = np.linalg.solve(A, -np.concatenate([r, g]))
            except np.linalg.LinAlgError:
                return None
            if not np.all(np.isfinite(dx)):
                return None
            q = q + dx[:n]
            lam = lam + dx[n:]
            total_iterations += 1
            small_step = np.abs(dx[:n]).max() <= tol * max(1.0, np.abs(q).max())
            if small_step and np.abs(r).max() <= math.sqrt(tol) * scale:
                return q, lam
        return None

    if not loads:
        # nothing to step: one solve finds the equilibrium of the system's own forces
        sol = solve_at(0.0, q, lam)
        if sol is None:
            raise EquilibriumError("Newton did not converge for the system's own forces")
        return StaticSolution(sol[0], sol[1], [1.0], total_iterations)
    reached, mu, dmu = [], 0.0, 1.0 / max(1, int(steps))
    halvings = 0
    while mu < 1.0:
        target = min(1.0, mu + dmu)
        sol = solve_at(target, q, lam)
        if sol is None:
            halvings += 1
            if halvings > max_halvings:
                raise EquilibriumError(
                    f"no equilibrium at load factor {target:.6g} (from {mu:.6g}) after "
                    f"{max_halvings} halvings of the increment")
            dmu *= 0.5
            continue
        q, lam = sol
        mu = target
        reached.append(mu)
    return StaticSolution(q, lam, reached, total_iterations)


def modal_analysis(system, q=None, lam=None, t: float = 0.0,
                   n_modes: int | None = None) -> ModalResult:
    """Natural frequencies and modes of a constrained system linearised at a static
    state, *including the stiffness of the reactions*.

    The linearised equations about a static state (q, lambda) are
    ``M dq'' + C dq' + K dq + G^T dlam = 0, G dq = 0`` with

        K = -dF/dq + d(G(q)^T lambda)/dq,      C = -dF/dv.

    The second term of K is the reactions turning with the joints: it is the whole
    restoring stiffness of a pendulum in absolute coordinates (gravity is a constant
    force there) and matters for any loaded structure.  :func:`mbdcore.multibody.modal.modal_analysis`
    leaves it out, which is exact only where lambda = 0; this function is the general
    form (same result type) until the two are merged.  With Z an orthonormal null-space
    basis of G (dq = Z y): ``Z^T K Z y = omega^2 Z^T M Z y``.

    Parameters
    ----------
    system : System
    q : array_like, optional
        Linearisation point (default: the assembled initial configuration); it should
        be an equilibrium (see :func:`static_equilibrium`), else the result is the
        instantaneous tangent.
    lam : array_like, optional
        Multipliers at q (default: least-squares solution of G^T lambda = F(q), exact at
        an equilibrium).
    t : float
        Time [s].
    n_modes : int, optional
        Number of lowest modes (default: all), rigid-body modes included.

    Returns
    -------
    mbdcore.multibody.modal.ModalResult
        ``omega`` [rad/s] ascending (a negative value -sqrt(-lambda) marks an unstable
        direction), ``frequencies`` [Hz], ``shapes`` (n, k) in the system coordinates,
        mass-normalised and satisfying G shapes = 0, ``damping_ratios`` (modal
        approximation z^T C z / (2 omega), nan for omega <= 0).
    """
    if q is None:
        q = project_positions(system, t, system.initial_state()[0])
    q = np.asarray(q, float)
    n = system.n
    zero_v = np.zeros(n)
    G = system.constraint_jacobian(t, q) if system.m else np.zeros((0, n))
    if lam is None:
        F = system.forces(t, q, zero_v)
        lam = np.linalg.lstsq(G.T, F, rcond=None)[0] if system.m else np.zeros(0)
    kq, kv = system.force_jacobians(t, q, zero_v)
    K = -kq
    if system.m:
        K = K - reaction_stiffness_terms(system, t, q, np.asarray(lam, float), [], 0.0, G)
    Z = null_space(G, n)
    M = system.mass_matrix(q)
    Kr = Z.T @ K @ Z
    Mr = Z.T @ M @ Z
    Kr = 0.5 * (Kr + Kr.T)
    Mr = 0.5 * (Mr + Mr.T)
    k = Kr.shape[0] if n_modes is None else min(int(n_modes), Kr.shape[0])
    w2, y = sl.eigh(Kr, Mr, subset_by_index=[0, k - 1])
    omega = np.sign(w2) * np.sqrt(np.abs(w2))
    shapes = Z @ y
    with np.errstate(all="ignore"):
        zeta = np.einsum("ik,ij,jk->k", shapes, -kv, shapes) / (2.0 * omega)
    zeta[omega <= 0] = np.nan
    return ModalResult(omega / (2.0 * math.pi), omega, shapes, zeta)


def natural_frequencies(system, q=None, n: int = 6, lam=None,
                        t: float = 0.0) -> np.ndarray:
    """The ``n`` lowest natural frequencies [Hz] of ``system`` linearised at ``q``
    (see :func:`modal_analysis`); rigid-body modes appear as (near) zeros."""
    return modal_analysis(system, q, lam, t, n_modes=n).frequencies


def linearize(problem: ConstrainedProblem, q: np.ndarray, v=None, t: float = 0.0, lam=None):
    """(M, C, K, N) at (q, v): mass, damping (-dF/dv), stiffness (-dF/dq plus the
    reaction term d(G^T lambda)/dq) and the null-space basis of G.  ``lam`` defaults to
    the least-squares multipliers of the static balance G^T lambda = F."""
    q = np.asarray(q, float)
    v = np.zeros_like(q) if v is None else np.asarray(v, float)
    n = problem.n
    G = problem.constraint_jacobian(t, q) if problem.m else np.zeros((0, n))
    kq, kv = problem.force_jacobians(t, q, v)
    K = -kq
    if problem.m:
        if lam is None:
            lam = np.linalg.lstsq(G.T, problem.forces(t, q, v), rcond=None)[0]
        K = K - reaction_stiffness_terms(problem, t, q, np.asarray(lam, float), [], 0.0, G)
    return problem.mass_matrix(q), -kv, K, null_space(G, n)
