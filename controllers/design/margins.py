"""Stability margins of SISO loops and loop-at-a-time margins of MIMO loops, from the
dense frequency response (:func:`margins_from_response`): the loops of an undamped
flexible plant have poles on the stability boundary and near cancellations that make
``control.stability_margins`` ill-conditioned.
"""
from __future__ import annotations

import control as ct
import numpy as np

from controllers.design.adapters import check_names, signal_labels

__all__ = ["loop_margins", "margins_from_response", "siso_margins", "frequency_grid",
           "resonance_grid", "principal_phase"]


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
    check_names(signal_labels(controller, "input"), signal_labels(plant, "output"), "plant output")
    check_names(signal_labels(controller, "output"), signal_labels(plant, "input"), "plant input")
    idx = [signal_labels(plant, "output").index(n) for n in signal_labels(controller, "input")]
    P = plant[idx, :]
    order = [signal_labels(controller, "output").index(n) for n in signal_labels(plant, "input")]
    Kc = controller[order, :]
    Lm = ct.series(P, -Kc)             # plant input -> plant input, negative feedback
    m = plant.ninputs
    if w is None:
        w = frequency_grid(plant)
    out = []
    for i in range(m):
        mask = np.ones(m)
        mask[i] = 0.0
        Li = ct.feedback(Lm, np.diag(mask), sign=-1)[i, i]
        L = np.squeeze(ct.frequency_response(Li, w).complex)
        gm_up, gm_down, pms, wgc = margins_from_response(w, L)
        out.append({
            "input": signal_labels(plant, "input")[i],
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


def frequency_grid(sys, w_low: float = 1e-2) -> np.ndarray:
    """The default grid of the margins [rad/s]: 20000 points, logarithmic, from
    ``w_low`` to just below the Nyquist frequency of a discrete ``sys`` (1e4 rad/s for
    a continuous one)."""
    nyq = np.pi / sys.dt if sys.dt else 1e4
    return np.logspace(np.log10(w_low), np.log10(0.999 * nyq), 20000)


def resonance_grid(sys, w: np.ndarray, max_damping: float = 0.05) -> np.ndarray:
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
    (:func:`resonance_grid`): the peak of an undamped mode crosses 0 dB within a
    relative band far narrower than any uniform grid resolves."""
    w = resonance_grid(loop, frequency_grid(loop)) if w is None else np.asarray(w, float)
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


def principal_phase(g) -> np.ndarray:
    """Unwrapped phase [deg] of a frequency response ``g`` (low to high frequency),
    shifted by a multiple of 360 deg so that it starts in (-270, 90] deg: a loop with k
    integrators starts near -90 k deg whatever branch ``angle`` picked."""
    ph = np.degrees(np.unwrap(np.angle(g)))
    return ph - 360.0 * np.ceil((ph[0] - 90.0) / 360.0)
