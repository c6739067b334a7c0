"""``flexcosim cosim``: a system file or a single FMU under the co-simulation master."""
from __future__ import annotations

import argparse
import signal
import sys

from flexcosim.console import command_progress, report_error
from fmu.cosim.errors import CosimError, CosimInterrupted
from fmu.cosim.master import StepControl
from fmu.cosim.simulate import cosimulate, experiment_values
from fmu.cosim.system_file import load_system

__all__ = ["run"]

#: SIGINT and SIGTERM end ``flexcosim cosim`` cleanly (results flushed, components
#: terminated, temporary folders removed) with the shell's exit code 128 + signal.
_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)

#: The stop signal received during this command, if any: a Python FMU runs in this
#: interpreter, so the KeyboardInterrupt may be raised inside its step, where its FMI
#: wrapper turns it into fmi2Error and the master into a component's failure
_received: list[int] = []


def _interrupt(signum, frame):
    """Signal handler: the first SIGINT/SIGTERM becomes a KeyboardInterrupt that carries
    the signal number (and is recorded); further ones are ignored while the run cleans
    up."""
    for s in _STOP_SIGNALS:
        signal.signal(s, signal.SIG_IGN)
    _received.append(signum)
    e = KeyboardInterrupt()
    e.signal = signum
    raise e


def run(args: argparse.Namespace) -> int:
    _received.clear()
    try:
        previous = {s: signal.signal(s, _interrupt) for s in _STOP_SIGNALS}
    except ValueError:  # not the main thread: no handlers, Ctrl-C stays KeyboardInterrupt
        previous = {}
    try:
        return _cosim_run(args)
    except CosimInterrupted as e:
        report_error("cosim", e)
        return 128 + (e.signal or signal.SIGINT)
    except KeyboardInterrupt as e:  # while loading, before the run
        report_error("cosim", "interrupted by the user before the run started")
        return 128 + getattr(e, "signal", signal.SIGINT)
    finally:
        for s, h in previous.items():
            signal.signal(s, h)


def _cosim_run(args: argparse.Namespace) -> int:
    try:
        system = load_system(args.system, allow_python_blocks=args.python_blocks)
    except (ValueError, OSError) as e:
        report_error("cosim", e)
        return 2
    printer = command_progress("flexcosim cosim", args.quiet)
    try:
        control = (StepControl(rtol=args.rtol, atol=args.atol, min_step=args.min_step,
                               max_step=args.max_step) if args.variable_step else None)
        values = experiment_values(system, args.stop, args.step, args.start)
        if values.chosen and not args.quiet:
            print(f"flexcosim cosim: {values.note()}", file=sys.stderr)
        try:
            result = cosimulate(system, stop_time=values.stop_time, step_size=values.step_size,
                                start_time=values.start_time, method=args.method,
                                extrapolation=args.extrapolation, step_control=control,
                                realtime=args.realtime, speed=args.speed, progress=printer,
                                output_file=args.out, step_timeout=args.step_timeout,
                                csv_columns=args.columns, csv_prefix=not args.no_prefix)
        finally:   # the bar's line ends before any message or result
            if printer is not None:
                printer.close()
    except CosimError as e:
        if _received:   # the interrupt reached a Python FMU's step: not its failure
            csv = getattr(e, "csv", None)
            where = f"; results up to t = {e.time:.12g} s written to {csv}" if csv else ""
            report_error("cosim", f"interrupted by the user at t = {e.time:.12g} s{where}")
            return 128 + _received[0]
        report_error("cosim", e)
        return 1
    except ValueError as e:
        # a refused argument of cosimulate, named by its keyword; the user gave an option
        report_error("cosim", str(e).replace("csv_columns:", "--columns:", 1))
        return 2
    summary = f"{len(result)} points, t = {result.time[0]:g} .. {result.time[-1]:g} s"
    if args.variable_step:
        summary += (f", {len(result.steps)} steps accepted ({result.steps.min():.3g} .. "
                    f"{result.steps.max():.3g} s), {len(result.rejected)} rejected")
    print(summary)
    if result.termination is not None:  # asked for by a component: not a failure
        print(result.termination)
    if result.realtime is not None:
        print(result.realtime)
    if args.out:
        print(f"wrote {args.out}")
    if args.plot:
        result.plot(args.plot)
        print(f"wrote {args.plot}")
    return 0
