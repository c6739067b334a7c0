"""The co-simulation's errors: a component's failure (:class:`ComponentError`), its
request to end the run (:class:`ComponentTerminated`, reported as :class:`Termination`),
a run that failed (:class:`CosimError`) or was interrupted (:class:`CosimInterrupted`),
a step beyond its wall-clock timeout (:class:`StepTimeout`), and an algebraic loop
(:class:`AlgebraicLoopError`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

__all__ = ["AlgebraicLoopError", "ComponentError", "ComponentTerminated", "CosimError",
           "CosimInterrupted", "StepTimeout", "Termination"]


class ComponentError(RuntimeError):
    """A component call failed.

    Parameters
    ----------
    message : str
        What went wrong.
    variable : str or None
        The variable concerned, if known.
    log : list of str
        Log messages of the component (FMU logger) up to the failure.
    """

    def __init__(self, message: str, variable: str | None = None, log: Sequence[str] = ()):
        super().__init__(message)
        self.variable = variable
        self.log = list(log)


class ComponentTerminated(Exception):
    """A component asked to end the simulation: not a failure.

    FMI 2.0: ``fmi2DoStep`` returned fmi2Discard, ``fmi2GetBooleanStatus(fmi2Terminated)``
    is true and the FMU logged no error in the call (the Modelica Reference FMU ``Stair``
    does this at its end; pythonfmu slaves answer fmi2Terminated = true after every
    discard, and log an error with a refused step).  The master ends the run at the end
    of that step if the component reached it (its last successful time; the others then
    complete the step) and the run has fixed or replayed steps, else at the start of
    that step; it keeps the results and reports it in ``Result.termination``.

    Attributes
    ----------
    reached : float or None
        The component's own last successful time [s] (fmi2LastSuccessfulTime), if it
        reports one.
    completed : bool
        Set by the master: the component reached the end of the step (``reached`` is
        the next communication point), so the other components completed the step too
        and the run ends there, recorded, as fmpy records such a step.
    """

    def __init__(self, message: str, reached: float | None = None):
        super().__init__(message)
        self.reached = reached
        self.completed = False


@dataclass
class Termination:
    """Why a run ended before its stop time without failing (``Result.termination``).

    Attributes
    ----------
    component : str
        The component that asked to terminate.
    time : float
        The last communication point [s]: the results end there.
    reached : float or None
        The component's own last successful time [s], if it reported one.
    message : str
        One line naming the component and the time.
    """

    component: str
    time: float
    reached: float | None
    message: str

    def __str__(self) -> str:
        return self.message


class CosimError(RuntimeError):
    """The co-simulation stopped because a component failed.

    Attributes
    ----------
    component : str
        Name of the failing component.
    variable : str or None
        Variable concerned (an input that was rejected, a NaN output), if known.
    time : float
        Simulation time of the failure [s]: the communication point at which the
        failing call was made (the start of the failed step).
    result : Result
        Rows recorded up to and including the last complete communication point.
    log : list of str
        Log messages of the failing component.
    """

    def __init__(self, message: str, component: str, variable: str | None, time: float,
                 result: "Result", log: Sequence[str] = ()):
        super().__init__(message)
        self.component = component
        self.variable = variable
        self.time = time
        self.result = result
        self.log = list(log)


class CosimInterrupted(KeyboardInterrupt):
    """The run was interrupted (Ctrl-C, or SIGTERM where the caller turns it into a
    KeyboardInterrupt, as ``flexcosim cosim`` does): not a failure of a component.

    Attributes
    ----------
    time : float
        Simulation time of the last complete communication point [s].
    result : Result
        Rows recorded up to that point (already in the CSV file if one was given).
    csv : Path or None
        The CSV file, if any.
    signal : int or None
        The signal number if the interruption came from a signal handler that recorded it.
    """

    def __init__(self, message: str, time: float, result: "Result", csv: Path | None = None,
                 signal: int | None = None):
        super().__init__(message)
        self.time = time
        self.result = result
        self.csv = csv
        self.signal = signal


class StepTimeout(BaseException):
    """Raised in the main thread by the step watchdog of ``Master.run(step_timeout=...)``.

    A BaseException, so that a component's ``except Exception`` does not swallow it; the
    master turns it into a :class:`CosimError` naming the component and the time.
    """


class AlgebraicLoopError(ValueError):
    """Outputs depend on themselves through direct feedthrough (an algebraic loop)."""

    def __init__(self, message: str, loop: Sequence[str]):
        super().__init__(message)
        self.loop = list(loop)
