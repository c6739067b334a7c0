"""How far a long run is, told to a callback of the caller's: the library prints nothing.

:class:`ProgressReport` spaces the calls by wall clock, so that a callback that draws
something costs nothing noticeable however short the steps are: the first point, then at
most one call every ``interval`` seconds, then the last point.  The driver of
:func:`mbdcore.dae.simulate` and the co-simulation master
(:meth:`fmu.cosim.master.Master.run`) both use it.
"""
from __future__ import annotations

import math
import time
from typing import Any, Callable

__all__ = ["ProgressReport"]


class ProgressReport:
    """Calls ``callback(t, stop)`` [s] when called with ``t``: always the first time,
    then when ``interval`` seconds [s] of wall clock have passed since the last call
    (0: every time), and at :meth:`done`.

    Parameters
    ----------
    callback : callable
        ``callback(t, stop)``.
    stop : float
        The time the run is to reach [s], handed to every call.
    interval : float
        Least wall-clock time [s] between two calls, >= 0.
    """

    def __init__(self, callback: Callable[[float, float], Any], stop: float,
                 interval: float = 0.1):
        if not callable(callback):
            raise TypeError(f"progress must be a callable progress(t, stop_time), got "
                            f"{callback!r}")
        interval = float(interval)
        if not interval >= 0.0:
            raise ValueError(f"progress_interval {interval!r} s must be >= 0")
        self.callback, self.stop, self.interval = callback, float(stop), interval
        self.last_wall = -math.inf
        self.last_t: float | None = None

    def __call__(self, t: float) -> None:
        now = time.perf_counter()
        if now - self.last_wall >= self.interval:
            self.last_wall = now
            self.report(t)

    def done(self, t: float) -> None:
        """The last point (the stop time, or where the run ended early)."""
        if self.last_t != t:
            self.report(t)

    def report(self, t: float) -> None:
        """Call the callback with ``t``, unconditionally."""
        self.last_t = t
        self.callback(t, self.stop)
