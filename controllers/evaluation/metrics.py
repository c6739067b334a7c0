"""Closed-loop performance figures of a point-to-point move; the residual vibration
(:func:`residual_vibration`, :func:`peak_to_peak_2d`) is :mod:`mbdcore.vibration`'s, the
one definition."""
from __future__ import annotations

import numpy as np

from mbdcore.vibration import peak_to_peak_2d, residual_vibration

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
