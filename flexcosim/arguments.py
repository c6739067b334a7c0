"""The ``flexcosim`` command's arguments: the parser and the checks that need no model.

Standard library only (and :data:`flexcosim.__version__`): ``--help``, ``--version``, a
mistyped command or model name and a bad option value are answered here, before any
command's module (numpy, scipy, the models) is imported.  A mistyped name gets the
closest names (``difflib``): ``flexcosim: unknown command 'demp': did you mean 'demo'?``.
"""
from __future__ import annotations

import argparse
import difflib
import math
import sys
from pathlib import Path
from typing import Sequence

import flexcosim
from flexcosim.catalog import (
    BUILD_MODELS,
    C_MODELS,
    COMMANDS,
    FROM_FILE,
    MODEL_FILE_SUFFIXES,
    RING_TRUSS,
)

__all__ = ["DESCRIPTION", "CommandParser", "WritingParser", "make_parser", "unknown_name", "check_arguments"]

DESCRIPTION = """\
Command line: ``flexcosim demo``, ``flexcosim build MODEL -o DIR`` (a built-in model,
or a model file of either dimension), ``flexcosim export-c MODEL -o DIR`` (a C-source
FMU, no Python needed to run it) and
``flexcosim cosim SYSTEM --stop 10 --step 1e-3 [--realtime] [-o results.csv]``.

Results go to stdout; messages (warnings, an FMU's log with ``-v``) and the progress of
a run go to stderr: ``-v``/``-vv`` say more, ``-q`` only errors and no progress."""


def unknown_name(kind: str, word: str, accepted: Sequence[str], alternative: str = "") -> str:
    """One line for a name that is not one of ``accepted``: the closest of them, then all
    of them (``alternative``: what else is accepted, e.g. ", or a model file")."""
    close = difflib.get_close_matches(word, accepted, n=3)
    guess = f"did you mean {' or '.join(repr(c) for c in close)}? " if close else ""
    return (f"unknown {kind} {word!r}: {guess}accepted {kind}s are {', '.join(accepted)}"
            f"{alternative}")


def _first_positional(words: Sequence[str]) -> str | None:
    """The command word of an argument list: the main parser's own options take no value,
    so it is the first word that is not an option."""
    after_dashes = False
    for word in words:
        if after_dashes or word == "-" or not word.startswith("-"):
            return word
        after_dashes = word == "--"
    return None


class WritingParser(argparse.ArgumentParser):
    """A parser whose ``--help`` or ``--version`` that cannot be written fails: argparse
    drops a failed write (stdout on a full disk, a closed pipe) and exits 0 as if it had
    been printed; here the OSError reaches :func:`flexcosim.cli.main`, which says so in
    one line."""

    def _print_message(self, message, file=None):
        if message:
            (file or sys.stderr).write(message)


class CommandParser(WritingParser):
    """The main parser: a command that is not one of :data:`COMMANDS` is one line with
    the closest commands (argparse alone prints its usage and the whole list)."""

    def parse_known_args(self, args=None, namespace=None):
        # kept for error(): argparse does not hand the offending word to it
        self.words = list(args) if args is not None else None
        return super().parse_known_args(args, namespace)

    def error(self, message: str):
        words = getattr(self, "words", None)
        words = sys.argv[1:] if words is None else words
        command = _first_positional(words)
        if command is not None and command not in COMMANDS:
            self.exit(2, f"{self.prog}: {unknown_name('command', command, list(COMMANDS))}\n")
        super().error(message)


def make_parser() -> CommandParser:
    """The parser of ``flexcosim``: one subparser per command of :data:`COMMANDS`."""
    # -v/-q before or after the command: on the main parser and on every subcommand
    # (SUPPRESS: a subcommand that does not see them keeps what the main parser read)
    chatter = argparse.ArgumentParser(add_help=False)
    chatter.add_argument("-v", "--verbose", action="count", default=argparse.SUPPRESS,
                         help="say more on stderr: -v every FMU message and what is being "
                              "built or compiled, -vv debugging")
    chatter.add_argument("-q", "--quiet", action="store_true", default=argparse.SUPPRESS,
                         help="only errors on stderr, no progress")
    parser = CommandParser(prog="flexcosim", description=DESCRIPTION, parents=[chatter])
    parser.add_argument("--version", action="version", version=f"flexcosim {flexcosim.__version__}")
    # subparsers of the plain class: their errors are about their own options
    sub = parser.add_subparsers(dest="command", required=True,
                                parser_class=WritingParser)

    demo = sub.add_parser("demo", help="closed-loop co-simulation of the two-link flexible arm",
                          parents=[chatter])
    demo.add_argument("-o", "--out", default="results", help="output folder (default: results)")
    demo.add_argument("--stop", type=float, default=3.0, help="stop time [s] (default 3)")
    demo.add_argument("--step", type=float, default=1e-3, help="communication step [s] (default 1e-3)")
    demo.add_argument("--method", choices=("gauss-seidel", "jacobi"), default="gauss-seidel")
    components = demo.add_mutually_exclusive_group()
    components.add_argument("--blocks", action="store_true",
                            help="run the controller and the arm as in-process blocks instead "
                                 "of FMUs")
    components.add_argument("--c-fmus", action="store_true",
                            help="run reference, controller and arm as C-source FMUs (no "
                                 "Python inside)")

    build = sub.add_parser("build", help="build an FMI 2.0 co-simulation FMU",
                           description="MODEL is one of " + ", ".join(sorted(BUILD_MODELS)) +
                           f", {RING_TRUSS} (the deployable ring truss, --bays N), or a model "
                           "file (.json/.yaml, planar or spatial, with motors, screw drives "
                           "and latches: mbdcore.models.model_file) of the multibody engine",
                           parents=[chatter])
    build.add_argument("model", help="built-in model name or model file")
    build.add_argument("-o", "--out", default=".", help="output folder or .fmu path")
    build.add_argument("--name", help="model name of a model-file FMU (default: file stem)")
    build.add_argument("--bays", type=int, help=f"{RING_TRUSS}: number of bays, built in "
                       "(even, 4 to 100: mbdcore.models.ring_truss.MAX_BAYS; default 6)")
    build.add_argument("--inputs", help="model file: comma-separated inputs (default: all)")
    build.add_argument("--outputs", help="model file: comma-separated outputs, e.g. "
                       "crank.phi,der(crank.phi),reaction.O.x,position.rod.B.x,energy "
                       "(default: all coordinates)")

    export = sub.add_parser(
        "export-c", help="export a C-source FMU (runs without Python: real-time targets)",
        description="Write an FMI 2.0 (or, with --fmi 3, FMI 3.0) co-simulation FMU with "
                    "its C sources (C99, libm only), a linux64 binary compiled here and a "
                    "win64 one where MinGW-w64 is installed.  MODEL is one of: "
                    + "; ".join(f"{k} ({m.description})" for k, m in C_MODELS.items()),
        parents=[chatter])
    export.add_argument("model", help="model to export")
    export.add_argument("--from", dest="source", metavar="FILE",
                        help="; ".join(f"{k}: {v}" for k, v in FROM_FILE.items()))
    export.add_argument("-o", "--out", default=".", help="output folder or .fmu path")
    export.add_argument("--name", help="model identifier (default: from the model)")
    export.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                        help="a parameter's start value, e.g. method=gill (repeatable)")
    export.add_argument("--no-compile", action="store_true",
                        help="write the sources only (compile on the target)")
    export.add_argument("--fmi", type=int, choices=(2, 3), default=2,
                        help="FMI version of the FMU (default 2)")
    export.add_argument("--kind", choices=("cs", "me"), default="cs",
                        help="cs: co-simulation (default); me: Model Exchange too, the host's "
                             "solver integrating the model (models with a continuous state "
                             "only: manipulator, drive, antenna-axis, statespace)")
    export.add_argument("--scalars", action="store_true",
                        help="FMI 3.0: keep a vector signal's elements as scalars with the FMI "
                             "2.0 FMU's names (tau1, tau2) instead of one array (tau)")

    cosim = sub.add_parser(
        "cosim", help="co-simulate a system file (.ssp, .ssd or .json) or a single FMU",
        description="Run a system of FMUs and Python blocks described in an SSP 1.0 file "
                    "(.ssp/.ssd) or a JSON file (see fmu.cosim.system_file), or a single FMU (.fmu, "
                    "its inputs at their start values).  Values not given here come "
                    "from the file's default experiment.", parents=[chatter])
    cosim.add_argument("system", help="system file: .ssp, .ssd or .json; or an .fmu")
    cosim.add_argument("--start", type=float, default=None, help="start time [s] (default 0)")
    cosim.add_argument("--stop", type=float, default=None,
                       help="stop time [s] (default: the system's, else start + 1 s as in fmpy)")
    cosim.add_argument("--step", type=float, default=None,
                       help="communication step [s] (initial step with --variable-step; "
                            "default: the system's, else an FMU's fixed internal step, else "
                            "500 to 1000 steps as in fmpy)")
    cosim.add_argument("--method", choices=("gauss-seidel", "jacobi"), default=None)
    cosim.add_argument("--extrapolation", choices=("zero", "first"), default=None,
                       help="input extrapolation order over a step (default zero)")
    cosim.add_argument("--variable-step", action="store_true",
                       help="variable communication step with error control and rollback")
    cosim.add_argument("--rtol", type=float, default=1e-3, help="relative coupling tolerance")
    cosim.add_argument("--atol", type=float, default=1e-6, help="absolute coupling tolerance")
    cosim.add_argument("--min-step", type=float, default=None, help="minimum step [s]")
    cosim.add_argument("--max-step", type=float, default=None, help="maximum step [s]")
    cosim.add_argument("--realtime", action="store_true", help="pace to the wall clock")
    cosim.add_argument("--speed", type=float, default=1.0,
                       help="simulated seconds per wall-clock second with --realtime")
    cosim.add_argument("--progress", action="store_true",
                       help="show the progress on stderr (the default; -q hides it)")
    cosim.add_argument("-o", "--out", default=None,
                       help="results CSV, written as the run goes (checked before the run "
                            "starts; valid up to the last step after a failure, a timeout or "
                            "Ctrl-C/SIGTERM)")
    cosim.add_argument("--step-timeout", type=float, default=None, metavar="SECONDS",
                       help="stop the run when a component takes longer than this (wall "
                            "clock) in one step; an FMU stuck inside its C code cannot be "
                            "interrupted and is reported only if it returns")
    cosim.add_argument("--plot", default=None, help="PNG of the outputs")
    # a Python block runs code when its module is imported: by default only the
    # project's own (mbdcore, controllers, fmu); checked before anything is imported
    blocks = cosim.add_mutually_exclusive_group()
    blocks.add_argument("--allow-python-blocks", dest="python_blocks", action="store_const",
                        const=True, default="project",
                        help="let the system file name Python blocks of any module (its "
                             "code runs when loaded: only for files you wrote or trust); by "
                             "default only the project's own blocks (mbdcore, controllers, "
                             "fmu) are loaded")
    blocks.add_argument("--no-python-blocks", dest="python_blocks", action="store_const",
                        const=False, help="refuse every Python block, the project's own too")
    return parser


def _check_demo(args) -> str | None:
    for flag, value in (("--stop", args.stop), ("--step", args.step)):
        if not (math.isfinite(value) and value > 0.0):
            return f"{flag} {value!r}: accepted: a finite time > 0 s"
    if args.step > args.stop:
        return (f"--step {args.step!r} is longer than --stop {args.stop!r}: "
                "accepted: a step <= the stop time")
    return None


def _check_build(args) -> str | None:
    if (args.model in BUILD_MODELS or args.model == RING_TRUSS
            or Path(args.model).suffix.lower() in MODEL_FILE_SUFFIXES):
        return None
    return unknown_name("model", args.model, [*BUILD_MODELS, RING_TRUSS],
                        ", or a .json/.yaml model file")


def _check_export_c(args) -> str | None:
    if args.model not in C_MODELS:
        return unknown_name("model", args.model, list(C_MODELS))
    if args.source and args.model not in FROM_FILE:
        return f"--from is for {' and '.join(FROM_FILE)}, not {args.model}"
    if args.model == "statespace" and not args.source:
        return f"statespace needs --from FILE ({FROM_FILE['statespace']})"
    return None


#: per command, the checks of its arguments that need no model
_CHECKS = {"demo": _check_demo, "build": _check_build, "export-c": _check_export_c}


def check_arguments(args: argparse.Namespace, parser: argparse.ArgumentParser) -> str | None:
    """What is wrong with parsed arguments, as one line (None: nothing found here); a
    misused option is a usage error (``parser.error``, exit code 2)."""
    if args.command == "build" and args.bays is not None and args.model != RING_TRUSS:
        parser.error(f"--bays is for {RING_TRUSS}, not {args.model!r}")
    check = _CHECKS.get(args.command)
    return check(args) if check is not None else None
