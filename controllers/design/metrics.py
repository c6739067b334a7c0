"""Closed-loop performance figures of a point-to-point move."""
from __future__ import annotations

import numpy as np
from scipy.spatial import ConvexHull, QhullError

__all__ = ["move_metrics", "peak_to_peak_2d", "residual_vibration"]


def move_metrics(t, y, start: float, target: float, band: float = 0.02) -> dict:
    """Overshoot and settling of a signal ``y(t)`` moving from ``start`` to ``target``.

    Parameters
    ----------
    t, y : array_like
        Time [s] and signal (any unit).
    start, target : float
        Initial and final values of the move (unit of y).
    band : float
        Settling band as a fraction of the move (0.02 = 2 %).

    Returns
    -------
    dict
        ``overshoot`` [fraction of the move, >= 0], ``settling_time`` [s] (first time
        after which y stays within the band; ``inf`` if it never does),
        ``final_error`` [fraction of the move] at the last sample and
        ``max_error_last_second`` [fraction of the move] over the last second.
    """
    t, y = np.asarray(t, float), np.asarray(y, float)
    move = target - start
    if move == 0.0:
        raise ValueError("start and target are equal: a move of zero has no overshoot")
    progress = (y - start) / move            # 0 at the start, 1 at the target
    err = np.abs(progress - 1.0)
    outside = np.nonzero(err > band)[0]
    if len(outside) == 0:
        settling = float(t[0])
    elif outside[-1] == len(t) - 1:
        settling = float("inf")
    else:
        settling = float(t[outside[-1] + 1])
    last = t >= t[-1] - 1.0
    return {
        "overshoot": float(max(progress.max() - 1.0, 0.0)),
        "settling_time": settling,
        "final_error": float(progress[-1] - 1.0),
        "max_error_last_second": float(err[last].max()),
    }


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
    """Peak-to-peak size of a vibration over ``[start, start + window]`` [s].

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
