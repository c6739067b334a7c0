"""Real-time pacing: :class:`Pacer` sleeps until each communication point is due on the
wall clock, :class:`RealTimeStats` says how well a run kept to it."""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass

__all__ = ["Pacer", "RealTimeStats"]


@dataclass
class RealTimeStats:
    """How well a real-time run kept to the wall clock.

    The results of communication point ``t_k`` are due at wall time
    ``t0_wall + (t_k - t0) / speed``.  A step whose results are ready after that is an
    *overrun* and its *lateness* is how late they were (the master does not wait, it
    catches up; a run that is slower than real time falls further behind at every step,
    and its lateness grows).  Otherwise the master sleeps until the due time, and the
    *jitter* is how late it actually resumed: a property of the sleep, measured over the
    steps that were on time only.

    Attributes
    ----------
    speed : float
        Simulated seconds per wall-clock second.
    steps : int
        Communication steps paced.
    overruns : int
        Steps whose results were late.
    worst_lateness : float
        Largest lateness [s] (0 if no overrun): how far behind the wall clock the run
        fell.
    lateness_mean : float
        Mean lateness over the overruns [s] (0 if none).
    min_slack : float
        Smallest margin between a step's results being ready and their due time [s],
        over all steps: how close the run came to an overrun (negative: the worst
        overrun's lateness).
    jitter_mean, jitter_std, jitter_max : float
        Statistics of (resume time - due time) over the steps that were on time [s]
        (0 if none was).
    wall_time : float
        Wall time from the first step to the last [s].
    """

    speed: float
    steps: int = 0
    overruns: int = 0
    worst_lateness: float = 0.0
    lateness_mean: float = 0.0
    min_slack: float = math.inf
    jitter_mean: float = 0.0
    jitter_std: float = 0.0
    jitter_max: float = 0.0
    wall_time: float = 0.0

    @property
    def overrun_fraction(self) -> float:
        """Overruns / steps (0 for a run without steps)."""
        return self.overruns / self.steps if self.steps else 0.0

    def __str__(self) -> str:
        text = f"real time x{self.speed:g}: {self.steps} steps in {self.wall_time:.3f} s"
        if self.overruns:
            text += (f", {self.overruns} overruns ({100 * self.overrun_fraction:.1f} % of the "
                     f"steps): results late by {1e3 * self.lateness_mean:.3f} ms on average, "
                     f"{1e3 * self.worst_lateness:.3f} ms at most")
        else:
            text += f", no overrun, least slack {1e3 * self.min_slack:.3f} ms"
        on_time = self.steps - self.overruns
        if on_time:
            text += (f"; wake-up jitter of the {on_time} steps on time: mean "
                     f"{1e6 * self.jitter_mean:.1f} us, std {1e6 * self.jitter_std:.1f} us, "
                     f"max {1e6 * self.jitter_max:.1f} us")
        return text


class Pacer:
    """Sleeps until each communication point is due on the wall clock (see RealTimeStats).

    ``logger`` gets the warnings of a run that falls behind: the master's own,
    ``fmu.cosim.master``.
    """

    #: the last stretch is waited for by polling: time.sleep overshoots by ~0.1 ms
    SPIN = 2e-4

    def __init__(self, t0: float, speed: float, logger: logging.Logger):
        self.t0, self.speed, self.logger = t0, speed, logger
        self.stats = RealTimeStats(speed)
        self._m2 = 0.0
        self._late_sum = 0.0
        self._on_time = 0
        self._finished = False
        self.wall0 = time.perf_counter()  # reset by start(); set here for a run failing before

    def start(self) -> None:
        self.wall0 = time.perf_counter()

    def __call__(self, t_sim: float) -> None:
        due = self.wall0 + (t_sim - self.t0) / self.speed
        now = time.perf_counter()
        st = self.stats
        st.min_slack = min(st.min_slack, due - now)
        st.steps += 1
        if now > due:
            late = now - due
            if st.overruns == 0:
                self.logger.warning("real-time overrun at t = %.6g s: the step's results were "
                               "%.3f ms late (speed x%g); the count and lateness of all "
                               "overruns follow at the end of the run", t_sim, 1e3 * late,
                               self.speed)
            st.overruns += 1
            self._late_sum += late
            st.worst_lateness = max(st.worst_lateness, late)
            return
        if due - now > self.SPIN:
            time.sleep(due - now - self.SPIN)
        while (now := time.perf_counter()) < due:
            pass
        jitter = now - due
        # Welford over the steps on time: no per-step storage, memory stays flat
        self._on_time += 1
        d = jitter - st.jitter_mean
        st.jitter_mean += d / self._on_time
        self._m2 += d * (jitter - st.jitter_mean)
        st.jitter_max = max(st.jitter_max, jitter)

    def finish(self) -> RealTimeStats:
        """The statistics; the first call (the end of the run) also logs a warning if there
        were overruns."""
        st = self.stats
        if self._finished:
            return st
        self._finished = True
        st.wall_time = time.perf_counter() - self.wall0
        st.jitter_std = math.sqrt(self._m2 / self._on_time) if self._on_time else 0.0
        st.lateness_mean = self._late_sum / st.overruns if st.overruns else 0.0
        if st.overruns:
            self.logger.warning("real-time run fell behind the wall clock: %d of %d steps late "
                           "(%.1f %%), results late by %.3f ms on average and %.3f ms at most "
                           "(speed x%g)", st.overruns, st.steps, 100 * st.overrun_fraction,
                           1e3 * st.lateness_mean, 1e3 * st.worst_lateness, self.speed)
        return st
