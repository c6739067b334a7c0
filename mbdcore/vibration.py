"""Residual vibration: the peak-to-peak size of a signal over a time window (one
definition, used by the arm's controllers, the demo, the examples, the sweeps and the
antenna's deployment)."""
from __future__ import annotations

import numpy as np
from scipy.spatial import ConvexHull, QhullError

__all__ = ["peak_to_peak_2d", "residual_vibration"]


def peak_to_peak_2d(points) -> float:
    """Diameter [unit of points] of a set of planar points, shape (n, 2)."""
    p = np.asarray(points, float)
    if len(p) < 2:
        return 0.0
    try:
        p = p[ConvexHull(p).vertices]
    except (QhullError, ValueError):
        pass  # collinear or too few points: use them all
    d = p[:, None, :] - p[None, :, :]
    return float(np.sqrt((d ** 2).sum(-1)).max())


def residual_vibration(t, signal, start: float | None = None, window: float = 1.0) -> float:
    """Peak-to-peak size of a vibration over ``[start, start + window]`` [s]: the one
    definition of residual vibration in the project (the arm's moves:
    :func:`controllers.evaluation.validation.settled_move`, whose window starts when the
    joints have settled; the antenna's deployment:
    :meth:`mbdcore.models.antenna.DeploymentResult.residual_vibration`, over the last
    seconds of the record).

    Parameters
    ----------
    t : array_like, shape (n,)
        Time [s].
    signal : array_like, shape (n,) or (n, 2)
        A deflection [m] (peak-to-peak: max - min), or a planar deflection vector such
        as the end-effector deflection (peak-to-peak: the diameter of the curve).
    start : float, optional
        Start of the window [s]; default: the last ``window`` seconds of the record.
    window : float
        Length of the window [s].

    Raises
    ------
    ValueError
        If the record does not cover the window.
    """
    t = np.asarray(t, float)
    signal = np.asarray(signal, float)
    if start is None:
        start = t[-1] - window
    elif t[-1] < start + window - 1e-9:
        raise ValueError(f"the record ends at {t[-1]:g} s, before the end of the residual-"
                         f"vibration window [{start:g}, {start + window:g}] s")
    sel = (t >= start - 1e-9) & (t <= start + window + 1e-9)
    if signal.ndim == 2:
        return peak_to_peak_2d(signal[sel])
    return float(np.ptp(signal[sel]))
