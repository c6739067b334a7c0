"""The ``flexcosim`` command's arguments: the parser and the checks that need no model.

Standard library only (and :data:`flexcosim.__version__`): ``--help``, ``--version``, a
mistyped command, model, option or choice and a bad option value are answered here, before
any command's module (numpy, scipy, the models) is imported.  Every error is one line of
:func:`flexcosim.console.error_line`, argparse's own too (no usage text), exit code 2; a
mistyped name gets the closest names (``difflib``):
``flexcosim: error: unknown command 'demp'; did you mean 'demo'? accepted commands: ...``,
``flexcosim cosim: error: unknown option '--stpo'; did you mean '--stop' or '--step'? ...``.
"""
from __future__ import annotations

import argparse
import difflib
import math
import re
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
from flexcosim.console import error_line

__all__ = ["DESCRIPTION", "CommandParser", "WritingParser", "make_parser", "unknown_name",
           "listed", "number", "integer", "csv_columns", "check_arguments"]

DESCRIPTION = """\
Command line: ``flexcosim demo``, ``flexcosim build MODEL -o DIR`` (a built-in model,
or a model file of either dimension), ``flexcosim export-c MODEL -o DIR`` (a C-source
FMU, no Python needed to run it) and
``flexcosim cosim SYSTEM --stop 10 --step 1e-3 [--realtime] [-o results.csv]``.

Results go to stdout; messages (warnings, an FMU's log with ``-v``) and the progress of
a run go to stderr: ``-v``/``-vv`` say more, ``-q`` only errors and no progress."""


def unknown_name(kind: str, word: str, accepted: Sequence[str], alternative: str = "",
                 listing: str | None = None) -> str:
    """One line for a name that is not one of ``accepted``: the closest of them, then all
    of them (``alternative``: what else is accepted, e.g. ", or a model file"; ``listing``:
    where they are listed instead, for a long list)."""
    close = difflib.get_close_matches(word, accepted, n=3)
    guess = f"did you mean {listed([repr(c) for c in close], 'or')}? " if close else ""
    names = listing if listing is not None else f"{', '.join(accepted)}{alternative}"
    return f"unknown {kind} {word!r}; {guess}accepted {kind}s: {names}"


def listed(words: Sequence[str], last: str) -> str:
    """``a, b and c`` (``last`` = "and") or ``a, b or c``."""
    return f" {last} ".join(filter(None, [", ".join(words[:-1]), words[-1]]))


def number(text: str) -> float:
    """An option's number (argparse ``type``): the refusal says what is accepted."""
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r}: not a number; accepted: a number, e.g. 10, 0.5 or 1e-3") from None


def integer(text: str) -> int:
    """An option's whole number (argparse ``type``)."""
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r}: not a whole number; accepted: a whole number, e.g. 6") from None


def csv_columns(text: str) -> dict[str, str | None]:
    """``--columns``'s value (argparse ``type``): ``NAME[=NEW],...`` as the
    ``{name: new name}`` of ``Result.to_csv(columns=...)``, a name without ``=NEW``
    not renamed (``None``: it keeps its name, or loses its component with
    ``--no-prefix``)."""
    chosen: dict[str, str | None] = {}
    for item in text.split(","):
        name, renamed, new = (part.strip() for part in item.partition("="))
        if not name or (renamed and not new):
            raise argparse.ArgumentTypeError(
                f"{text!r}: an empty column name; accepted: COMPONENT.SIGNAL[=NEW],... "
                "e.g. arm.theta1,ctrl.tau1=torque")
        if name in chosen:
            raise argparse.ArgumentTypeError(
                f"{text!r}: {name!r} given twice; accepted: each column once")
        chosen[name] = new or None
    return chosen


#: argparse's own phrases, said as the rest of the command line says things
_ARGPARSE_PHRASES = ((r"expected one argument", "needs a value"),
                     (r"not allowed with argument", "cannot be combined with"),
                     (r"ignored explicit argument (.*)", r"takes no value (\1 given)"),
                     (r"ambiguous option: (\S+) could match (.*)",
                      r"ambiguous option '\1'; accepted: one of \2"))


class WritingParser(argparse.ArgumentParser):
    """A parser whose every error is one line of :func:`~flexcosim.console.error_line`
    with exit code 2 (argparse prints its usage and then ``prog: error: ...``), a value
    not among an option's choices answered with the closest ones; and whose ``--help`` or
    ``--version`` that cannot be written fails: argparse drops a failed write (stdout on a
    full disk, a closed pipe) and exits 0 as if it had been printed; here the OSError
    reaches :func:`flexcosim.cli.main`, which says so in one line."""

    def _print_message(self, message, file=None):
        if message:
            (file or sys.stderr).write(message)

    def _check_value(self, action, value):
        # argparse's own check, with "did you mean" (the command is a choice of the
        # main parser's subparsers action, dest "command")
        if action.choices is None or value in action.choices:
            return
        accepted = [str(c) for c in action.choices]
        if action.dest == "command":
            problem = unknown_name("command", str(value), accepted)
        else:
            option = action.option_strings[-1]
            problem = unknown_name(f"{option} value", str(value), accepted)
        raise argparse.ArgumentError(None, problem)

    @property
    def command(self) -> str | None:
        """The command this parser reads (None: the main parser)."""
        return self.prog.partition(" ")[2] or None

    def error(self, message: str):
        self.exit(2, error_line(self.command, self._said_plainly(message)) + "\n")

    def _said_plainly(self, message: str) -> str:
        """argparse's message in the command line's words: ``--stop 'x': not a number``
        for ``argument --stop: 'x': not a number``, what a missing argument is."""
        required = "the following arguments are required: "
        if message.startswith(required):
            return "; ".join(self._missing(name) for name in message[len(required):].split(", "))
        match = re.fullmatch(r"argument (\S+): (.*)", message, re.DOTALL)
        if match:
            names, message = match.groups()
            message = f"{names.split('/')[-1]} {message}"
        for theirs, ours in _ARGPARSE_PHRASES:
            message = re.sub(theirs, ours, message)
        return message

    def _missing(self, name: str) -> str:
        for action in self._actions:
            if name in (action.dest, action.metavar) or name in action.option_strings:
                if action.choices is not None:
                    what = f" {action.dest}s: {', '.join(map(str, action.choices))}"
                else:
                    what = f": {action.help}"
                return f"missing {name.upper()}; accepted{what}"
        return f"missing {name}"

    def option_strings(self) -> list[str]:
        """This parser's options, long and short."""
        return [o for a in self._actions for o in a.option_strings]

    def unknown_words(self, words: Sequence[str]) -> str:
        """What is wrong with words this parser did not take: the first one, an option
        with the closest options, or an argument too many."""
        word = words[0]
        if word.startswith("-") and len(word) > 1:
            option = word.partition("=")[0]
            long = [o for o in self.option_strings() if o.startswith("--")]
            return unknown_name("option", option, long,
                                listing=f"see '{self.prog} --help'")
        return f"unexpected argument {word!r}; accepted: see '{self.prog} --help'"


class CommandParser(WritingParser):
    """The main parser: words that no parser took are refused by the parser of their
    command (``--stpo`` after ``cosim``: "did you mean '--stop'?"), not by the main parser
    as argparse does."""

    commands: dict[str, WritingParser]

    def parse_args(self, args=None, namespace=None):
        # kept for error(): argparse does not hand the words to it
        self.words = list(sys.argv[1:] if args is None else args)
        namespace, extras = self.parse_known_args(args, namespace)
        if extras:
            misplaced = self._misplaced(extras[0])
            if misplaced:
                super().error(misplaced)
            parser = self.commands.get(getattr(namespace, "command", None), self)
            parser.error(parser.unknown_words(extras))
        return namespace

    def _misplaced(self, word: str) -> str | None:
        """A command's option given before the command (a command's parser takes every
        option of its own that follows it), if ``word`` is one."""
        option = word.partition("=")[0]
        owners = [name for name, parser in self.commands.items()
                  if option.startswith("-") and option in parser.option_strings()]
        if not owners:
            return None
        return (f"{option} is an option of {listed(owners, 'and')}, given before the command; "
                f"accepted: 'flexcosim {owners[0]} {option} ...'")

    def error(self, message: str):
        # an unknown option before the command (``flexcosim --stpo 1``) makes argparse
        # take its value for the command, or miss the command: the option is the mistake
        stray = self._stray_option()
        if stray:
            message = self._misplaced(stray) or self.unknown_words([stray])
        super().error(message)

    def _stray_option(self) -> str | None:
        """The first word before the command that is none of this parser's options
        (nor an abbreviation of one, nor combined short flags such as ``-vq``)."""
        for word in getattr(self, "words", ()):
            if word == "--" or not word.startswith("-") or word == "-":
                return None
            name = word.partition("=")[0]
            known = (any(o.startswith(name) for o in self._option_string_actions)
                     if name.startswith("--") else len(name) > 2 or
                     name in self._option_string_actions)
            if not known:
                return word
        return None


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
    parser.commands = {}

    def command(name: str, **kwargs) -> WritingParser:
        parser.commands[name] = sub.add_parser(name, prog=f"flexcosim {name}", **kwargs)
        return parser.commands[name]

    demo = command("demo", help="closed-loop co-simulation of the two-link flexible arm",
                          parents=[chatter])
    demo.add_argument("-o", "--out", default="results", help="output folder (default: results)")
    demo.add_argument("--stop", type=number, default=5.0, help="stop time [s] (default 5)")
    demo.add_argument("--step", type=number, default=1e-3, help="communication step [s] (default 1e-3)")
    demo.add_argument("--method", choices=("gauss-seidel", "jacobi"), default="gauss-seidel")
    components = demo.add_mutually_exclusive_group()
    components.add_argument("--blocks", action="store_true",
                            help="run the controller and the arm as in-process blocks instead "
                                 "of FMUs")
    components.add_argument("--c-fmus", action="store_true",
                            help="run reference, controller and arm as C-source FMUs, no "
                                 "Python inside (the default)")
    components.add_argument("--python-fmus", action="store_true",
                            help="run the controller and the arm as Python FMUs (pythonfmu) "
                                 "instead of C-source FMUs: the same moves, slower")

    build = command("build", help="build an FMI 2.0 co-simulation FMU",
                           description="MODEL is one of " + ", ".join(sorted(BUILD_MODELS)) +
                           f", {RING_TRUSS} (the deployable ring truss, --bays N), or a model "
                           "file (.json/.yaml, planar or spatial, with motors, screw drives "
                           "and latches: mbdcore.models.model_file) of the multibody engine",
                           parents=[chatter])
    build.add_argument("model", help=", ".join([*BUILD_MODELS, RING_TRUSS]) +
                       ", or a .json/.yaml model file")
    build.add_argument("-o", "--out", default=".", help="output folder or .fmu path")
    build.add_argument("--name", help="model name of a model-file FMU (default: file stem)")
    build.add_argument("--bays", type=integer, help=f"{RING_TRUSS}: number of bays, built in "
                       "(even, 4 to 100: mbdcore.models.ring_truss.MAX_BAYS; default 6)")
    build.add_argument("--inputs", help="model file: comma-separated inputs (default: all)")
    build.add_argument("--outputs", help="model file: comma-separated outputs, e.g. "
                       "crank.phi,der(crank.phi),reaction.O.x,position.rod.B.x,energy "
                       "(default: all coordinates)")

    export = command(
        "export-c", help="export a C-source FMU (runs without Python: real-time targets)",
        description="Write an FMI 2.0 (or, with --fmi 3, FMI 3.0) co-simulation FMU with "
                    "its C sources (C99, libm only), a linux64 binary compiled here and a "
                    "win64 one where MinGW-w64 is installed.  MODEL is one of: "
                    + "; ".join(f"{k} ({m.description})" for k, m in C_MODELS.items())
                    + "; or a model file (.json/.yaml) whose every part has a compiled "
                      "form, stepped in C by its implicit method (generalized-alpha, hht "
                      "or newmark; docs/model_files.md)",
        parents=[chatter])
    export.add_argument("model", help=", ".join(C_MODELS) + ", or a .json/.yaml model file")
    export.add_argument("--from", dest="source", metavar="FILE",
                        help="; ".join(f"{k}: {v}" for k, v in FROM_FILE.items()))
    export.add_argument("-o", "--out", default=".", help="output folder or .fmu path")
    export.add_argument("--name", help="model identifier (default: from the model)")
    export.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                        help="a parameter's start value, e.g. method=gill (repeatable)")
    export.add_argument("--no-compile", action="store_true",
                        help="write the sources only (compile on the target)")
    export.add_argument("--fmi", type=integer, choices=(2, 3), default=2,
                        help="FMI version of the FMU (default 2)")
    export.add_argument("--kind", choices=("cs", "me"), default="cs",
                        help="cs: co-simulation (default); me: Model Exchange too, the host's "
                             "solver integrating the model (models with a continuous state "
                             "only: manipulator, drive, antenna-axis, statespace)")
    export.add_argument("--platform", action="append", choices=("linux64", "win64"),
                        dest="platforms",
                        help="a binary to compile (repeat for several); default linux64 and "
                             "win64 where MinGW-w64 is installed")
    export.add_argument("--scalars", action="store_true",
                        help="FMI 3.0: keep a vector signal's elements as scalars with the FMI "
                             "2.0 FMU's names (tau1, tau2) instead of one array (tau)")

    cosim = command(
        "cosim", help="co-simulate a system file (.ssp, .ssd or .json) or a single FMU",
        description="Run a system of FMUs and Python blocks described in an SSP 1.0 file "
                    "(.ssp/.ssd) or a JSON file (see fmu.cosim.system_file), or a single FMU (.fmu, "
                    "its inputs at their start values).  Values not given here come "
                    "from the file's default experiment.", parents=[chatter])
    cosim.add_argument("system", help="system file: .ssp, .ssd or .json; or an .fmu")
    cosim.add_argument("--start", type=number, default=None, help="start time [s] (default 0)")
    cosim.add_argument("--stop", type=number, default=None,
                       help="stop time [s] (default: the system's, else start + 1 s as in fmpy)")
    cosim.add_argument("--step", type=number, default=None,
                       help="communication step [s] (initial step with --variable-step; "
                            "default: the system's, else an FMU's fixed internal step, else "
                            "500 to 1000 steps as in fmpy)")
    cosim.add_argument("--method", choices=("gauss-seidel", "jacobi"), default=None)
    cosim.add_argument("--extrapolation", choices=("zero", "first"), default=None,
                       help="input extrapolation order over a step (default zero)")
    cosim.add_argument("--variable-step", action="store_true",
                       help="variable communication step with error control and rollback")
    cosim.add_argument("--rtol", type=number, default=1e-3, help="relative coupling tolerance")
    cosim.add_argument("--atol", type=number, default=1e-6, help="absolute coupling tolerance")
    cosim.add_argument("--min-step", type=number, default=None, help="minimum step [s]")
    cosim.add_argument("--max-step", type=number, default=None, help="maximum step [s]")
    cosim.add_argument("--realtime", action="store_true", help="pace to the wall clock")
    cosim.add_argument("--speed", type=number, default=1.0,
                       help="simulated seconds per wall-clock second with --realtime")
    cosim.add_argument("--progress", action="store_true",
                       help="show the progress on stderr (the default; -q hides it)")
    cosim.add_argument("-o", "--out", default=None,
                       help="results CSV, written as the run goes (checked before the run "
                            "starts; valid up to the last step after a failure, a timeout or "
                            "Ctrl-C/SIGTERM)")
    cosim.add_argument("--columns", type=csv_columns, default=None,
                       metavar="COMPONENT.SIGNAL[=NEW],...",
                       help="the columns of the results CSV (-o), in this order, each "
                            "renamed NEW if given (time always first; default: every "
                            "output and input), e.g. arm.theta1,ctrl.tau1=torque")
    cosim.add_argument("--no-prefix", action="store_true",
                       help="results CSV (-o): the columns not renamed by --columns without "
                            "their component (arm.theta1 -> theta1)")
    cosim.add_argument("--step-timeout", type=number, default=None, metavar="SECONDS",
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
            return f"{flag} {value!r}; accepted: a finite time > 0 s"
    if args.step > args.stop:
        return (f"--step {args.step!r} is longer than --stop {args.stop!r}; "
                "accepted: a step <= the stop time")
    return None


def _check_build(args) -> str | None:
    if (args.model in BUILD_MODELS or args.model == RING_TRUSS
            or Path(args.model).suffix.lower() in MODEL_FILE_SUFFIXES):
        return None
    return unknown_name("model", args.model, [*BUILD_MODELS, RING_TRUSS],
                        ", or a .json/.yaml model file")


def _check_export_c(args) -> str | None:
    is_file = Path(args.model).suffix.lower() in MODEL_FILE_SUFFIXES
    if args.model not in C_MODELS and not is_file:
        return unknown_name("model", args.model, list(C_MODELS),
                            ", or a .json/.yaml model file")
    if is_file and args.source:
        return f"--from is for {' and '.join(FROM_FILE)}, not a model file; accepted: " \
               f"{args.model} without --from"
    if args.source and args.model not in FROM_FILE:
        return (f"--from is for {' and '.join(FROM_FILE)}, not {args.model}; accepted: "
                f"{args.model} without --from")
    if args.model == "statespace" and not args.source:
        return f"statespace needs --from FILE; accepted: {FROM_FILE['statespace']}"
    return None


def _check_cosim(args) -> str | None:
    if args.out is None and (args.columns is not None or args.no_prefix):
        option = "--columns" if args.columns is not None else "--no-prefix"
        return f"{option} chooses the columns of the results CSV; accepted: with -o FILE.csv"
    return None


#: per command, the checks of its arguments that need no model
_CHECKS = {"demo": _check_demo, "build": _check_build, "export-c": _check_export_c,
           "cosim": _check_cosim}


def check_arguments(args: argparse.Namespace) -> str | None:
    """What is wrong with parsed arguments, as one line (None: nothing found here): a
    usage error, exit code 2."""
    if args.command == "build" and args.bays is not None and args.model != RING_TRUSS:
        return f"--bays is for {RING_TRUSS}, not {args.model!r}; accepted: --bays with {RING_TRUSS}"
    check = _CHECKS.get(args.command)
    return check(args) if check is not None else None
