"""LQR and LQG synthesis with weights named by signal.

* :func:`weight_matrix` / :func:`lqr` — LQR with weights named by state, output or
  input (``Q={"w1": 1e4, "theta1": 100}``), stabilisability checked first;
* :func:`lqg` — discrete LQR + steady-state Kalman predictor on measured outputs;
* :func:`lqg_integral` — the same with integrators on chosen measured outputs
  (:class:`~controllers.laws.arm_lqg.LQIDesign`);
* :func:`modal_weight` — a state weight on the amplitude of one oscillating mode.

A bad request (unknown signal name, weight of the wrong shape or sign, a mode the
inputs cannot stabilise) raises :class:`~controllers.design.errors.DesignError` or
:class:`~controllers.design.adapters.SignalNameError` naming it.
"""
from __future__ import annotations

from typing import Mapping, Sequence

import control as ct
import numpy as np

from controllers.design.adapters import check_names, signal_labels
from controllers.design.errors import DesignError
from controllers.laws.arm_lqg import LQGDesign, LQIDesign, integral_state_names

__all__ = ["weight_matrix", "check_stabilizable", "lqr", "dlqr", "process_noise_covariance", "lqg",
           "lqg_integral", "modal_weight"]


def weight_matrix(sys, weights, kind: str) -> np.ndarray:
    """A weight matrix over the states (``kind="state"``) or inputs (``"input"``).

    Parameters
    ----------
    sys : control.StateSpace
    weights : mapping of str to float, or array_like
        By name: diagonal weights; state weights may also name an *output* y = C x
        (adds ``w C_y^T C_y``).  As an array: the full matrix, shape (n, n) or its
        diagonal, shape (n,), n the number of states or inputs.

    Raises
    ------
    SignalNameError
        A name that is neither a state nor an output (inputs for ``"input"``).
    DesignError
        Wrong shape, negative or non-finite weights, an asymmetric matrix.
    """
    n = sys.nstates if kind == "state" else sys.ninputs
    what = "Q (state weight)" if kind == "state" else "R (input weight)"
    if isinstance(weights, Mapping):
        names = signal_labels(sys, kind)
        known = names + (signal_labels(sys, "output") if kind == "state" else [])
        check_names(list(weights), known, "state or output" if kind == "state" else "input")
        W = np.zeros((n, n))
        for name, w in weights.items():
            w = float(w)
            if not np.isfinite(w) or w < 0:
                raise DesignError(f"{what}: weight of {name!r} = {w!r} must be finite and >= 0")
            if name in names:
                i = names.index(name)
                W[i, i] += w
            else:
                c = np.asarray(sys.C)[signal_labels(sys, "output").index(name)]
                W += w * np.outer(c, c)
        return W
    W = np.asarray(weights, dtype=float)
    if W.shape == (n,):
        W = np.diag(W)
    if W.shape != (n, n):
        raise DesignError(f"{what} has shape {W.shape}; expected ({n}, {n}) or ({n},) for the "
                          f"{n} {kind}s {', '.join(signal_labels(sys, kind))}")
    if not np.all(np.isfinite(W)) or not np.allclose(W, W.T):
        raise DesignError(f"{what} must be finite and symmetric")
    if np.linalg.eigvalsh(W).min() < -1e-12 * max(1.0, np.abs(W).max()):
        raise DesignError(f"{what} must be positive semi-definite")
    return W


def _unstable(lam: complex, dt) -> bool:
    return abs(lam) >= 1.0 - 1e-9 if dt else lam.real >= -1e-9


def check_stabilizable(sys, tol: float = 1e-12) -> None:
    """Raise DesignError naming every mode the inputs cannot reach that is not
    asymptotically stable.

    PBH test on the normalised matrix ``[(A - lambda I)/|A - lambda I|, B/|B|]``: its
    smallest singular value is round-off (~1e-17) for an unreachable mode, and stays
    far above ``tol`` for weakly reachable ones (1e-8 for the 16 Hz mode of the arm
    sampled at 1 ms).
    """
    A, B = np.asarray(sys.A), np.asarray(sys.B)
    n = len(A)
    lam, V = np.linalg.eig(A)
    bad, seen = [], []
    nb = np.linalg.norm(B, 2)
    for k, l in enumerate(lam):
        if not _unstable(l, sys.dt) or any(abs(l - s) < 1e-9 for s in seen):
            continue
        Ml = A - l * np.eye(n)
        na = np.linalg.norm(Ml, 2)
        blocks = [Ml / na if na > 0 else Ml] + ([B / nb] if nb > 0 else [])
        s = np.linalg.svd(np.hstack(blocks), compute_uv=False)
        if s[-1] <= tol:
            seen.append(l)
            lc = np.log(complex(l)) / sys.dt if sys.dt else l
            states = signal_labels(sys, "state")
            dominant = states[int(np.argmax(np.abs(V[:, k])))]
            bad.append(f"eigenvalue {complex(l):.6g} ({abs(lc) / (2 * np.pi):.4g} Hz, mostly "
                       f"state {dominant!r})")
    if bad:
        raise DesignError(f"system {sys.name!r} is not stabilisable from inputs "
                          f"{', '.join(signal_labels(sys, 'input'))}: uncontrollable mode(s) "
                          + "; ".join(bad))


def lqr(sys, Q, R):
    """LQR gain of ``sys`` (continuous or discrete) with named weights.

    Returns
    -------
    K : ndarray, shape (inputs, states)
        ``u = -K x``.
    S : ndarray
        Riccati solution.
    E : ndarray
        Closed-loop eigenvalues.
    """
    Qm = weight_matrix(sys, Q, "state")
    Rm = weight_matrix(sys, R, "input")
    if np.linalg.eigvalsh(Rm).min() <= 0:
        raise DesignError("R (input weight) must be positive definite: every input "
                          f"({', '.join(signal_labels(sys, 'input'))}) needs a weight > 0")
    check_stabilizable(sys)
    fn = dlqr if sys.dt else ct.lqr
    return fn(np.asarray(sys.A), np.asarray(sys.B), Qm, Rm)


def dlqr(A, B, Q, R):
    """Discrete LQR ``u = -K x`` for ``x[k+1] = A x[k] + B u[k]``: (K, S, E) as
    ``control.dlqr`` returns them.

    The Riccati equation is solved by python-control (scipy's generalised Schur method)
    and, where its eigenvalue reordering fails, by the structure-preserving doubling
    algorithm (:func:`dare_doubling`).  The flexible arm sampled at 1 ms has undamped
    modes on the unit circle, which the weights move only slightly inside: the pencil's
    eigenvalues then come in pairs 1 +- 4e-5 apart, and whether the reordering of so
    ill-conditioned a pencil passes its own accuracy check depends on the last bits of
    the BLAS kernel (it failed under OpenBLAS's Haswell kernel, passed under SkylakeX).
    """
    try:
        return ct.dlqr(A, B, Q, R)
    except ValueError as error:
        if "Reordering" not in str(error):
            raise
    A, B = np.asarray(A, float), np.asarray(B, float)
    S = dare_doubling(A, B, np.asarray(Q, float), np.asarray(R, float))
    K = np.linalg.solve(R + B.T @ S @ B, B.T @ S @ A)
    return K, S, np.linalg.eigvals(A - B @ K)


def dare_doubling(A, B, Q, R, max_iterations: int = 200) -> np.ndarray:
    """The stabilising solution X of the discrete algebraic Riccati equation
    ``X = A' X A - A' X B (R + B' X B)^-1 B' X A + Q`` by the structure-preserving
    doubling algorithm (Chu, Fan and Lin, "A structure-preserving doubling algorithm for
    continuous-time algebraic Riccati equations", Linear Algebra Appl. 396, 2005, and
    its discrete form): with A0 = A, G0 = B R^-1 B', H0 = Q and W = I + G_k H_k,

        A_k+1 = A_k W^-1 A_k,  G_k+1 = G_k + A_k W^-1 G_k A_k',  H_k+1 = H_k + A_k' H_k W^-1 A_k,

    H_k converges quadratically to X while the closed loop's eigenvalues stay off the
    unit circle (k iterations reach |lambda|^(2^k): 20 for |lambda| = 1 - 4e-5).
    Raises DesignError if it does not converge or its limit does not stabilise."""
    n = A.shape[0]
    G = B @ np.linalg.solve(R, B.T)
    H = np.array(Q, dtype=float)
    Ak = np.array(A, dtype=float)
    for _ in range(max_iterations):
        W = np.eye(n) + G @ H
        WA, WG = np.linalg.solve(W, Ak), np.linalg.solve(W, G)
        H_next = H + Ak.T @ H @ WA
        G = G + Ak @ WG @ Ak.T
        Ak = Ak @ WA
        if not np.all(np.isfinite(H_next)):
            break
        done = np.linalg.norm(H_next - H, 1) <= 1e-13 * np.linalg.norm(H_next, 1)
        H = H_next
        if done:
            X = (H + H.T) / 2
            K = np.linalg.solve(R + B.T @ X @ B, B.T @ X @ A)
            radius = np.abs(np.linalg.eigvals(A - B @ K)).max()
            if not radius < 1:
                raise DesignError("the discrete Riccati equation has no stabilising solution "
                                  f"here: the closed loop keeps an eigenvalue of modulus "
                                  f"{radius:.12g} (a mode on the unit circle that the weights "
                                  "do not see?)")
            return X
    raise DesignError("the discrete Riccati equation has no stabilising solution here: the "
                      f"doubling algorithm did not converge in {max_iterations} iterations "
                      "(a mode on the unit circle that the weights do not see?)")


def process_noise_covariance(sys, process_noise) -> np.ndarray:
    """Covariance (n, n) of the noise ``w`` in ``x[k+1] = Ad x[k] + Bd u[k] + w[k]``.

    Parameters
    ----------
    sys : control.StateSpace
        The sampled plant (``Bd`` its ``B``).
    process_noise : mapping of str to float, or array_like
        By name, each entry either a plant *input* (noise held at that input over a
        step, variance [unit of the input^2]: adds ``var Bd_i Bd_i^T``) or a *state*
        (noise added to that state each step, variance [unit of the state^2]: adds
        ``var`` on the diagonal).  Naming states says which modes the model may get
        wrong, so the observer corrects them from the measurements.  As an array: the
        input covariance, shape (m, m) or (m,), as before.

    Raises
    ------
    SignalNameError
        A name that is neither an input nor a state.
    DesignError
        A negative or non-finite variance, an array of the wrong shape.
    """
    B = np.asarray(sys.B)
    if not isinstance(process_noise, Mapping):
        Wu = weight_matrix(sys, process_noise, "input")
        return B @ Wu @ B.T
    inputs, states = signal_labels(sys, "input"), signal_labels(sys, "state")
    check_names(list(process_noise), inputs + states, "input or state")
    by_input = {k: v for k, v in process_noise.items() if k in inputs}
    W = B @ weight_matrix(sys, by_input, "input") @ B.T
    for name, var in process_noise.items():
        if name in inputs:
            continue
        var = float(var)
        if not np.isfinite(var) or var < 0:
            raise DesignError(f"process noise: variance of state {name!r} = {var!r} must be "
                              "finite and >= 0")
        i = states.index(name)
        W[i, i] += var
    return W


def lqg(plant, Q, R, measured: Sequence[str], process_noise, measurement_noise, dt: float,
        x_lin=None) -> LQGDesign:
    """Discrete LQG design on a continuous-time linear plant.

    Parameters
    ----------
    plant : control.StateSpace
        Continuous time, named (e.g. :func:`~controllers.design.adapters.linearize_arm`).
    Q, R : see :func:`lqr`
        Regulator weights (on the plant discretised with a zero-order hold at ``dt``).
    measured : sequence of str
        Plant outputs the controller reads.
    process_noise : mapping or array_like
        Covariance of the process noise (:func:`process_noise_covariance`): by name,
        noise entering at a plant input (covariance ``Bd W Bd^T``) or added directly
        to a state each sample step [unit of the state^2]; as an array, the input
        covariance.
    measurement_noise : mapping or array_like
        Covariance of the measurement noise (named by measured output).
    dt : float
        Sample time [s].
    x_lin : array_like, optional
        Operating point of the plant's states (default zero).
    """
    check_names(list(measured), signal_labels(plant, "output"), "output")
    if not measured:
        raise DesignError("an LQG design needs at least one measured output")
    pd = ct.c2d(plant, dt, "zoh")
    K, _, E = lqr(pd, Q, R)
    idx = [signal_labels(plant, "output").index(m) for m in measured]
    C = np.asarray(pd.C)[idx]
    sensed = ct.ss(pd.A.T, C.T, pd.B.T, 0, dt, states=signal_labels(plant, "state"),
                   inputs=list(measured), outputs=signal_labels(plant, "input"), name=f"{plant.name} (dual)")
    Wx = process_noise_covariance(pd, process_noise)
    V = weight_matrix(sensed, measurement_noise, "input")
    if np.linalg.eigvalsh(V).min() <= 0:
        raise DesignError("measurement noise covariance must be positive definite: every "
                          f"measured output ({', '.join(measured)}) needs a value > 0")
    try:
        check_stabilizable(ct.ss(pd.A.T, C.T, np.zeros((1, plant.nstates)), 0, dt,
                                 states=signal_labels(plant, "state"), inputs=list(measured),
                                 name=f"{plant.name} seen through {', '.join(measured)}"))
    except DesignError as e:
        raise DesignError(str(e).replace("not stabilisable from inputs",
                                         "not detectable from outputs")) from None
    B = np.asarray(pd.B)
    L_filter, _, Eo = ct.dlqe(np.asarray(pd.A), np.eye(plant.nstates), C, Wx
                              + 1e-12 * np.eye(plant.nstates) * np.trace(Wx), V)
    # dlqe gives the filter gain (current estimate); the predictor gain is A L
    L = np.asarray(pd.A) @ L_filter
    x_lin = np.zeros(plant.nstates) if x_lin is None else np.asarray(x_lin, float)
    return LQGDesign(dt=dt, Ad=np.asarray(pd.A).tolist(), Bd=B.tolist(), C=C.tolist(),
                     K=np.asarray(K).tolist(), L=L.tolist(), x_lin=x_lin.tolist(),
                     y_lin=(np.asarray(plant.C)[idx] @ x_lin).tolist(),
                     states=signal_labels(plant, "state"), inputs=signal_labels(plant, "input"),
                     measured=list(measured),
                     info={"regulator_poles": [[float(e.real), float(e.imag)] for e in E],
                           "observer_poles": [[float(e.real), float(e.imag)] for e in Eo]})


def lqg_integral(plant, Q, R, measured: Sequence[str], process_noise, measurement_noise,
                 dt: float, integrated: Sequence[str], x_lin=None) -> LQIDesign:
    """:func:`lqg` with integral action on the measured outputs ``integrated``.

    The regulator is the discrete LQR of the plant sampled at ``dt`` (zero-order hold)
    augmented with one integrator per integrated output,
    ``z[k+1] = z[k] + dt C_int x[k]``; its gain ``[K, Ki]`` gives the law of
    :class:`LQIDesign`.  The observer is that of :func:`lqg` (the integrators are
    known exactly: they are the controller's own states).

    Parameters
    ----------
    Q : mapping or array_like
        State weights over the augmented states: the plant's states and outputs by
        name as in :func:`lqr`, and the integrators as ``<output>_int``
        [1/(unit . s)^2] (:func:`integral_state_names`); or an array of shape
        (n + len(integrated),) or its square.
    integrated : sequence of str
        Measured outputs to integrate (at least one).
    Other parameters : see :func:`lqg`.

    Raises
    ------
    SignalNameError
        An integrated name that is not a plant output, or a weight of an unknown name.
    DesignError
        An integrated output that is not measured, or one the inputs cannot hold at a
        set point (a zero of the plant at DC: the augmented plant is not stabilisable).
    """
    integrated = list(integrated)
    if not integrated:
        raise DesignError("integral action needs at least one integrated output")
    check_names(integrated, signal_labels(plant, "output"), "output")
    missing = [n for n in integrated if n not in measured]
    if missing:
        raise DesignError(f"integrated output(s) {', '.join(missing)} are not measured "
                          f"(measured: {', '.join(measured)})")
    n, ni = plant.nstates, len(integrated)
    pd = ct.c2d(plant, dt, "zoh")
    outputs = signal_labels(plant, "output")
    C_int = np.asarray(pd.C)[[outputs.index(m) for m in integrated]]
    A = np.block([[np.asarray(pd.A), np.zeros((n, ni))], [dt * C_int, np.eye(ni)]])
    B = np.vstack([np.asarray(pd.B), np.zeros((ni, plant.ninputs))])
    augmented = ct.ss(A, B, np.hstack([np.asarray(pd.C), np.zeros((len(outputs), ni))]),
                      np.asarray(pd.D), dt, inputs=signal_labels(plant, "input"), outputs=outputs,
                      states=signal_labels(plant, "state") + integral_state_names(integrated),
                      name=f"{plant.name} with integrators of {', '.join(integrated)}")
    Qa = weight_matrix(augmented, Q, "state")
    Ka, _, E = lqr(augmented, Qa, R)
    # the observer (and a plant-only gain, replaced below) from lqg
    base = lqg(plant, Qa[:n, :n], R, measured, process_noise, measurement_noise, dt, x_lin)
    Ka = np.asarray(Ka)
    info = dict(base.info, regulator_poles=[[float(e.real), float(e.imag)] for e in E])
    fields = {**base.__dict__, "K": Ka[:, :n].tolist(), "info": info}
    design = LQIDesign(**fields, integrated=integrated, Ki=Ka[:, n:].tolist())
    design.check()
    return design


def modal_weight(sys, frequency_hz: float) -> np.ndarray:
    """State weight (n, n) penalising the amplitude of one oscillating mode.

    ``x^T W x = |eta|^2`` with ``eta`` the complex modal coordinate of the mode of
    ``sys`` nearest ``frequency_hz`` (``x = Re(v eta) + other modes``, ``v`` its right
    eigenvector scaled so that its largest entry has magnitude 1).  Added to ``Q`` it
    asks the regulator to damp that mode without weighting any one state (a heavy
    weight on one modal rate instead pins that coordinate and can *lower* the mode's
    damping).

    Raises
    ------
    DesignError
        No oscillating mode within 20 % of ``frequency_hz``.
    """
    A = np.asarray(sys.A)
    lam, V = np.linalg.eig(A)
    lc = np.log(lam.astype(complex)) / sys.dt if sys.dt else lam.astype(complex)
    f = np.abs(lc) / (2 * np.pi)
    candidates = [i for i in range(len(lam)) if lc[i].imag > 0
                  and abs(f[i] - frequency_hz) <= 0.2 * frequency_hz]
    if not candidates:
        known = sorted({round(float(x), 3) for x, l in zip(f, lc) if l.imag > 0})
        raise DesignError(f"no oscillating mode of {sys.name!r} within 20 % of "
                          f"{frequency_hz:g} Hz (modes at {known} Hz)")
    i = min(candidates, key=lambda k: abs(f[k] - frequency_hz))
    V = V.copy()
    V[:, i] /= V[np.argmax(np.abs(V[:, i])), i]
    w = np.linalg.inv(V)[i]
    W = np.real(np.outer(w.conj(), w))
    return (W + W.T) / 2
