"""What a run records: its :class:`Result` (a :class:`~mbdcore.timeseries.TimeSeries`)
and the results CSV written as the run goes (:class:`CsvWriter`)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from fmu.cosim.errors import Termination
from fmu.cosim.pacing import RealTimeStats
from mbdcore.timeseries import CSV_NUMBER_FORMAT, TimeSeries, csv_header

__all__ = ["CsvWriter", "ResultsFileError", "Result"]


class Result(TimeSeries):
    """Time series of a co-simulation run (a :class:`~mbdcore.timeseries.TimeSeries`).

    Attributes
    ----------
    data : numpy.ndarray
        Structured array, field ``"time"`` [s] then ``"comp.var"`` for every output
        and every input of every component; one row per communication point.
    outputs, inputs : list of str
        Field names of the outputs and of the inputs.
    units : dict of str to str
        Field name -> unit.
    steps : numpy.ndarray
        The accepted communication steps [s], in order (``Master.run(steps=...)``
        replays them).
    rejected : list of (float, float, float)
        Rejected attempts of a variable-step run: (start time [s], step [s], error
        estimate; inf when a component failed the step).
    forced_steps : int
        Steps accepted at the minimum step although the error estimate exceeded 1.
    realtime : RealTimeStats or None
        Pacing statistics of a real-time run.
    termination : Termination or None
        Set when a component asked to end the run before the stop time (an FMU's
        fmi2Discard with fmi2Terminated): which component, and the time the results end.
    compiled_steps : int
        Communication steps taken by the compiled loop (:mod:`fmu.cosim.compiled_loop`;
        the others by the Python loop).
    """

    def __init__(self, data: np.ndarray, outputs: Sequence[str], inputs: Sequence[str],
                 units: Mapping[str, str] | None = None, *, steps: np.ndarray | None = None,
                 rejected: Sequence[tuple[float, float, float]] = (), forced_steps: int = 0,
                 realtime: RealTimeStats | None = None,
                 termination: Termination | None = None, compiled_steps: int = 0):
        super().__init__(data, units)
        self.compiled_steps = int(compiled_steps)
        self.outputs = list(outputs)
        self.inputs = list(inputs)
        self.steps = np.asarray(steps if steps is not None else np.diff(data["time"]), float)
        self.rejected = list(rejected)
        self.forced_steps = int(forced_steps)
        self.realtime = realtime
        self.termination = termination

    def __repr__(self) -> str:
        t = self.time
        span = f"t = {t[0]:g} .. {t[-1]:g} s" if len(t) else "empty"
        ended = (f", terminated by {self.termination.component!r}"
                 if self.termination is not None else "")
        return f"Result({len(t)} rows, {span}, {len(self.names) - 1} signals{ended})"

    def default_signals(self) -> list[str]:
        """The outputs."""
        return list(self.outputs)

    @staticmethod
    def short_name(name: str) -> str:
        """A column without its component: ``"arm.q1"`` -> ``"q1"`` (a component's name
        holds no ``.``; a variable's may), what ``prefix=False`` of
        :meth:`~mbdcore.timeseries.TimeSeries.select`, ``to_csv``, ``to_structured``,
        ``to_pandas`` and ``plot`` names the columns by; two components' signals of one
        name are refused there, naming both."""
        return name.split(".", 1)[-1]


def _csv_number(v: float) -> str:
    return CSV_NUMBER_FORMAT % v


class ResultsFileError(OSError):
    """A row of the results CSV could not be written during the run (a full disk, a
    file size limit): ``filename`` is the file."""


class CsvWriter:
    """The results CSV written as the run goes: the header when the run starts, then
    each recorded row as one complete line (one unbuffered write), so the file is a
    valid CSV up to the last recorded point at any moment -- after a crash, a signal
    or a timeout too.  Same format as :meth:`Result.to_csv` (17 significant digits,
    :data:`~mbdcore.timeseries.CSV_NUMBER_FORMAT`; the header through
    :func:`~mbdcore.timeseries.csv_header`, quoted, formula starts neutralised) with the
    same columns: every one under its own name by default, or ``columns``, the
    ``{name: new name}`` of :func:`~mbdcore.timeseries.chosen_columns` (``Master.run``'s
    ``csv_columns`` and ``csv_prefix``, which are ``to_csv``'s ``columns`` and
    ``prefix``): the file is the same byte for byte.

    The file is created and its header written when the writer is made, before any
    component starts: a path that cannot be opened or written (a folder, ``/dev/full``,
    ``/proc/self/status``) fails at once, with a ValueError naming it.  A row that cannot
    be written later is a :class:`ResultsFileError`.

    Parameters
    ----------
    path : str or Path
    names : sequence of str
        The recorded columns, in the order of a row's values, ``"time"`` first.
    columns : mapping of str to str, optional
        The columns written, ``{name: name in the file}`` in the file's order (every one
        of ``names``, under its own name, by default).
    """

    def __init__(self, path: str | Path, names: Sequence[str],
                 columns: Mapping[str, str] | None = None):
        self.path = Path(path)
        names = list(names)
        # a row's values at the written columns, in order (None: every value)
        self._taken = (None if columns is None or list(columns) == names
                       else [names.index(name) for name in columns])
        header = names if columns is None else list(columns.values())
        try:
            if self.path.is_dir():
                raise IsADirectoryError(21, "is a directory")
            self.fd: int | None = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC,
                                          0o666)
        except OSError as e:
            raise ValueError(f"cannot write the results file {str(self.path)!r}: "
                             f"{e.strerror or e}") from None
        self.written = 0     # bytes in the file
        try:
            self._write(csv_header(header) + "\n")
        except OSError as e:   # opened, but refuses the first line: full, or not a file
            self.close()
            raise ValueError(f"cannot write the results file {str(self.path)!r}: "
                             f"{e.strerror or e}") from None

    def _write(self, text: str) -> None:
        data = text.encode()
        while data:
            n = os.write(self.fd, data)
            self.written += n
            data = data[n:]

    def row(self, values) -> None:
        if self._taken is not None:
            values = [values[i] for i in self._taken]
        end = self.written
        try:
            self._write(",".join(map(_csv_number, values)) + "\n")
        except OSError as e:
            try:      # a part of the line may be in: cut back to the whole lines
                os.ftruncate(self.fd, end)
            except OSError:   # not a file (a pipe, a device)
                pass
            raise ResultsFileError(e.errno, e.strerror, str(self.path)) from None

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
