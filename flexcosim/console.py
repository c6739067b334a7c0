"""What the application writes on stderr besides its results: the library's log messages
and the progress of long work.

The library (:mod:`mbdcore`, :mod:`fmu`, :mod:`controllers`) prints nothing: it logs
through :mod:`logging` (an FMU's messages on ``fmu.cosim.master.<component>``, real-time
overruns on ``fmu.cosim.master``, a kernel compiled on first use on ``mbdcore.native``)
and reports progress to a callback (``Master.run(progress=...)``,
``mbdcore.sweep.sweep(progress=...)``).  This module is the other end:

* :func:`terminal_logging` sets up logging for the command line's ``-v``/``-q`` (and the
  examples), Python warnings included, one line per message;
* :class:`ProgressPrinter` is such a callback drawing a bar on a terminal, or a line every
  10 % (and at least every 10 s of a slow stretch) when stderr is a file or a CI log,
  each with the rate and the time left;
* :func:`error_line` is the one form of every error the command line reports.

A progress printer of our own rather than tqdm: the behaviour wanted off a terminal (a few
whole lines, nothing that floods a CI log) is what tqdm does not do by default, the
printer must give way to log lines on the same terminal, and it is forty lines where tqdm
would be a dependency of the application for one bar.
"""
from __future__ import annotations

import logging
import math
import sys
import time
import warnings
from contextlib import contextmanager
from typing import IO, Callable, Iterator

__all__ = ["PROJECT_LOGGERS", "ProgressPrinter", "duration_text", "command_progress",
           "terminal_logging",
           "error_line", "report_error", "said_plainly"]

#: The loggers of the three packages and of the application.
PROJECT_LOGGERS = ("mbdcore", "fmu", "controllers", "flexcosim")


def error_line(command: str | None, problem: str) -> str:
    """The one form of every error the command line reports, argparse's own included:
    ``flexcosim <command>: error: <what is wrong>; <what is accepted>`` on one line
    (``flexcosim: error: ...`` before a command is known).  The form of argparse's usage
    errors and of the log's error lines (``flexcosim: error: ...``), so that a script
    can look for ``: error: `` whatever failed."""
    where = f"flexcosim {command}" if command else "flexcosim"
    return f"{where}: error: {' '.join(problem.split())}"


def report_error(command: str | None, problem: str | BaseException) -> None:
    """Write :func:`error_line` on stderr; an exception said as :func:`said_plainly`."""
    if isinstance(problem, BaseException):
        problem = said_plainly(problem)
    print(error_line(command, problem), file=sys.stderr)


def said_plainly(error: BaseException) -> str:
    """An exception as a line for a user: a file's OSError as ``FILE: reason`` (Python
    says ``[Errno 2] No such file or directory: 'FILE'``), a file nested too deeply for
    its reader as such, anything else as its message."""
    if isinstance(error, OSError) and error.strerror:
        return f"{error.filename}: {error.strerror}" if error.filename else error.strerror
    if isinstance(error, RecursionError):
        return "an input file is nested too deeply"
    return str(error)


#: The bar that is on its terminal line now (drawn with no newline after it), if any: a
#: log line printed meanwhile first ends that line.
_open_bar: list = []


def _end_open_bar() -> None:
    while _open_bar:
        _open_bar.pop().break_line()


class ProgressPrinter:
    """``printer(done, total)``: how far a long job is, on ``stream`` (default stderr).

    On a terminal, one bar redrawn in place at most every ``redraw`` seconds [s]; else one
    line each time the job passes another ``step`` of its total (10 %), or when ``every``
    seconds [s] of wall clock have passed since the last line.  Each says the rate since
    the first call (cases per second, or simulated seconds per wall-clock second: the
    real-time factor) and the time left at that rate; the average since the first call,
    not a recent one, because a parallel sweep's cases finish in bursts.  Call
    :meth:`close` (or use it as a context manager) when the job ends, successfully or not.

    Parameters
    ----------
    label : str
        What is running, at the start of every line.
    unit : str
        Unit of ``done`` and ``total``: ``"s"`` (simulated time, the master's
        ``progress(t, stop_time)``) or a count such as ``"cases"``.
    tty : bool, optional
        Draw a bar; default: ``stream.isatty()``.
    clock : callable, optional
        The wall clock [s], ``time.perf_counter`` (a test gives its own).
    """

    def __init__(self, label: str, unit: str = "s", stream: IO[str] | None = None,
                 tty: bool | None = None, step: float = 0.1, every: float = 10.0,
                 redraw: float = 0.2, width: int = 30,
                 clock: Callable[[], float] = time.perf_counter):
        self.label, self.unit = label, unit
        self.stream = stream if stream is not None else sys.stderr
        if tty is None:
            isatty = getattr(self.stream, "isatty", None)
            tty = bool(isatty()) if isatty is not None else False
        self.tty, self.step, self.every, self.redraw, self.width = tty, step, every, redraw, width
        self.clock = clock
        self.wall0 = clock()
        # a bar at once; a line not before a step is passed or `every` seconds are over
        self.last_wall = -math.inf if tty else self.wall0
        self.next_mark = step          # the fraction that prints the next line (not a tty)
        self.start: float | None = None
        self.start_wall = self.wall0   # when the first call came: the rate is counted from it
        self.drawn = False
        self.drawn_width = 0

    def _what(self, done: float, total: float) -> str:
        if self.unit == "s":
            return f"t = {done:.6g} of {total:.6g} s"
        return f"{done:g} of {total:g} {self.unit}"

    def _pace(self, done: float, total: float, now: float) -> str:
        """", RATE, LEFT left": the rate since the first call and the time left at it."""
        elapsed, gone = now - self.start_wall, done - self.first_done
        if not (elapsed > 0.0 and gone > 0.0):
            return ""
        rate = gone / elapsed
        said = f"{rate:.3g}x real time" if self.unit == "s" else f"{rate:.3g} {self.unit}/s"
        if done < total:
            said += f", {duration_text((total - done) / rate)} left"
        return ", " + said

    def __call__(self, done: float, total: float) -> None:
        now = self.clock()
        if self.start is None:                # the master's first call is its start time
            self.start = done if self.unit == "s" else 0.0
            self.first_done, self.start_wall = done, now
        span = total - self.start
        frac = min(max((done - self.start) / span, 0.0), 1.0) if span > 0 else 1.0
        wall = now - self.wall0
        if self.tty:
            if now - self.last_wall < self.redraw and frac < 1.0:
                return
            n = int(round(frac * self.width))
            bar = (f"{self.label}: [{'#' * n}{'.' * (self.width - n)}] {100 * frac:5.1f} % "
                   f"{self._what(done, total)}, wall {wall:.1f} s{self._pace(done, total, now)}")
            # blanks over what a longer line drawn before left on the terminal
            self.stream.write(f"\r{bar:<{self.drawn_width}}")
            self.drawn_width = len(bar)
            if not self.drawn:
                _open_bar.append(self)
            self.drawn = True
            if frac >= 1.0:          # done: what follows (the results) starts a new line
                self.break_line()
        else:
            passed = frac >= self.next_mark - 1e-12
            if not passed and now - self.last_wall < self.every:
                return
            if frac == 0.0 and not passed:   # nothing to say yet
                return
            if passed:
                self.next_mark = (math.floor(frac / self.step + 1e-9) + 1) * self.step
            self.stream.write(f"{self.label}: {100 * frac:.0f} % ({self._what(done, total)}, "
                              f"wall {wall:.1f} s{self._pace(done, total, now)})\n")
        self.last_wall = now
        self.stream.flush()

    def break_line(self) -> None:
        """End the bar's line (a log line follows); the next call draws it again."""
        if self.drawn:
            self.stream.write("\n")
            self.stream.flush()
            self.drawn, self.drawn_width = False, 0
        if self in _open_bar:
            _open_bar.remove(self)

    def close(self) -> None:
        """The job is over: end the bar's line."""
        self.break_line()

    def __enter__(self) -> "ProgressPrinter":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def duration_text(seconds: float) -> str:
    """A time span [s] as a reader takes it in: ``8.5 s``, ``42 s``, ``3 min 05 s``,
    ``2 h 07 min``."""
    if seconds < 10.0:
        return f"{seconds:.1f} s"
    whole = int(round(seconds))
    if whole < 60:
        return f"{whole} s"
    if whole < 3600:
        return f"{whole // 60} min {whole % 60:02d} s"
    minutes = int(round(seconds / 60.0))
    return f"{minutes // 60} h {minutes % 60:02d} min"


def command_progress(label: str, quiet: bool) -> ProgressPrinter | None:
    """The progress printer of a command's run on stderr; None with ``-q``."""
    return None if quiet else ProgressPrinter(label)


class _TerminalHandler(logging.StreamHandler):
    """One line per record, after ending a progress bar's line."""

    def emit(self, record: logging.LogRecord) -> None:
        _end_open_bar()
        super().emit(record)


class _TerminalFormat(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        text = record.getMessage().rstrip("\n")
        if record.levelno >= logging.WARNING:
            return f"flexcosim: {record.levelname.lower()}: {text}"
        return f"flexcosim: {text}"


class _LeftToTheFailureReport(logging.Filter):
    """An FMU's error messages: the master stops the run on them (or retries the step,
    variable step) and the failure it reports quotes the component's log, so they are not
    printed twice."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.levelno >= logging.ERROR
                    and record.name.startswith("fmu.cosim.master."))


def _warning_text(message, category, filename, lineno, line=None) -> str:
    return str(message)


@contextmanager
def terminal_logging(verbosity: int = 0, stream: IO[str] | None = None) -> Iterator[None]:
    """Log the project's messages and Python warnings on ``stream`` (default stderr), one
    line each, while the block runs; the logging set-up before it is restored after.

    ``verbosity``: -1 (``-q``) errors only; 0 warnings, and the application's own notes
    (what it is building); 1 (``-v``) information, every FMU message included; 2
    (``-vv``) debugging.  Below 1, an FMU's error messages are left to the failure report
    that quotes them.
    """
    if verbosity < 0:
        levels = dict.fromkeys(PROJECT_LOGGERS, logging.ERROR)
    elif verbosity == 0:
        levels = dict.fromkeys(PROJECT_LOGGERS, logging.WARNING) | {"flexcosim": logging.INFO}
    else:
        levels = dict.fromkeys(PROJECT_LOGGERS, logging.INFO if verbosity == 1 else logging.DEBUG)
    levels["py.warnings"] = logging.ERROR if verbosity < 0 else logging.WARNING
    handler = _TerminalHandler(stream if stream is not None else sys.stderr)
    handler.setFormatter(_TerminalFormat())
    if verbosity < 1:
        handler.addFilter(_LeftToTheFailureReport())
    loggers = {name: logging.getLogger(name) for name in levels}
    before = {name: lg.level for name, lg in loggers.items()}
    format_before = warnings.formatwarning
    for name, lg in loggers.items():
        lg.setLevel(levels[name])
        lg.addHandler(handler)
    warnings.formatwarning = _warning_text
    logging.captureWarnings(True)
    try:
        yield
    finally:
        logging.captureWarnings(False)
        warnings.formatwarning = format_before
        for name, lg in loggers.items():
            lg.removeHandler(handler)
            lg.setLevel(before[name])
        _end_open_bar()
