"""The plan of one :meth:`fmu.cosim.master.Master.run`: its arguments checked at once,
before any component starts, into one immutable :class:`RunPlan` that the run loops
read (:func:`plan_run`).  A refused argument raises ValueError (TypeError for a value
of the wrong kind) naming the parameter, its value and what is accepted."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from fmu.cosim.recording import Result
from mbdcore.timeseries import chosen_columns

__all__ = ["MAX_STEPS", "RunPlan", "plan_run"]

#: Most communication steps of a fixed-step run: the step count is exact below it.
MAX_STEPS = 2 ** 53


@dataclass(frozen=True)
class RunPlan:
    """What one run does, every argument checked (made by :func:`plan_run`).

    Attributes
    ----------
    mode : {"fixed", "replay", "variable"}
        Fixed communication step ``t_k = start_time + k*step``; the given ``steps`` in
        order; or variable steps under the master's ``step_control``.
    start_time, stop_time : float
        Simulated interval [s], finite.
    step : float
        The master's communication step [s] (the initial step of a variable-step run).
    n_steps : int or None
        Communication steps of a fixed or replayed run; None for a variable-step run.
    steps : tuple of float or None
        The steps of a replay [s], each finite and > 0, summing to the interval.
    record_every : int
        Record one communication point in this many, >= 1.
    realtime : bool
        Pace the run to the wall clock.
    speed : float
        Simulated seconds per wall-clock second, finite and > 0 (checked when
        ``realtime``).
    progress : callable or None
        ``progress(t, stop_time)``.
    progress_interval : float
        Least wall-clock time between two calls of ``progress`` [s], >= 0.
    csv : Path or None
        The results file written as the run goes.
    csv_columns : dict of str to str or None
        Its columns, ``{recorded column: name in the file}`` in the file's order
        (:func:`~mbdcore.timeseries.chosen_columns`); None: every recorded column.
    step_timeout : float or None
        Wall-clock seconds a component may take in one ``do_step``, finite and > 0.
    """

    mode: str
    start_time: float
    stop_time: float
    step: float
    n_steps: int | None
    steps: tuple[float, ...] | None
    record_every: int
    realtime: bool
    speed: float
    progress: Callable[[float, float], Any] | None
    progress_interval: float
    csv: Path | None
    csv_columns: dict[str, str] | None
    step_timeout: float | None

    @property
    def rollback(self) -> bool:
        """A rejected step is undone: every component must save and restore its state."""
        return self.mode == "variable"

    @property
    def varying_steps(self) -> bool:
        """The communication step changes during the run."""
        return self.mode == "variable" or (self.mode == "replay" and len(set(self.steps)) > 1)


def plan_run(step: float, variable: bool, stop_time: float, start_time: float = 0.0, *,
             steps: Sequence[float] | None = None, realtime: bool = False, speed: float = 1.0,
             progress: Callable[[float, float], Any] | None = None,
             progress_interval: float = 0.1, csv: str | Path | None = None,
             record_every: int = 1, step_timeout: float | None = None,
             recorded: Sequence[str] = (),
             csv_columns: Sequence[str] | Mapping[str, str] | None = None,
             csv_prefix: bool = True) -> RunPlan:
    """The checked plan of a run of a master with communication step ``step`` [s]
    (``variable``: the master has a step control) that records the columns ``recorded``
    (``"time"`` first); the other arguments are :meth:`fmu.cosim.master.Master.run`'s.

    Raises
    ------
    ValueError, TypeError
        Naming the parameter, its value and what is accepted.
    """
    t0, stop = _time("start_time", start_time), _time("stop_time", stop_time)
    if steps is not None:
        mode, replayed = "replay", _replayed_steps(steps, t0, stop)
        n_steps = len(replayed)
    elif variable:
        if not stop > t0:
            raise ValueError(f"stop_time = {stop!r} s: accepted: after start_time = {t0!r} s")
        mode, replayed, n_steps = "variable", None, None
    else:
        mode, replayed, n_steps = "fixed", None, _fixed_steps(step, t0, stop)
    speed = _number("speed", speed)
    if realtime and not (math.isfinite(speed) and speed > 0.0):
        raise ValueError(f"speed = {speed!r}: accepted: finite and > 0 (simulated seconds "
                         "per wall-clock second)")
    if step_timeout is not None:
        step_timeout = _number("step_timeout", step_timeout)
        if not (math.isfinite(step_timeout) and step_timeout > 0.0):
            raise ValueError(f"step_timeout = {step_timeout!r} s: accepted: finite and > 0, "
                             "or None")
    return RunPlan(mode=mode, start_time=t0, stop_time=stop, step=float(step),
                   n_steps=n_steps, steps=replayed, record_every=_record_every(record_every),
                   realtime=bool(realtime), speed=speed, progress=_progress(progress),
                   progress_interval=_progress_interval(progress_interval),
                   csv=_csv(csv), csv_columns=_csv_columns(csv, recorded, csv_columns,
                                                           csv_prefix),
                   step_timeout=step_timeout)


def _number(name: str, value: Any) -> float:
    try:
        return float(value)
    except TypeError:
        raise TypeError(f"{name} = {value!r}: accepted: a number") from None
    except ValueError:
        raise ValueError(f"{name} = {value!r}: accepted: a number") from None


def _time(name: str, value: Any) -> float:
    t = _number(name, value)
    if not math.isfinite(t):
        raise ValueError(f"{name} = {t!r} s: accepted: a finite time")
    return t


def _replayed_steps(steps: Sequence[float], t0: float, stop: float) -> tuple[float, ...]:
    """The steps of a replay: each finite and > 0, ending at ``stop``."""
    try:
        given = list(steps)
    except TypeError:
        raise TypeError(f"steps = {steps!r}: accepted: a sequence of steps [s] or None") from None
    replayed = tuple(_number(f"steps[{k}]", x) for k, x in enumerate(given))
    bad = next(((k, x) for k, x in enumerate(replayed) if not (math.isfinite(x) and x > 0.0)),
               None)
    if bad is not None:
        raise ValueError(f"steps[{bad[0]}] = {bad[1]!r} s: accepted: finite and > 0")
    t_end = t0
    for x in replayed:
        t_end += x
    if abs(t_end - stop) > 1e-9 * max(1.0, abs(stop - t0)):
        raise ValueError(f"steps end at t = {t_end!r} s, not at stop_time = {stop!r} s: "
                         "accepted: steps summing to stop_time - start_time")
    return replayed


def _fixed_steps(step: float, t0: float, stop: float) -> int:
    """How many steps of ``step`` make ``stop - t0``: a whole number, at most MAX_STEPS."""
    span = stop - t0
    ratio = span / step
    if not (math.isfinite(span) and math.isfinite(ratio)) or abs(ratio) > MAX_STEPS:
        raise ValueError(f"stop_time - start_time = {span!r} s is {ratio:.3g} steps of "
                         f"{step!r} s: accepted: finite times and at most 2**53 steps")
    n_steps = int(round(ratio))
    if n_steps < 0 or abs(n_steps * step - span) > 1e-9 * max(1.0, abs(span)):
        raise ValueError(f"stop_time - start_time = {span!r} s is not a whole number "
                         f"of steps of {step!r} s")
    return n_steps


def _record_every(value: Any) -> int:
    try:
        n = int(value)
    except TypeError:
        raise TypeError(f"record_every = {value!r}: accepted: an integer >= 1") from None
    except ValueError:
        raise ValueError(f"record_every = {value!r}: accepted: an integer >= 1") from None
    if n < 1:
        raise ValueError(f"record_every = {n}: accepted: an integer >= 1")
    return n


def _progress(callback: Any) -> Callable[[float, float], Any] | None:
    # TypeError for progress=True: the master drew a bar itself before;
    # flexcosim.console.ProgressPrinter does now
    if callback is not None and not callable(callback):
        raise TypeError(f"progress must be a callable progress(t, stop_time), got {callback!r}")
    return callback


def _progress_interval(value: Any) -> float:
    interval = _number("progress_interval", value)
    if not interval >= 0.0:
        raise ValueError(f"progress_interval = {interval!r} s: accepted: >= 0")
    return interval


def _csv(path: Any) -> Path | None:
    if path is None:
        return None
    if not isinstance(path, (str, Path)):
        raise TypeError(f"csv = {path!r}: accepted: a file path (str or pathlib.Path) or None")
    return Path(path)


def _csv_columns(csv: Any, recorded: Sequence[str], columns: Any,
                 prefix: Any) -> dict[str, str] | None:
    """The results file's columns (``Result.to_csv``'s ``columns`` and ``prefix``
    rules, :func:`~mbdcore.timeseries.chosen_columns`), None for every column."""
    if not isinstance(prefix, bool):
        raise TypeError(f"csv_prefix = {prefix!r}: accepted: True or False")
    if columns is None and prefix:
        return None
    if csv is None:
        raise ValueError(f"csv_columns = {columns!r}, csv_prefix = {prefix!r} without a "
                         "results file: accepted: with csv (or choose the columns of the "
                         "Result: to_csv(path, columns=..., prefix=...))")
    try:
        return chosen_columns(recorded, columns, prefix=prefix, short_name=Result.short_name)
    except KeyError as e:     # a column not recorded: refused as every bad argument
        raise ValueError(f"csv_columns: {e.args[0]}") from None
    except (TypeError, ValueError) as e:
        raise type(e)(f"csv_{e}" if str(e).startswith("columns:") else f"csv_columns: {e}") \
            from None
