"""Control-design helpers on python-control objects with named signals.

* :func:`weight_matrix` / :func:`lqr` — LQR with weights named by state, output or
  input (``Q={"w1": 1e4, "theta1": 100}``), stabilisability checked first;
* :func:`lqg` — discrete LQR + steady-state Kalman predictor on measured outputs;
* :func:`lqg_integral` — the same with integrators on chosen measured outputs
  (:class:`LQIDesign`; :func:`design_from_json` reads either design);
* :func:`modal_table` — frequencies and damping ratios of a linear system;
* :func:`loop_margins` — loop-at-a-time gain/phase margins and sensitivity peaks at
  the plant input of a MIMO loop;
* :func:`tune_pid` — PID gains that put a SISO loop's gain crossover at a bandwidth
  with a phase margin, solved from the plant's frequency response;
* :func:`plot_bode`, :func:`plot_step` — figures into PNG files (returned: the
  matplotlib Figure, with ``.path`` the file).

Every bad request (unknown signal name, weight of the wrong shape or sign, a mode the
inputs cannot stabilise) raises :class:`DesignError` or :class:`SignalNameError`
naming it.
"""
from __future__ import annotations

import functools
import os
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

import control as ct
import numpy as np
import scipy.linalg as sl

from controllers.design.adapters import check_names
from controllers.laws.arm_lqg import (
    DesignError,
    LQGDesign,
    LQIDesign,
    integral_state_names,
)
from controllers.laws.pid import pid_transfer_function
from mbdcore.models.manipulator import ARM_OUTPUT_SIGNALS

__all__ = ["weight_matrix", "check_stabilizable", "lqr",
           "lqg", "process_noise_covariance", "modal_table", "loop_margins",
           "siso_margins", "tune_pid",
           "PIDTuning", "plot_bode", "plot_step", "minimal_realization",
           "DesignWarning", "principal_phase", "SIGNAL_UNITS"]


def _labels(sys, kind: str) -> list[str]:
    return list(getattr(sys, f"{kind}_labels"))


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
        names = _labels(sys, kind)
        known = names + (_labels(sys, "output") if kind == "state" else [])
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
                c = np.asarray(sys.C)[_labels(sys, "output").index(name)]
                W += w * np.outer(c, c)
        return W
    W = np.asarray(weights, dtype=float)
    if W.shape == (n,):
        W = np.diag(W)
    if W.shape != (n, n):
        raise DesignError(f"{what} has shape {W.shape}; expected ({n}, {n}) or ({n},) for the "
                          f"{n} {kind}s {', '.join(_labels(sys, kind))}")
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
            states = _labels(sys, "state")
            dominant = states[int(np.argmax(np.abs(V[:, k])))]
            bad.append(f"eigenvalue {complex(l):.6g} ({abs(lc) / (2 * np.pi):.4g} Hz, mostly "
                       f"state {dominant!r})")
    if bad:
        raise DesignError(f"system {sys.name!r} is not stabilisable from inputs "
                          f"{', '.join(_labels(sys, 'input'))}: uncontrollable mode(s) "
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
                          f"({', '.join(_labels(sys, 'input'))}) needs a weight > 0")
    check_stabilizable(sys)
    fn = ct.dlqr if sys.dt else ct.lqr
    return fn(np.asarray(sys.A), np.asarray(sys.B), Qm, Rm)


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
    inputs, states = _labels(sys, "input"), _labels(sys, "state")
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
    check_names(list(measured), _labels(plant, "output"), "output")
    if not measured:
        raise DesignError("an LQG design needs at least one measured output")
    pd = ct.c2d(plant, dt, "zoh")
    K, _, E = lqr(pd, Q, R)
    idx = [_labels(plant, "output").index(m) for m in measured]
    C = np.asarray(pd.C)[idx]
    sensed = ct.ss(pd.A.T, C.T, pd.B.T, 0, dt, states=_labels(plant, "state"),
                   inputs=list(measured), outputs=_labels(plant, "input"), name=f"{plant.name} (dual)")
    Wx = process_noise_covariance(pd, process_noise)
    V = weight_matrix(sensed, measurement_noise, "input")
    if np.linalg.eigvalsh(V).min() <= 0:
        raise DesignError("measurement noise covariance must be positive definite: every "
                          f"measured output ({', '.join(measured)}) needs a value > 0")
    try:
        check_stabilizable(ct.ss(pd.A.T, C.T, np.zeros((1, plant.nstates)), 0, dt,
                                 states=_labels(plant, "state"), inputs=list(measured),
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
                     states=_labels(plant, "state"), inputs=_labels(plant, "input"),
                     measured=list(measured),
                     info={"regulator_poles": [[float(e.real), float(e.imag)] for e in E],
                           "observer_poles": [[float(e.real), float(e.imag)] for e in Eo]})


# ----------------------------------------------------------------------------------
# integral action
# ----------------------------------------------------------------------------------
__all__ += ["lqg_integral"]


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
    check_names(integrated, _labels(plant, "output"), "output")
    missing = [n for n in integrated if n not in measured]
    if missing:
        raise DesignError(f"integrated output(s) {', '.join(missing)} are not measured "
                          f"(measured: {', '.join(measured)})")
    n, ni = plant.nstates, len(integrated)
    pd = ct.c2d(plant, dt, "zoh")
    outputs = _labels(plant, "output")
    C_int = np.asarray(pd.C)[[outputs.index(m) for m in integrated]]
    A = np.block([[np.asarray(pd.A), np.zeros((n, ni))], [dt * C_int, np.eye(ni)]])
    B = np.vstack([np.asarray(pd.B), np.zeros((ni, plant.ninputs))])
    augmented = ct.ss(A, B, np.hstack([np.asarray(pd.C), np.zeros((len(outputs), ni))]),
                      np.asarray(pd.D), dt, inputs=_labels(plant, "input"), outputs=outputs,
                      states=_labels(plant, "state") + integral_state_names(integrated),
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


def loop_margins(plant, controller, w=None) -> list[dict]:
    """Loop-at-a-time margins at the plant input of ``u = controller(y)``.

    Loop i is broken at plant input i with the other loops closed.

    Parameters
    ----------
    plant : StateSpace
        Inputs u, outputs including every input of ``controller`` (by name).
    controller : StateSpace or TransferFunction
        Inputs: measured plant outputs, outputs: plant inputs (same names); the
        feedback sign is in the controller (``u = controller * y``).
    w : array_like, optional
        Frequencies [rad/s] for the sensitivity peak.

    Returns
    -------
    list of dict, one per input
        ``input``, ``gain_margin_db`` (smallest upward margin, inf if none),
        ``gain_reduction_db`` (largest downward margin as a negative number, -inf if
        none), ``phase_margin_deg`` (smallest over all crossovers),
        ``crossover_hz``, ``sensitivity_peak`` (max |1/(1 + L_i)|).
    """
    check_names(_labels(controller, "input"), _labels(plant, "output"), "plant output")
    check_names(_labels(controller, "output"), _labels(plant, "input"), "plant input")
    idx = [_labels(plant, "output").index(n) for n in _labels(controller, "input")]
    P = plant[idx, :]
    order = [_labels(controller, "output").index(n) for n in _labels(plant, "input")]
    Kc = controller[order, :]
    Lm = ct.series(P, -Kc)             # plant input -> plant input, negative feedback
    m = plant.ninputs
    if w is None:
        w = _default_grid(plant)
    out = []
    for i in range(m):
        mask = np.ones(m)
        mask[i] = 0.0
        Li = ct.feedback(Lm, np.diag(mask), sign=-1)[i, i]
        L = np.squeeze(ct.frequency_response(Li, w).complex)
        gm_up, gm_down, pms, wgc = margins_from_response(w, L)
        out.append({
            "input": _labels(plant, "input")[i],
            "gain_margin_db": gm_up,
            "gain_reduction_db": gm_down,
            "phase_margin_deg": pms,
            "crossover_hz": [float(x) / (2 * np.pi) for x in wgc],
            "sensitivity_peak": float(np.abs(1.0 / (1.0 + L)).max()),
            "loop": Li,
        })
    return out


def margins_from_response(w, L):
    """Margins of a SISO loop from its frequency response on a dense grid.

    Computed from the response rather than from polynomial roots: the loops of an
    undamped flexible plant have poles on the stability boundary and near
    cancellations that make ``control.stability_margins`` ill-conditioned.

    Returns (upward gain margin [dB] (inf if none), downward gain margin [dB]
    (-inf if none), phase margin [deg] (smallest over all crossovers, inf if none),
    gain-crossover frequencies [rad/s]).
    """
    mag = np.abs(L)
    ph = np.angle(L)                                    # (-pi, pi]; -180 deg is -1
    up, down, pms, wgc = [], [], [], []
    for k in range(len(w) - 1):
        if (mag[k] - 1.0) * (mag[k + 1] - 1.0) < 0:     # gain crossover
            a = (1.0 - mag[k]) / (mag[k + 1] - mag[k])
            z = L[k] + a * (L[k + 1] - L[k])
            pms.append(180.0 - abs(np.degrees(np.angle(z))))
            wgc.append(w[k] + a * (w[k + 1] - w[k]))
        if L[k].imag * L[k + 1].imag < 0:               # real-axis crossing
            a = L[k].imag / (L[k].imag - L[k + 1].imag)
            re = L[k].real + a * (L[k + 1].real - L[k].real)
            if re < 0:                                  # phase crossover (-180 deg)
                g = -20 * np.log10(-re)
                (up if g > 0 else down).append(g)
    return (min(up) if up else np.inf, max(down) if down else -np.inf,
            min(pms) if pms else np.inf, wgc)


def _default_grid(sys, w_low: float = 1e-2) -> np.ndarray:
    nyq = np.pi / sys.dt if sys.dt else 1e4
    return np.logspace(np.log10(w_low), np.log10(0.999 * nyq), 20000)


def _resonance_grid(sys, w: np.ndarray, max_damping: float = 0.05) -> np.ndarray:
    """``w`` [rad/s] with points added at relative offsets 1e-1 .. 1e-10 on both sides
    of the natural frequency of every pole of ``sys`` damped less than ``max_damping``
    (continuous-time equivalent for a discrete system) inside ``w``'s range."""
    lam = np.linalg.eigvals(np.asarray(ct.ss(sys).A)).astype(complex)
    if sys.dt:
        lam = np.log(lam[lam != 0]) / sys.dt
    wn = np.abs(lam)
    keep = (lam.imag > 0) & (-lam.real <= max_damping * wn) & (wn > w[0]) & (wn < w[-1])
    offsets = np.logspace(-10, -1, 46)
    extra = [wn[keep][:, None] * (1 + sign * offsets)[None, :] for sign in (-1, 1)]
    grid = np.concatenate([w, wn[keep], *[e.ravel() for e in extra]])
    return np.unique(grid[(grid >= w[0]) & (grid <= w[-1])])


def siso_margins(loop, w=None) -> dict:
    """Margins of a SISO loop ``L`` (negative feedback ``1 + L``) from its dense
    frequency response: ``gain_margin_db`` (upward, inf if none), ``gain_reduction_db``
    (downward, -inf if none), ``phase_margin_deg`` (smallest over all crossovers),
    ``crossover_hz`` (list), ``phase_margins_deg`` (list: the margin at each crossover)
    and ``sensitivity_peak``.

    The default grid (``w`` None) is refined around the loop's lightly damped poles
    (:func:`_resonance_grid`): the peak of an undamped mode crosses 0 dB within a
    relative band far narrower than any uniform grid resolves."""
    w = _resonance_grid(loop, _default_grid(loop)) if w is None else np.asarray(w, float)
    L = np.squeeze(ct.frequency_response(loop, w).complex)
    up, down, pm, wgc = margins_from_response(w, L)
    return {"gain_margin_db": up, "gain_reduction_db": down, "phase_margin_deg": pm,
            "crossover_hz": [float(x) / (2 * np.pi) for x in wgc],
            "phase_margins_deg": _phase_margins(w, L),
            "sensitivity_peak": float(np.abs(1.0 / (1.0 + L)).max())}


def _phase_margins(w, L) -> list[float]:
    """Phase margin [deg] at each gain crossover of ``L`` (order of ``crossover_hz``)."""
    mag = np.abs(L)
    out = []
    for k in range(len(w) - 1):
        if (mag[k] - 1.0) * (mag[k + 1] - 1.0) < 0:
            a = (1.0 - mag[k]) / (mag[k + 1] - mag[k])
            out.append(float(180.0 - abs(np.degrees(np.angle(L[k] + a * (L[k + 1] - L[k]))))))
    return out


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
    out = ct.ss(A, B, C, np.asarray(sys.D), sys.dt, inputs=_labels(sys, "input"),
                outputs=_labels(sys, "output"), states=[f"x{i}" for i in range(r)],
                name=sys.name)
    out.removed = n - r
    return out


class DesignWarning(UserWarning):
    """A design met its target at the design frequency but not over the whole loop."""


@dataclass
class PIDTuning:
    """Result of :func:`tune_pid`: gains (``kp``, ``ki`` [1/s], ``kd`` [s], ``tf`` [s],
    the parameters of :class:`~controllers.laws.pid.PIDController`), the controller
    ``C`` (continuous or discrete as the plant; input the error ``<output>_error`` =
    reference - output, output the plant input ``<input>``, by the channel's names), the
    margins of ``C P`` (:func:`siso_margins`), the channel ``plant`` tuned on (its
    minimal realization: :func:`minimal_realization`) and the ``loop`` ``C P``."""

    kp: float
    ki: float
    kd: float
    tf: float
    controller: object
    margins: dict
    plant: object = None
    loop: object = None

    def params(self) -> dict:
        """Keyword arguments of :class:`~controllers.laws.pid.PIDController`."""
        return {"kp": self.kp, "ki": self.ki, "kd": self.kd, "tf": self.tf}


def tune_pid(plant, bandwidth_hz: float, phase_margin_deg: float, kind: str = "pid",
             integral_ratio: float = 10.0, filter_ratio: float = 10.0,
             input: str | None = None, output: str | None = None,
             names: tuple[str, str] | None = None, pm_tolerance_deg: float = 1.0) -> PIDTuning:
    """PID gains putting the gain crossover of ``L = C P`` at ``bandwidth_hz`` with
    ``phase_margin_deg``.

    At ``wc = 2 pi bandwidth_hz`` the controller must equal
    ``C(j wc) = exp(j (PM - 180 deg)) / P(j wc)``.  ``C = kp + ki I + kd D`` is linear in
    the gains once the filter ``tf = 1 / (filter_ratio wc)`` is fixed
    (``I = 1/s``, ``D = s / (tf s + 1)``, or their sampled forms of
    :class:`~controllers.laws.pid.PIDController` for a discrete plant), so the real and
    imaginary parts of that condition are two linear equations:

    * ``kind="pid"``: unknowns ``kp``, ``kd``, with the integral corner a factor
      ``integral_ratio`` below the crossover, ``ki = kp wc / integral_ratio``;
    * ``kind="pi"``: unknowns ``kp``, ``ki``; ``kind="pd"``: unknowns ``kp``, ``kd``.

    A state-space channel is first reduced to its minimal realization
    (:func:`minimal_realization`): modes the channel's input cannot move or its output
    cannot see (in one channel of the arm, the rigid mode of the other joint) would
    stay in the single loop whatever the gains, and are no part of it.

    Parameters
    ----------
    plant : control.StateSpace or TransferFunction
        SISO, or MIMO with ``input`` and ``output`` naming the channel.  Continuous
        or discrete; a discrete plant is tuned with the sampled PID law.
    bandwidth_hz : float
        Gain-crossover frequency [Hz].
    phase_margin_deg : float
        Phase margin [deg] at that crossover, in (0, 180).
    names : pair of str, optional
        (input, output) names of the controller; default
        ``("<output>_error", "<input>")`` with the channel's signal names, so that
        ``control.interconnect`` connects it to the plant's input and to a summing
        junction ``<output>_ref - <output>`` by name.
    pm_tolerance_deg : float
        A :class:`DesignWarning` is issued when the smallest phase margin over all the
        loop's gain crossovers differs from ``phase_margin_deg`` by more than this.

    Returns
    -------
    PIDTuning
        Gains and the margins of the whole loop (a flexible plant may cross 0 dB at
        other frequencies too: then the warning says where, and ``margins`` has every
        crossover).

    Raises
    ------
    DesignError
        The target needs a negative gain (more phase lead or lag than the chosen PID
        form can give at ``bandwidth_hz``), or the tuned loop is unstable.
    """

    if kind not in ("pid", "pi", "pd"):
        raise DesignError(f"kind = {kind!r}; accepted: 'pid', 'pi', 'pd'")
    if not (np.isfinite(bandwidth_hz) and bandwidth_hz > 0):
        raise DesignError(f"bandwidth_hz = {bandwidth_hz!r} must be a finite number > 0")
    if not 0 < phase_margin_deg < 180:
        raise DesignError(f"phase_margin_deg = {phase_margin_deg!r} must be in (0, 180)")
    if plant.ninputs != 1 or plant.noutputs != 1:
        if input is None or output is None:
            raise DesignError(f"plant {plant.name!r} has {plant.ninputs} inputs and "
                              f"{plant.noutputs} outputs: name the channel with input= and "
                              "output=")
        check_names([input], _labels(plant, "input"), "input")
        check_names([output], _labels(plant, "output"), "output")
        plant = plant[_labels(plant, "output").index(output), _labels(plant, "input").index(input)]
    if isinstance(plant, ct.StateSpace):
        plant = minimal_realization(plant)
    c_in, c_out = names if names is not None else (f"{_labels(plant, 'output')[0]}_error",
                                                   _labels(plant, "input")[0])
    wc = 2 * np.pi * bandwidth_hz
    dt = plant.dt or None
    if dt and wc >= np.pi / dt:
        raise DesignError(f"bandwidth {bandwidth_hz:g} Hz is not below the Nyquist frequency "
                          f"{0.5 / dt:g} Hz of the plant's sample time {dt:g} s")
    tf = 1.0 / (filter_ratio * wc)
    P = complex(np.squeeze(ct.frequency_response(plant, [wc]).complex))
    target = np.exp(1j * np.radians(phase_margin_deg - 180.0)) / P
    unit = {k: complex(np.squeeze(ct.frequency_response(
        pid_transfer_function(*g, tf, dt), [wc]).complex))
        for k, g in (("p", (1, 0, 0)), ("i", (0, 1, 0)), ("d", (0, 0, 1)))}
    if kind == "pid":
        cols = (("kp", unit["p"] + unit["i"] * wc / integral_ratio), ("kd", unit["d"]))
    elif kind == "pi":
        cols = (("kp", unit["p"]), ("ki", unit["i"]))
    else:
        cols = (("kp", unit["p"]), ("kd", unit["d"]))
    A = np.array([[c.real for _, c in cols], [c.imag for _, c in cols]])
    x = np.linalg.solve(A, [target.real, target.imag])
    gains = {"kp": 0.0, "ki": 0.0, "kd": 0.0, **dict(zip((n for n, _ in cols), x))}
    if kind == "pid":
        gains["ki"] = gains["kp"] * wc / integral_ratio
    negative = [n for n, v in gains.items() if v < 0]
    if negative:
        need = np.degrees(np.angle(target))
        raise DesignError(f"a {kind.upper()} cannot give {phase_margin_deg:g} deg of phase margin "
                          f"at {bandwidth_hz:g} Hz: the plant's phase there is "
                          f"{np.degrees(np.angle(P)):.1f} deg, the controller would need "
                          f"{need:+.1f} deg, and that takes negative {', '.join(negative)}")
    C = pid_transfer_function(gains["kp"], gains["ki"], gains["kd"], tf if gains["kd"] else 0.0,
                              dt, name=f"pid {c_in} -> {c_out}")
    C = ct.tf(C, inputs=c_in, outputs=c_out, name=C.name)
    loop = ct.ss(ct.series(plant, C))
    closed = ct.feedback(loop, 1)
    poles = closed.poles()
    unstable = poles[np.abs(poles) >= 1 - 1e-9] if dt else poles[poles.real >= -1e-9]
    if len(unstable):
        raise DesignError(f"the tuned loop ({kind.upper()} crossing over at {bandwidth_hz:g} Hz) "
                          f"is unstable: closed-loop poles {', '.join(f'{p:.4g}' for p in unstable)}")
    margins = siso_margins(loop)
    if (margins["phase_margins_deg"]
            and abs(margins["phase_margin_deg"] - phase_margin_deg) > pm_tolerance_deg):
        k = int(np.argmin(margins["phase_margins_deg"]))
        warnings.warn(
            f"{kind.upper()} tuned for {phase_margin_deg:g} deg of phase margin at "
            f"{bandwidth_hz:g} Hz: the loop crosses 0 dB {len(margins['crossover_hz'])} times "
            f"(at {', '.join(f'{f:.3g}' for f in margins['crossover_hz'])} Hz) and its phase "
            f"margin is {margins['phase_margin_deg']:.1f} deg, at "
            f"{margins['crossover_hz'][k]:.3g} Hz", DesignWarning, stacklevel=2)
    return PIDTuning(kp=float(gains["kp"]), ki=float(gains["ki"]), kd=float(gains["kd"]),
                     tf=float(tf if gains["kd"] else 0.0), controller=C, margins=margins,
                     plant=plant, loop=loop)


@functools.cache
def _saved_figure_class():
    # matplotlib is imported when a figure is asked for, not with the design tools
    from matplotlib.figure import Figure

    class SavedFigure(Figure):
        """A matplotlib Figure written to a file: ``path`` is that file, and the figure
        is path-like (``os.fspath(fig)``, ``Path(fig)``, ``open(fig, "rb")`` give the
        file), so callers that used the path the plot functions returned keep working."""

        def __fspath__(self) -> str:
            return os.fspath(self.path)

    return SavedFigure


def _figure(rows: int, size=(8, 6)):
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    fig = _saved_figure_class()(figsize=size)
    FigureCanvasAgg(fig)
    return fig, fig.subplots(rows, 1, sharex=True, squeeze=False)[:, 0]


def _save(fig, path):
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    fig.path = Path(path)
    return fig


def principal_phase(g) -> np.ndarray:
    """Unwrapped phase [deg] of a frequency response ``g`` (low to high frequency),
    shifted by a multiple of 360 deg so that it starts in (-270, 90] deg: a loop with k
    integrators starts near -90 k deg whatever branch ``angle`` picked."""
    ph = np.degrees(np.unwrap(np.angle(g)))
    return ph - 360.0 * np.ceil((ph[0] - 90.0) / 360.0)


#: Units of the arm's signals, for axis labels (others: pass ``units``).
SIGNAL_UNITS = {**{s.name: s.unit for s in ARM_OUTPUT_SIGNALS}, "tau1": "N m", "tau2": "N m"}


def _unit(name: str, units: Mapping[str, str] | None) -> str:
    unit = (units or {}).get(name, SIGNAL_UNITS.get(name))
    return f"{name} [{unit}]" if unit else f"{name} [unit of {name}]"


def plot_bode(loops: Mapping[str, object], path, hz=(0.05, 100.0)):
    """Bode magnitude [dB] and phase [deg] of SISO loops ``{label: system}`` against
    frequency [Hz] into a PNG file, with the margins of each loop marked: gain
    crossovers (circles, phase margin at the lowest-margin one in the legend) and
    phase crossovers (squares, gain margin).  The phase is unwrapped and starts in
    (-270, 90] deg (:func:`principal_phase`).

    Returns
    -------
    matplotlib.figure.Figure
        The figure, with ``.path`` the PNG file; it is path-like (``os.fspath`` gives
        that file), so code that used the path returned before keeps working.
    """
    fig, ax = _figure(2)
    f_all = np.logspace(np.log10(hz[0]), np.log10(hz[1]), 4000)
    for k, (label, sys) in enumerate(loops.items()):
        color = f"C{k % 10}"
        f = f_all[f_all < 0.5 / sys.dt] if sys.dt else f_all
        f = _resonance_grid(sys, 2 * np.pi * f) / (2 * np.pi)    # draw the resonance peaks
        g = np.squeeze(ct.frequency_response(sys, 2 * np.pi * f).complex)
        mag, ph = 20 * np.log10(np.abs(g)), principal_phase(g)
        m = siso_margins(sys)                   # default grid, refined at resonances
        pm_text = (f", PM {m['phase_margin_deg']:.1f} deg" if m["phase_margins_deg"] else "")
        gm_text = (f", GM {m['gain_margin_db']:.1f} dB" if np.isfinite(m["gain_margin_db"])
                   else "")
        ax[0].semilogx(f, mag, color, label=label + pm_text + gm_text)
        ax[1].semilogx(f, ph, color, label=label)
        for fc, pm in zip(m["crossover_hz"], m["phase_margins_deg"]):
            if not f[0] <= fc <= f[-1]:
                continue
            # the loop's phase at the crossover, on the branch of the curve drawn there
            # (a resonance's crossing is narrower than the plot's grid), and the bar
            # from it to the nearest odd multiple of 180 deg: its length is the margin
            p_at = np.degrees(np.angle(complex(np.squeeze(
                ct.frequency_response(sys, [2 * np.pi * fc]).complex))))
            p_at += 360.0 * np.round((np.interp(np.log(fc), np.log(f), ph) - p_at) / 360.0)
            critical = 180.0 * (2.0 * np.round((p_at - 180.0) / 360.0) + 1.0)
            ax[0].plot(fc, 0.0, "o", color=color, mfc="none")
            ax[1].plot(fc, p_at, "o", color=color, mfc="none")
            ax[1].vlines(fc, min(p_at, critical), max(p_at, critical), color=color, lw=0.8)
        # phase crossovers: where the unwrapped phase passes an odd multiple of 180 deg
        odd = np.floor((ph + 180.0) / 360.0)
        for i in np.nonzero(np.diff(odd))[0]:
            ax[0].plot(f[i], mag[i], "s", color=color, mfc="none")
            ax[0].vlines(f[i], min(mag[i], 0.0), max(mag[i], 0.0), color=color, lw=0.8)
    ax[0].axhline(0, color="k", lw=0.5)
    ax[1].axhline(-180, color="k", lw=0.5)
    ax[0].set_ylabel("|L| [dB]")
    ax[1].set_ylabel("phase [deg]")
    ax[1].set_xlabel("frequency [Hz]")
    for a in ax:
        a.grid(True, which="both", alpha=0.3)
        a.legend(fontsize=7)
    ax[0].set_title("loop gain; o gain crossover (bar: phase margin), "
                    "[] phase crossover (bar: gain margin)", fontsize=8)
    return _save(fig, path)


def plot_step(sys, path, t_end: float = 3.0, title: str = "",
              units: Mapping[str, str] | None = None):
    """Step responses of every input-output pair of a linear system into a PNG file:
    output [its unit] against time [s] for a unit step [unit of the input] of each input.

    ``units`` maps signal names to units (default: the arm's, :data:`SIGNAL_UNITS`).
    Returns the matplotlib Figure, with ``.path`` the PNG file (path-like, as
    :func:`plot_bode`'s).
    """
    resp = ct.step_response(sys, np.linspace(0, t_end, 1500) if not sys.dt
                            else np.arange(0, t_end, sys.dt))
    fig, ax = _figure(sys.noutputs, size=(8, 2 + 1.6 * sys.noutputs))
    y = np.asarray(resp.outputs).reshape(sys.noutputs, sys.ninputs, -1)
    for i in range(sys.noutputs):
        for j in range(sys.ninputs):
            ax[i].plot(resp.time, y[i, j], label=f"unit step of {_unit(_labels(sys, 'input')[j], units)}")
        ax[i].set_ylabel(_unit(_labels(sys, "output")[i], units), fontsize=8)
        ax[i].grid(True, alpha=0.3)
        ax[i].legend(fontsize=7)
    ax[-1].set_xlabel("time [s]")
    fig.suptitle(title or f"step responses of {sys.name}")
    return _save(fig, path)


# ----------------------------------------------------------------------------------
# robustness: mode weights and the closed loop over a family of plants
# ----------------------------------------------------------------------------------
__all__ += ["modal_weight", "RobustnessScan", "robustness_scan"]


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


@dataclass
class RobustnessScan:
    """Result of :func:`robustness_scan`.

    ``least_damped`` maps each plant's label to its least damped closed-loop mode (a
    row of :func:`modal_table`: ``frequency`` [Hz], ``damping``, ``eigenvalue``);
    ``min_damping`` is the smallest of them (< 0: some plant's loop is unstable) and
    ``worst`` the label of that plant.
    """

    least_damped: dict
    min_damping: float
    worst: object

    def __float__(self) -> float:
        return float(self.min_damping)


def robustness_scan(design: LQGDesign, plants: Mapping, max_frequency: float = np.inf,
                    ) -> RobustnessScan:
    """Least damping of the linear closed loop of ``design`` over a family of plants.

    Parameters
    ----------
    design : LQGDesign or LQIDesign
        Its feedback part (:meth:`LQGDesign.controller`) closes each loop.
    plants : mapping of label to control.StateSpace
        Linear plants with the design's inputs and (at least) its measured outputs,
        by name: continuous (sampled here with a zero-order hold at ``design.dt``) or
        discrete at ``design.dt``.
    max_frequency : float
        Only closed-loop modes below this frequency [Hz] count (default: all).

    Returns
    -------
    RobustnessScan
    """
    if not plants:
        raise DesignError("robustness_scan needs at least one plant")
    ctrl = design.controller()
    least = {}
    for label, plant in plants.items():
        if not plant.dt:
            plant = ct.c2d(plant, design.dt, "zoh")
        elif abs(plant.dt - design.dt) > 1e-12 * design.dt:
            raise DesignError(f"plant {label!r} is sampled at {plant.dt!r} s, the design at "
                              f"{design.dt!r} s")
        check_names(design.measured, _labels(plant, "output"), f"output of plant {label!r}")
        check_names(design.inputs, _labels(plant, "input"), f"input of plant {label!r}")
        idx = [_labels(plant, "output").index(m) for m in design.measured]
        order = [_labels(plant, "input").index(u) for u in design.inputs]
        loop = ct.feedback(plant[idx, order], ctrl, sign=1)   # ctrl carries u = -K xh
        modes = [m for m in modal_table(loop) if m["frequency"] < max_frequency]
        for m in modes:
            if m["rigid"]:            # a closed-loop pole at the origin: not damped
                m["damping"] = 0.0
        least[label] = min(modes, key=lambda m: m["damping"])
    worst = min(least, key=lambda k: least[k]["damping"])
    return RobustnessScan(least_damped=least, min_damping=float(least[worst]["damping"]),
                          worst=worst)
