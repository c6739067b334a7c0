"""What the command line says on stderr besides its results (issue 13 item 30): the
progress of a run, the library's log messages by ``-v``/``-q``, Python warnings as one
line each; the results on stdout stay the same."""
from __future__ import annotations

import io
import json
import logging
import math
import warnings
from pathlib import Path

from flexcosim.cli import main
from flexcosim.console import ProgressPrinter, duration_text, terminal_logging


def _system(tmp_path: Path, lag_fmu, T: float = 0.5) -> Path:
    path = tmp_path / f"lag_{T:g}.json"
    path.write_text(json.dumps({
        "components": [{"name": "plant", "fmu": str(lag_fmu), "parameters": {"T": T}}],
        "connections": [], "experiment": {"stop_time": 1.0, "step": 0.01}}))
    return path


def test_cosim_shows_its_progress_on_stderr_and_quiet_hides_it(lag_fmu, tmp_path, capsys):
    system = str(_system(tmp_path, lag_fmu))
    assert main(["cosim", system]) == 0
    out, err = capsys.readouterr()
    assert out == "101 points, t = 0 .. 1 s\n"
    lines = err.splitlines()
    # stderr is not a terminal here: whole lines, at most one per 10 % and the last at
    # the stop time
    assert 1 <= len(lines) <= 11 and all(line.startswith("flexcosim cosim: ") for line in lines)
    assert lines[-1].startswith("flexcosim cosim: 100 % (t = 1 of 1 s, wall ")
    for argv in (["cosim", system, "-q"], ["-q", "cosim", system], ["cosim", "--quiet", system]):
        assert main(argv) == 0
        assert capsys.readouterr() == (out, "")


def test_an_fmu_error_is_said_once_and_live_with_verbose(lag_fmu, tmp_path, capsys):
    """The lag refuses T = -1 with a logged error.  By default the failure report quotes
    the FMU's log (the message is not printed a second time as it arrives); with -v
    every FMU message is also printed as it arrives, as a line of its own."""
    system = str(_system(tmp_path, lag_fmu, T=-1.0))
    message = "plant: fmi2SetReal: parameter 'T' = -1 is invalid: accepted range (0, inf) s"
    assert main(["cosim", system]) == 1
    err = capsys.readouterr().err
    assert "component 'plant' failed in initialize" in err
    assert err.count("parameter 'T' = -1 is invalid") == 1
    assert main(["cosim", system, "-v"]) == 1
    err = capsys.readouterr().err
    assert f"flexcosim: error: {message}\n" in err
    assert err.count("parameter 'T' = -1 is invalid") == 2


def test_terminal_logging_levels_and_warnings(tmp_path):
    """-q errors only; default warnings (an FMU's warning, a Python warning as one line,
    the application's notes); -v an FMU's informational messages too.  Afterwards the
    loggers are as before."""
    fmu_log = logging.getLogger("fmu.cosim.master.arm")
    demo_log = logging.getLogger("flexcosim.demo")
    level_before = logging.getLogger("fmu").level

    def say():
        fmu_log.info("arm: informational")
        fmu_log.warning("arm: t = 0.4 s: link 1 tip deflection beyond the model's range")
        demo_log.info("building the FMUs")
        with warnings.catch_warnings():
            warnings.simplefilter("always")
            warnings.warn("a Python warning", UserWarning)

    heard = {}
    for verbosity in (-1, 0, 1):
        stream = io.StringIO()
        with terminal_logging(verbosity, stream):
            say()
        heard[verbosity] = stream.getvalue().splitlines()
    assert heard[-1] == []
    assert heard[0] == ["flexcosim: warning: arm: t = 0.4 s: link 1 tip deflection beyond "
                        "the model's range", "flexcosim: building the FMUs",
                        "flexcosim: warning: a Python warning"]
    assert heard[1] == ["flexcosim: arm: informational"] + heard[0]
    assert logging.getLogger("fmu").level == level_before
    assert not [h for h in logging.getLogger("fmu").handlers
                if not isinstance(h, logging.NullHandler)]


class _Terminal(io.StringIO):
    def isatty(self):
        return True


class _Clock:
    """A wall clock the test moves: ``clock.now`` [s]."""

    def __init__(self):
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_progress_printer_on_a_terminal_and_in_a_log():
    """On a terminal: one bar redrawn in place (blanks over a longer line drawn before),
    its line ended when the job is done or a log line comes; in a file: a line per 10 %
    passed, never more.  Each with the real-time factor (simulated time) or the cases per
    second and the time left, counted from the first call."""
    tty, clock = _Terminal(), _Clock()
    with terminal_logging(0, tty):
        bar = ProgressPrinter("run", stream=tty, redraw=0.0, clock=clock)
        clock.now += 3.0                  # loading before the run: not in the rate
        bar(0.0, 2.0)
        clock.now += 4.0
        bar(1.0, 2.0)
        logging.getLogger("fmu.cosim.master").warning("real-time overrun")
        clock.now += 4.0
        bar(2.0, 2.0)
        bar.close()
    assert tty.getvalue() == (
        "\rrun: [..............................]   0.0 % t = 0 of 2 s, wall 3.0 s"
        "\rrun: [###############...............]  50.0 % t = 1 of 2 s, wall 7.0 s, "
        "0.25x real time, 4.0 s left\n"
        "flexcosim: warning: real-time overrun\n"
        "\rrun: [##############################] 100.0 % t = 2 of 2 s, wall 11.0 s, "
        "0.25x real time\n")
    log, clock = io.StringIO(), _Clock()
    lines = ProgressPrinter("sweep", unit="cases", stream=log, every=math.inf, clock=clock)
    for done in range(1001):
        lines(done, 1000)
        clock.now += 0.5
    lines.close()
    got = log.getvalue().splitlines()
    assert [line.split(" (")[0] for line in got] == [f"sweep: {p} %" for p in range(10, 101, 10)]
    assert got[0] == "sweep: 10 % (100 of 1000 cases, wall 50.0 s, 2 cases/s, 7 min 30 s left)"
    assert got[-1] == "sweep: 100 % (1000 of 1000 cases, wall 500.0 s, 2 cases/s)"


def test_the_time_left_of_a_sweep_whose_cases_finish_in_bursts():
    """Two workers finish their cases together: the rate is the average since the first
    call (3 cases in 3 s of 12: 1 case/s, 9 s left), not the last burst's."""
    log, clock = io.StringIO(), _Clock()
    printer = ProgressPrinter("sweep", unit="cases", stream=log, step=0.25, clock=clock)
    printer(0, 12)
    for done, after in ((2, 2.0), (3, 1.0), (6, 3.0)):
        clock.now += after
        printer(done, 12)
    assert log.getvalue().splitlines() == [
        "sweep: 25 % (3 of 12 cases, wall 3.0 s, 1 cases/s, 9.0 s left)",
        "sweep: 50 % (6 of 12 cases, wall 6.0 s, 1 cases/s, 6.0 s left)"]


def test_durations_are_said_as_read():
    assert [duration_text(s) for s in (0.04, 8.46, 42.4, 185.0, 7620.0, 86400.0)] == [
        "0.0 s", "8.5 s", "42 s", "3 min 05 s", "2 h 07 min", "24 h 00 min"]
