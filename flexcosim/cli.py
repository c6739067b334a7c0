"""Command line: ``flexcosim demo``, ``flexcosim build MODEL -o DIR`` (a built-in model,
or a model file of either dimension), ``flexcosim export-c MODEL -o DIR`` (a C-source
FMU, no Python needed to run it) and
``flexcosim cosim SYSTEM --stop 10 --step 1e-3 [--realtime] [-o results.csv]``.

Results go to stdout; messages (warnings, an FMU's log with ``-v``) and the progress of
a run go to stderr: ``-v``/``-vv`` say more, ``-q`` only errors and no progress."""
from __future__ import annotations

import argparse
import math
import signal
import sys
from pathlib import Path

import flexcosim
from controllers.laws import (
    AntennaServoController,
    ArmLQGController,
    JointPDController,
    NotchFilter,
    PIDController,
    QuinticJointTrajectory,
    ShapedQuinticTrajectory,
)
from flexcosim.console import ProgressPrinter, terminal_logging
from flexcosim.demo import MODELS, run_demo
from fmu.cosim.master import CosimError, CosimInterrupted, StepControl
from fmu.cosim.simulate import MissingExperimentError, cosimulate
from fmu.cosim.ssp import load_system
from fmu.fmi.build import build_fmu
from fmu.fmi.export_c import CExportError, export_c_fmu
from mbdcore.blocks import ParameterError
from mbdcore.models.antenna import PointingAxisBlock
from mbdcore.models.drive import DCMotorBlock
from mbdcore.models.linear import LinearSystemBlock, load_state_space
from mbdcore.models.manipulator import FlexibleManipulatorBlock
from mbdcore.models.model_block import ModelSystemBlock
from mbdcore.models.model_file import load_model, model_to_dict
from mbdcore.models.ring_truss_block import RingTrussBlock
from mbdcore.multibody.system_block import SystemBlock
from mbdcore.spatial.model_file import DIMENSION

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    # -v/-q before or after the command: on the main parser and on every subcommand
    # (SUPPRESS: a subcommand that does not see them keeps what the main parser read)
    chatter = argparse.ArgumentParser(add_help=False)
    chatter.add_argument("-v", "--verbose", action="count", default=argparse.SUPPRESS,
                         help="say more on stderr: -v every FMU message and what is being "
                              "built or compiled, -vv debugging")
    chatter.add_argument("-q", "--quiet", action="store_true", default=argparse.SUPPRESS,
                         help="only errors on stderr, no progress")
    parser = argparse.ArgumentParser(prog="flexcosim", description=__doc__, parents=[chatter])
    parser.add_argument("--version", action="version", version=f"flexcosim {flexcosim.__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    demo = sub.add_parser("demo", help="closed-loop co-simulation of the two-link flexible arm",
                          parents=[chatter])
    demo.add_argument("-o", "--out", default="results", help="output folder (default: results)")
    demo.add_argument("--stop", type=float, default=3.0, help="stop time [s] (default 3)")
    demo.add_argument("--step", type=float, default=1e-3, help="communication step [s] (default 1e-3)")
    demo.add_argument("--method", choices=("gauss-seidel", "jacobi"), default="gauss-seidel")
    demo.add_argument("--blocks", action="store_true",
                      help="run the controller and the arm as in-process blocks instead of FMUs")
    demo.add_argument("--c-fmus", action="store_true",
                      help="run reference, controller and arm as C-source FMUs (no Python inside)")

    build = sub.add_parser("build", help="build an FMI 2.0 co-simulation FMU",
                           description="MODEL is one of " + ", ".join(sorted(MODELS)) +
                           ", ring-truss (the deployable ring truss, --bays N), or a model "
                           "file (.json/.yaml, planar or spatial, with motors, screw drives "
                           "and latches: mbdcore.models.model_file) of the multibody engine",
                           parents=[chatter])
    build.add_argument("model", help="built-in model name or model file")
    build.add_argument("-o", "--out", default=".", help="output folder or .fmu path")
    build.add_argument("--name", help="model name of a model-file FMU (default: file stem)")
    build.add_argument("--bays", type=int, help="ring-truss: number of bays, built in "
                       "(even, >= 4; default 6)")
    build.add_argument("--inputs", help="model file: comma-separated inputs (default: all)")
    build.add_argument("--outputs", help="model file: comma-separated outputs, e.g. "
                       "crank.phi,der(crank.phi),reaction.O.x,position.rod.B.x,energy "
                       "(default: all coordinates)")

    export = sub.add_parser(
        "export-c", help="export a C-source FMU (runs without Python: real-time targets)",
        description="Write an FMI 2.0 co-simulation FMU with its C sources (C99, libm only) "
                    "and a linux64 binary compiled here.  MODEL is one of: "
                    + "; ".join(f"{k} ({what})" for k, (_, _, what) in C_MODELS.items()),
        parents=[chatter])
    export.add_argument("model", help="model to export")
    export.add_argument("--from", dest="source", metavar="FILE",
                        help="; ".join(f"{k}: {v}" for k, v in _FROM.items()))
    export.add_argument("-o", "--out", default=".", help="output folder or .fmu path")
    export.add_argument("--name", help="model identifier (default: from the model)")
    export.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                        help="a parameter's start value, e.g. method=gill (repeatable)")
    export.add_argument("--no-compile", action="store_true",
                        help="write the sources only (compile on the target)")

    cosim = sub.add_parser(
        "cosim", help="co-simulate a system file (.ssp, .ssd or .json) or a single FMU",
        description="Run a system of FMUs and Python blocks described in an SSP 1.0 file "
                    "(.ssp/.ssd) or a JSON file (see fmu.cosim.ssp), or a single FMU (.fmu, "
                    "its inputs at their start values).  Values not given here come "
                    "from the file's default experiment.", parents=[chatter])
    cosim.add_argument("system", help="system file: .ssp, .ssd or .json; or an .fmu")
    cosim.add_argument("--start", type=float, default=None, help="start time [s] (default 0)")
    cosim.add_argument("--stop", type=float, default=None, help="stop time [s]")
    cosim.add_argument("--step", type=float, default=None,
                       help="communication step [s] (initial step with --variable-step)")
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
    cosim.add_argument("--no-python-blocks", action="store_true",
                       help="refuse Python blocks in the system file (a file with Python "
                            "blocks runs code when loaded: use this for files you did not "
                            "write); checked before anything is imported")

    args = parser.parse_args(argv)
    args.quiet = getattr(args, "quiet", False)
    with terminal_logging(-1 if args.quiet else getattr(args, "verbose", 0)):
        return _command(args, parser)


def _progress(args, label: str) -> ProgressPrinter | None:
    """The progress printer of a run, None with ``-q``."""
    return None if args.quiet else ProgressPrinter(label)


def _command(args, parser) -> int:
    if args.command == "cosim":
        return _cosim(args)
    if args.command == "export-c":
        return _export_c(args)
    if args.command == "demo":

        if args.blocks and args.c_fmus:
            parser.error("--blocks and --c-fmus exclude each other")
        for flag, value in (("--stop", args.stop), ("--step", args.step)):
            if not (math.isfinite(value) and value > 0.0):
                print(f"flexcosim demo: {flag} {value!r}: accepted: a finite time > 0 s",
                      file=sys.stderr)
                return 2
        if args.step > args.stop:
            print(f"flexcosim demo: --step {args.step!r} is longer than --stop {args.stop!r}: "
                  "accepted: a step <= the stop time", file=sys.stderr)
            return 2
        printer = _progress(args, "flexcosim demo")
        try:
            run_demo(args.out, stop_time=args.stop, step=args.step, method=args.method,
                     use_fmus=not args.blocks, c_fmus=args.c_fmus, progress=printer)
        finally:
            if printer is not None:
                printer.close()
        return 0
    if args.command == "build":
        try:
            return _build(args, parser)
        except (ValueError, OSError, RecursionError) as e:
            text = "nested too deeply" if isinstance(e, RecursionError) else e
            if isinstance(e, OSError) and e.filename is not None:
                text = f"{e.filename}: {e.strerror}"
            print(f"flexcosim build: {text}", file=sys.stderr)
            return 2
    return 2  # pragma: no cover


#: ``flexcosim build`` name of the ring truss (configured by ``--bays``)
RING_TRUSS = "ring-truss"


def _build(args, parser) -> int:
    """``flexcosim build``: a built-in model or a model file as an FMU."""
    out = Path(args.out)
    if args.bays is not None and args.model != RING_TRUSS:
        parser.error(f"--bays is for {RING_TRUSS}, not {args.model!r}")
    if args.model == RING_TRUSS:
        # the number of bays fixes the signals: built in, as a model file's signals are
        config = {} if args.bays is None else {"n_bays": args.bays}
        block = RingTrussBlock
        name = args.name or RingTrussBlock.configured(config).__name__.replace("Block", "")
    elif args.model in MODELS:
        block, name = MODELS[args.model]
        config = None
    elif Path(args.model).suffix.lower() in (".json", ".yaml", ".yml"):
        # either dimension, with the models' motors, screw drives and latches
        # (mbdcore.models.model_file reads every file); a planar file keeps the planar block
        system = load_model(args.model)
        block = ModelSystemBlock if system.dim == DIMENSION else SystemBlock
        stem = Path(args.model).stem
        name = args.name or "".join(p.capitalize() for p in stem.replace("-", "_").split("_"))
        config = {"model": model_to_dict(system),
                  "inputs": args.inputs.split(",") if args.inputs else None,
                  "outputs": args.outputs.split(",") if args.outputs else None}
    else:
        parser.error(f"model {args.model!r}: accepted built-in models are "
                     f"{', '.join(sorted(MODELS))}, {RING_TRUSS}, or a .json/.yaml model file")
    path = build_fmu(block, out if out.suffix == ".fmu" else out / f"{name}.fmu",
                     model_name=name, configuration=config)
    print(path)
    return 0


#: Models with C equations, for ``flexcosim export-c``: the block (None: made from the
#: ``--from`` file), the default model identifier, and what it is.
C_MODELS = {
    "manipulator": (FlexibleManipulatorBlock, "FlexibleManipulatorC",
                    "the two-link flexible arm (--set n_modes=3, mode_shapes=clamped-free, "
                    "l1=0.6, ...: built in at export)"),
    "joint-pd": (JointPDController, "JointPDControllerC",
                 "the joint PD controller with rigid feedforward (the rigid arm built in)"),
    "lqg": (ArmLQGController, "ArmLQGControllerC",
            "the LQG/LQI state feedback of the flexible arm (--from DESIGN.json, an "
            "LQGDesign.to_json() text; default: the stored default design; built in)"),
    "trajectory": (QuinticJointTrajectory, "QuinticJointTrajectoryC",
                   "the quintic joint reference"),
    "shaped-trajectory": (ShapedQuinticTrajectory, "ShapedQuinticTrajectoryC",
                          "the quintic joint reference through an input shaper (--set "
                          "shaper=zvd, frequency1=...: built in at export)"),
    "pid": (PIDController, "PIDControllerC",
            "the sampled PID with anti-windup, derivative filter and limits"),
    "notch": (NotchFilter, "NotchFilterC", "the discrete notch filter (biquad)"),
    "statespace": (None, "StateSpace",
                   "a linear(ised) plant x' = A x + B u, y = C x + D u from --from FILE"),
    "antenna-axis": (PointingAxisBlock, "PointingAxisC",
                     "the antenna pointing axis: drive motors, gear trains, flexible structure "
                     "(--set n_motors=2, reflector_ei=..., ...: structure built in at export)"),
    "antenna-servo": (AntennaServoController, "AntennaServoC",
                      "the antenna servo cascade (position and rate PI, friction feedforward)"),
    "drive": (DCMotorBlock, "DCMotorC", "DC servo motors with gearboxes and current amplifiers "
              "(--set n_motors=2: built in at export)"),
}

#: What ``--from FILE`` is, per model that takes one.
_FROM = {"statespace": "a state-space JSON file (mbdcore.models.linear.save_state_space)",
         "lqg": "an LQG design JSON file (LQGDesign.to_json())"}


def _export_c(args) -> int:
    try:
        if args.model not in C_MODELS:
            raise CExportError(f"model {args.model!r}: accepted models are "
                               f"{', '.join(C_MODELS)}")
        block, name, _ = C_MODELS[args.model]
        name = args.name or name
        if args.source and args.model not in _FROM:
            raise CExportError(f"--from is for {' and '.join(_FROM)}, not {args.model}")
        if args.model == "statespace":
            if not args.source:
                raise CExportError(f"statespace needs --from FILE ({_FROM['statespace']})")
            block = LinearSystemBlock.configured(load_state_space(args.source), name)
        params = _parameter_values(block, args.set)
        if args.model == "lqg" and args.source:
            params["design"] = Path(args.source).read_text()
        path = export_c_fmu(block, Path(args.out), model_name=name, parameters=params,
                            compile=False if args.no_compile else None)
    except (CExportError, ParameterError, ValueError, OSError) as e:
        print(f"flexcosim export-c: {e}", file=sys.stderr)
        return 2
    print(path)
    return 0


def _parameter_values(block, settings: list[str]) -> dict:
    """``NAME=VALUE`` strings as typed values of the block's parameters."""
    declared = {p.name: p for p in block.PARAMETERS}
    values = {}
    for item in settings:
        name, sep, text = item.partition("=")
        if not sep:
            raise ValueError(f"--set {item!r}: expected NAME=VALUE")
        if name not in declared:
            raise ValueError(f"--set {name}: no such parameter; parameters: "
                             f"{', '.join(declared)}")
        try:
            values[name] = declared[name].kind(text)
        except ValueError:
            raise ValueError(f"--set {name}={text}: not a {declared[name].kind.__name__}") from None
    return values


#: SIGINT and SIGTERM end ``flexcosim cosim`` cleanly (results flushed, components
#: terminated, temporary folders removed) with the shell's exit code 128 + signal.
_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def _interrupt(signum, frame):
    """Signal handler: the first SIGINT/SIGTERM becomes a KeyboardInterrupt that carries
    the signal number; further ones are ignored while the run cleans up."""
    for s in _STOP_SIGNALS:
        signal.signal(s, signal.SIG_IGN)
    e = KeyboardInterrupt()
    e.signal = signum
    raise e


def _cosim(args) -> int:
    try:
        previous = {s: signal.signal(s, _interrupt) for s in _STOP_SIGNALS}
    except ValueError:  # not the main thread: no handlers, Ctrl-C stays KeyboardInterrupt
        previous = {}
    try:
        return _cosim_run(args)
    except CosimInterrupted as e:
        print(f"flexcosim cosim: {e}", file=sys.stderr)
        return 128 + (e.signal or signal.SIGINT)
    except KeyboardInterrupt as e:  # while loading, before the run
        print("flexcosim cosim: interrupted by the user before the run started",
              file=sys.stderr)
        return 128 + getattr(e, "signal", signal.SIGINT)
    finally:
        for s, h in previous.items():
            signal.signal(s, h)


def _cosim_run(args) -> int:
    try:
        system = load_system(args.system, allow_python_blocks=not args.no_python_blocks)
    except (ValueError, OSError) as e:
        print(f"flexcosim cosim: {e}", file=sys.stderr)
        return 2
    printer = _progress(args, "flexcosim cosim")
    try:
        control = (StepControl(rtol=args.rtol, atol=args.atol, min_step=args.min_step,
                               max_step=args.max_step) if args.variable_step else None)
        try:
            result = cosimulate(system, stop_time=args.stop, step_size=args.step,
                                start_time=args.start, method=args.method,
                                extrapolation=args.extrapolation, step_control=control,
                                realtime=args.realtime, speed=args.speed, progress=printer,
                                output_file=args.out, step_timeout=args.step_timeout)
        finally:   # the bar's line ends before any message or result
            if printer is not None:
                printer.close()
    except CosimError as e:
        print(f"flexcosim cosim: {e}", file=sys.stderr)
        return 1
    except MissingExperimentError as e:
        flags = " and ".join({"stop_time": "--stop", "step_size": "--step"}[n] for n in e.missing)
        print(f"flexcosim cosim: {args.system} has no default for {flags}; give it on the "
              "command line", file=sys.stderr)
        return 2
    except ValueError as e:
        print(f"flexcosim cosim: {e}", file=sys.stderr)
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


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
