"""``cosimulate``: one call from a system (object or file) to its result, as
``fmpy.simulate_fmu`` is for one FMU -- what is not given comes from the system's
default experiment."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from fmu.cosim.master import Master, StepControl
from fmu.cosim.recording import Result
from fmu.cosim.system import System
from fmu.cosim.file_rules import PROJECT_BLOCKS
from fmu.cosim.system_file import load_system

__all__ = ["cosimulate", "MissingExperimentError"]


class MissingExperimentError(ValueError):
    """A value of the experiment is neither given nor in the system's default
    experiment; ``missing`` names them (``"stop_time"``, ``"step_size"``)."""

    def __init__(self, missing):
        self.missing = list(missing)
        super().__init__(f"the system has no default {' and '.join(self.missing)}: give "
                         f"{' and '.join(self.missing)}")


def cosimulate(system: System | str | Path, stop_time: float | None = None,
               step_size: float | None = None, start_time: float | None = None,
               method: str | None = None, extrapolation: int | None = None,
               step_control: StepControl | None = None, realtime: bool = False,
               speed: float = 1.0, progress: Callable[[float, float], Any] | None = None,
               output_file: str | Path | None = None, record_every: int = 1,
               step_timeout: float | None = None, progress_interval: float = 0.1,
               allow_python_blocks: bool | str = PROJECT_BLOCKS) -> Result:
    """Co-simulate ``system`` and return its :class:`~fmu.cosim.recording.Result`.

    Parameters
    ----------
    system : System, or path of an SSP archive (.ssp), SSD file (.ssd) or JSON system
    stop_time, step_size, start_time : float, optional
        [s]; default: the system's default experiment (``system.experiment``;
        ``start_time`` defaults to 0).
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

    Raises
    ------
    MissingExperimentError
        A value that is neither given nor in the default experiment (naming it).
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
    start = float(start_time if start_time is not None else exp.get("start_time", 0.0))
    stop = stop_time if stop_time is not None else exp.get("stop_time")
    step = step_size if step_size is not None else exp.get("step")
    missing = [n for n, v in (("stop_time", stop), ("step_size", step)) if v is None]
    if missing:
        raise MissingExperimentError(missing)
    master = Master(system, float(step), method=method or exp.get("method", "gauss-seidel"),
                    extrapolation=extrapolation if extrapolation is not None
                    else exp.get("extrapolation", 0), step_control=step_control)
    return master.run(float(stop), start, realtime=realtime, speed=speed, progress=progress,
                      progress_interval=progress_interval, csv=output_file, record_every=record_every, step_timeout=step_timeout)
