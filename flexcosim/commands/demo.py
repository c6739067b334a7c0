"""``flexcosim demo``: the closed-loop co-simulation of the two-link flexible arm, the
same move under three controllers side by side (:mod:`flexcosim.demo`)."""
from __future__ import annotations

import argparse

from flexcosim.console import command_progress, report_error
from flexcosim.demo import run_demo
from fmu.cosim.errors import CosimError

__all__ = ["run"]


def run(args: argparse.Namespace) -> int:
    printer = command_progress("flexcosim demo", args.quiet)
    try:
        run_demo(args.out, stop_time=args.stop, step=args.step, method=args.method,
                 use_fmus=not args.blocks, c_fmus=not args.python_fmus, progress=printer)
    except CosimError as e:      # a component failed (a step too long for the arm, ...)
        report_error("demo", e)
        return 1
    except ValueError as e:      # what the master refuses before the run
        report_error("demo", e)
        return 2
    finally:
        if printer is not None:
            printer.close()
    return 0
