"""``cosimulate``: one call from a system (object or file) to its result, as
``fmpy.simulate_fmu`` is for one FMU -- what is not given comes from the system's
default experiment, and what that does not give either from fmpy's rules
(:func:`experiment_values`)."""
from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from fmu.cosim.master import Master, StepControl
from fmu.cosim.recording import Result
from fmu.cosim.system import System
from fmu.cosim.file_rules import PROJECT_BLOCKS
from fmu.cosim.system_file import load_system

__all__ = ["cosimulate", "experiment_values", "ExperimentValues", "auto_interval"]

logger = logging.getLogger(__name__)

#: fmpy's stop time where neither the caller nor the experiment gives one: start + 1 s
DEFAULT_DURATION = 1.0


def auto_interval(duration: float) -> float:
    """A round step [s] that divides ``duration`` [s] into 500 to 1000 steps -- the
    rule of ``fmpy.util.auto_interval``, by which ``fmpy.simulate_fmu`` picks the
    communication step of a co-simulation FMU that names none (1, 2, 2.5, 4 or 5 times a
    power of ten)."""
    if not (math.isfinite(duration) and duration > 0):
        raise ValueError(f"duration = {duration!r} s: accepted: a finite number > 0")
    h = 10.0 ** (round(math.log10(duration)) - 3)
    n = duration / h
    for at_least, factor in ((2500, 5.0), (2000, 4.0), (1000, 2.0)):
        if n >= at_least:
            return h * factor
    for at_most, divisor in ((200, 5.0), (250, 4.0), (500, 2.0)):
        if n <= at_most:
            return h / divisor
    return h


@dataclass(frozen=True)
class ExperimentValues:
    """Start, stop time and communication step [s] of a run, and which of them no one
    gave (``chosen``: ``"stop_time"``, ``"step_size"``) -- the caller may say so."""

    start_time: float
    stop_time: float
    step_size: float
    chosen: tuple[str, ...]

    def note(self) -> str:
        """One line naming the values taken by rule, '' if none was."""
        said = []
        if "stop_time" in self.chosen:
            said.append(f"stop time {self.stop_time:.12g} s (start + {DEFAULT_DURATION:g} s)")
        if "step_size" in self.chosen:
            n = round((self.stop_time - self.start_time) / self.step_size)
            said.append(f"step {self.step_size:.12g} s ({n} steps)")
        if not said:
            return ""
        return (f"neither given nor in the system's default experiment, as fmpy.simulate_fmu "
                f"chooses them: {' and '.join(said)}")


def _fixed_internal_step(system: System) -> float | None:
    """The smallest ``fixedInternalStepSize`` an FMU of the system declares [s]."""
    steps = []
    for c in system.components:
        md = getattr(c, "model_description", None)
        cs = getattr(md, "coSimulation", None)
        h = getattr(cs, "fixedInternalStepSize", None)
        if h is not None and math.isfinite(float(h)) and float(h) > 0:
            steps.append(float(h))
    return min(steps) if steps else None


def experiment_values(system: System, stop_time: float | None = None,
                      step_size: float | None = None,
                      start_time: float | None = None) -> ExperimentValues:
    """What a run of ``system`` uses: each value as given, else the system's default
    experiment (``system.experiment``), else fmpy's rule -- start 0, stop start + 1 s,
    the step an FMU declares as its ``fixedInternalStepSize`` (the smallest), else
    :func:`auto_interval` of the duration (500 to 1000 steps)."""
    exp = dict(getattr(system, "experiment", None) or {})
    start = float(start_time if start_time is not None else exp.get("start_time", 0.0))
    chosen = []
    stop = stop_time if stop_time is not None else exp.get("stop_time")
    if stop is None:
        stop, chosen = start + DEFAULT_DURATION, ["stop_time"]
    stop = float(stop)
    step = step_size if step_size is not None else exp.get("step")
    if step is None:
        chosen.append("step_size")
        step = _fixed_internal_step(system)
        if step is None and stop > start:
            step = auto_interval(stop - start)
        elif step is None:    # no duration to divide: the plan refuses stop <= start
            step = 1e-3
    return ExperimentValues(start, stop, float(step), tuple(chosen))


def cosimulate(system: System | str | Path, stop_time: float | None = None,
               step_size: float | None = None, start_time: float | None = None,
               method: str | None = None, extrapolation: int | None = None,
               step_control: StepControl | None = None, realtime: bool = False,
               speed: float = 1.0, progress: Callable[[float, float], Any] | None = None,
               output_file: str | Path | None = None, record_every: int = 1,
               step_timeout: float | None = None, progress_interval: float = 0.1,
               allow_python_blocks: bool | str = PROJECT_BLOCKS,
               csv_columns: Sequence[str] | Mapping[str, str] | None = None,
               csv_prefix: bool = True) -> Result:
    """Co-simulate ``system`` and return its :class:`~fmu.cosim.recording.Result`.

    Parameters
    ----------
    system : System, or path of an SSP archive (.ssp), SSD file (.ssd) or JSON system
    stop_time, step_size, start_time : float, optional
        [s]; default: the system's default experiment (``system.experiment``), else as
        ``fmpy.simulate_fmu`` chooses them (:func:`experiment_values`: start 0, stop
        start + 1 s, the step an FMU declares as fixed or 500 to 1000 steps).
    method : {"gauss-seidel", "jacobi"}, optional
        Default: the experiment's, else Gauss-Seidel.
    extrapolation : {0, 1}, optional
        Order of the input extrapolation; default: the experiment's, else 0.
    step_control : StepControl, optional
        Variable communication step with error control and rollback.
    realtime, speed, progress, progress_interval, record_every, step_timeout
        As for :meth:`Master.run` (``progress(t, stop_time)``: a callable told how far
        the run is, at most every ``progress_interval`` s of wall clock;
        ``step_timeout``: wall-clock seconds a component may take in one step before the
        run is stopped).
    output_file : str or Path, optional
        CSV file written as the run goes (``csv`` of :meth:`Master.run`): checked before
        the run starts, valid up to the last recorded point if the run fails or is
        interrupted.
    csv_columns, csv_prefix : optional
        Its columns and their names (``csv_columns`` and ``csv_prefix`` of
        :meth:`Master.run`: ``Result.to_csv``'s ``columns`` and ``prefix``).

    Raises
    ------
    ValueError
        An invalid setting.
    CosimError
        A component failed or exceeded ``step_timeout``; the error holds the partial
        result.
    CosimInterrupted
        KeyboardInterrupt during the run; holds the partial result.
    """
    if not isinstance(system, System):
        system = load_system(system, allow_python_blocks=allow_python_blocks)
    exp = dict(getattr(system, "experiment", None) or {})
    values = experiment_values(system, stop_time, step_size, start_time)
    if values.chosen:
        logger.info("%s", values.note())
    master = Master(system, values.step_size, method=method or exp.get("method", "gauss-seidel"),
                    extrapolation=extrapolation if extrapolation is not None
                    else exp.get("extrapolation", 0), step_control=step_control)
    return master.run(values.stop_time, values.start_time, realtime=realtime, speed=speed,
                      progress=progress,
                      progress_interval=progress_interval, csv=output_file,
                      record_every=record_every, step_timeout=step_timeout,
                      csv_columns=csv_columns, csv_prefix=csv_prefix)
