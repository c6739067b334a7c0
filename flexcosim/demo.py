"""The main job: three controllers on the same move of the two-link flexible arm, side
by side, each closed loop under the co-simulation master.

The move (docs/benchmarks.md §1, load case 1b): both joints from rest at (0, 0) to rest
at (15 deg, 10 deg).  Each loop has three components, ``ref`` -> ``ctrl`` -> ``arm``:

* ``pd`` -- joint PD with rigid-model feedforward on the 2 s quintic.  It measures the
  joint angles and rates only: the joints arrive, the links keep swinging (the link mode
  of this loop, 0.43 Hz, has 0.5 % damping);
* ``shaped`` -- the same PD on a 1.2 s quintic convolved with a ZV input shaper tuned to
  that 0.43 Hz mode (:class:`~controllers.laws.ShapedQuinticTrajectory`): the reference,
  1.2 s + half a period = 2.36 s long, no longer excites the mode;
* ``lqg`` -- LQG state feedback (``arm_lqg_default.json``) with the flexible-model
  reference over 2 s (:class:`~controllers.laws.ArmLQGController`,
  :class:`~controllers.laws.FlexibleArmReference`): it also measures the links' tip
  deflections and damps them.

With FMUs (the default) the components are built in ``out/fmus``: with ``c_fmus`` (the
default) the reference, the controller and the arm are C-source FMUs (no Python inside;
on a machine without a C compiler their binaries are those compiled with the package,
:mod:`flexcosim.prebuilt`), but the flexible-model reference, which has no C form, stays
an in-process block; without ``c_fmus`` the controller and the arm are Python FMUs and the
reference an in-process block; without FMUs all three are in-process blocks.  The
equations are the same C in every case, and so are the moves.  C FMUs are the default
because they are the cheapest: the master's loop runs in C over them
(:mod:`fmu.cosim.compiled_loop`), where a Python FMU calls into Python at every step.

The figures of each move, one definition each (:mod:`controllers.evaluation.metrics`,
:mod:`controllers.evaluation.validation`):

* overshoot [% of the move], per joint: the largest excursion past the target;
* settling time [s]: the move time, from which both joints stay within 2 % of their move
  to the end of the record;
* residual vibration [m]: the peak-to-peak end-effector deflection from the rigid arm at
  the measured joint angles over the second after the settling time;
* peak torque [N m], per joint: the largest ``|tau|``.

:func:`run_demo` runs the three loops, writes ``results.csv`` (every signal of every loop,
its columns named ``<controller>.<component>.<signal>``) and ``closed_loop.png`` (one
figure: joint angles, end-effector deflection, joint torques) and prints the table of
those figures and what they say.
"""
from __future__ import annotations

import importlib.util
import logging
import math
import time
from pathlib import Path
from typing import Any, Callable, NamedTuple

import numpy as np

from controllers.evaluation.validation import (
    RESIDUAL_WINDOW,
    SETTLING_BAND,
    arm_closed_loop,
    closed_loop_move,
    end_effector_deflection,
    move_report,
    reference_move,
)
from controllers.laws.arm_lqg import ArmLQGController, FlexibleArmReference
from controllers.laws.input_shaping import ShapedQuinticTrajectory
from controllers.laws.joint_pd import JointPDController
from controllers.laws.trajectory import QuinticJointTrajectory
from flexcosim.catalog import BUILD_MODELS, resolve
from fmu.cosim.components import BlockComponent, Component
from fmu.cosim.fmu_component import FMUComponent
from fmu.cosim.system import System
from fmu.fmi.build import EMBEDDED_PACKAGES, build_fmu
from fmu.fmi.export_c import export_c_fmu
from mbdcore.blocks import Block
from mbdcore.models.manipulator import (
    JOINT_STATES,
    FlexibleManipulator,
    FlexibleManipulatorBlock,
)
from mbdcore.timeseries import TimeSeries, axis_label

__all__ = ["MODELS", "MEASURED", "DemoController", "CONTROLLERS", "ensure_fmu",
           "ensure_c_fmu", "closed_loop_system", "demo_metrics", "combined_results",
           "demo_figure", "plot_closed_loop", "run_demo", "TABLE_HEADER", "demo_table",
           "demo_story"]

#: name on the command line -> (block class, FMU model name): the built-in models of
#: ``flexcosim build`` (:data:`flexcosim.catalog.BUILD_MODELS`, where they are names)
MODELS = {name: (resolve(m.block), m.model_name) for name, m in BUILD_MODELS.items()}

#: What the joint PD controller measures: the joint states.
MEASURED = JOINT_STATES

#: What the demo is doing before its run (building FMUs), for the command line's stderr.
logger = logging.getLogger(__name__)


class DemoController:
    """One closed loop of the demo: a reference and a controller on the arm.

    ``reference``, ``controller``: the block classes (their FMUs are named after them,
    :func:`ensure_fmu`); ``reference_in_c``: whether the reference has a C form
    (``c_fmus`` exports it; else it is an in-process block in every mode);
    ``ref_params``, ``ctrl_params``: the parameters that make this case; ``how``: what
    the controller does about the links, for the demo's closing lines.
    """

    def __init__(self, label: str, reference: type[Block], controller: type[Block],
                 how: str, reference_in_c: bool = True, ref_params: dict | None = None,
                 ctrl_params: dict | None = None):
        self.label, self.how = label, how
        self.reference, self.controller = reference, controller
        self.reference_in_c = reference_in_c
        self.ref_params, self.ctrl_params = dict(ref_params or {}), dict(ctrl_params or {})

    def sample_time(self, ctrl_params: dict | None = None) -> float | None:
        """The one communication step [s] the controller runs at (an LQG design's
        sample time), or None if it runs at any."""
        if not issubclass(self.controller, ArmLQGController):
            return None
        return self.controller(**{**self.ctrl_params, **(ctrl_params or {})}).design.dt


#: The demo's closed loops by their key (the prefix of their CSV columns), in the
#: order of its table and legend (module docstring)
CONTROLLERS = {
    "pd": DemoController(
        "joint PD", QuinticJointTrajectory, JointPDController,
        "measures the joints only, so the links keep swinging"),
    "shaped": DemoController(
        "PD + ZV shaper", ShapedQuinticTrajectory, JointPDController,
        "the reference no longer excites the 0.43 Hz link mode",
        ref_params={"move_time": 1.2}),
    "lqg": DemoController(
        "LQG", FlexibleArmReference, ArmLQGController,
        "measures the links' deflection and damps them", reference_in_c=False,
        ctrl_params={"reference": "model"}),
}


def _newest_source_mtime() -> float:
    newest = 0.0
    for package in EMBEDDED_PACKAGES:
        folder = Path(importlib.util.find_spec(package).origin).parent
        newest = max([newest] + [p.stat().st_mtime for p in folder.rglob("*")
                                 if p.suffix in (".py", ".c", ".h")])
    return newest


def ensure_fmu(model: str | type[Block], folder: str | Path, force: bool = False) -> Path:
    """Path of the FMU of ``model`` (a key of :data:`MODELS`, or a block class: its FMU
    named after it) in ``folder``, built if missing, older than the package sources, or
    if ``force``."""
    block, name = _block_and_name(model)
    return _ensure(Path(folder) / f"{name}.fmu", force, lambda path:
                   build_fmu(block, path, model_name=name))


def ensure_c_fmu(model: str | type[Block], folder: str | Path, force: bool = False) -> Path:
    """Path of the C-source FMU of ``model`` (as for :func:`ensure_fmu`, a block with a
    C form; model name with a ``C`` appended) in ``folder``, exported as
    :func:`ensure_fmu` builds: with the binary compiled with the package where its code
    has one (``export_c_fmu(compile="prebuilt")``, the demo's models as they run here),
    else compiled."""
    block, name = _block_and_name(model)
    return _ensure(Path(folder) / f"{name}C.fmu", force, lambda path:
                   export_c_fmu(block, path, model_name=name + "C", platforms=("linux64",),
                                compile="prebuilt"))


def _block_and_name(model: str | type[Block]) -> tuple[type[Block], str]:
    if not isinstance(model, str):
        return model, model.__name__
    if model not in MODELS:
        raise ValueError(f"unknown model {model!r}; accepted: {', '.join(MODELS)}")
    return MODELS[model]


def _ensure(path: Path, force: bool, make) -> Path:
    if force or not path.exists() or path.stat().st_mtime < _newest_source_mtime():
        logger.info("building %s (missing, or older than the sources)", path)
        path.parent.mkdir(parents=True, exist_ok=True)
        make(path)
    return path


def closed_loop_system(fmu_dir: str | Path | None = None, arm_params: dict | None = None,
                       ctrl_params: dict | None = None, ref_params: dict | None = None,
                       c_fmus: bool = False, controller: str = "pd") -> System:
    """The closed loop of ``controller`` (a key of :data:`CONTROLLERS`); with ``fmu_dir``
    the controller and the arm are FMUs built there (with ``c_fmus`` the reference too,
    all C-source FMUs, no Python inside, where the reference has a C form), without it
    all three are in-process blocks (same equations).  ``ref_params``, ``ctrl_params``
    are added to the case's own.  Wired as every arm loop is
    (:func:`controllers.evaluation.validation.arm_closed_loop`)."""
    return arm_closed_loop(*_components(fmu_dir, arm_params, ctrl_params, ref_params,
                                        c_fmus, controller))


def _components(fmu_dir, arm_params, ctrl_params, ref_params, c_fmus: bool,
                controller: str) -> tuple[Component, Component, Component]:
    """The controller, the reference and the arm of :func:`closed_loop_system`."""
    case = _case(controller)
    arm_params = dict(arm_params or {})
    ref_params = {**case.ref_params, **(ref_params or {})}
    ctrl_params = {**case.ctrl_params, **(ctrl_params or {})}
    if fmu_dir is not None and c_fmus and case.reference_in_c:
        ref = FMUComponent("ref", ensure_c_fmu(case.reference, fmu_dir),
                           parameters=ref_params)
    else:
        ref = BlockComponent("ref", case.reference(**ref_params))
    if fmu_dir is None:
        ctrl = BlockComponent("ctrl", case.controller(**ctrl_params))
        arm = BlockComponent("arm", FlexibleManipulatorBlock(**arm_params))
    else:
        ensure = ensure_c_fmu if c_fmus else ensure_fmu
        ctrl = FMUComponent("ctrl", ensure(case.controller, fmu_dir), parameters=ctrl_params)
        arm = FMUComponent("arm", ensure("manipulator", fmu_dir), parameters=arm_params)
    return ctrl, ref, arm


def _case(controller: str) -> DemoController:
    if controller not in CONTROLLERS:
        raise ValueError(f"controller {controller!r}: accepted: {', '.join(CONTROLLERS)}")
    return CONTROLLERS[controller]


def demo_metrics(result, ref_params: dict | None = None, controller: str = "pd") -> dict:
    """Figures of the closed-loop move of ``controller`` (a key of :data:`CONTROLLERS`;
    angles in rad, torques in N m, lengths in m): :func:`controllers.design.move_report`
    -- per joint i ``overshoot<i>``, ``settling_time<i>``, ``final_error<i>``,
    ``peak_tau<i>``; ``move_time`` [s] and ``residual_vibration`` [m], the project's one
    definition (module docstring), ``vibration_after_reference`` [m] (over the second
    after the reference ends at ``move_end`` [s]) -- and ``deflection_last_second`` [m],
    the largest end-effector deflection ``|e|`` over the record's last second: whether
    the vibration has died out by the end (the residual window, 1 s, is shorter than the
    period of the 0.43 Hz link mode, so a peak-to-peak size there would depend on the
    phase; the largest ``|e|`` does not)."""
    case = _case(controller)
    reference = case.reference(**{**case.ref_params, **(ref_params or {})})
    report = move_report(result, *reference_move(reference))
    t = np.asarray(result["time"])
    e = end_effector_deflection(result["arm.theta1"], result["arm.theta2"],
                                result["arm.x_tip"], result["arm.y_tip"])
    last = t >= t[-1] - 1.0
    return {**report, "deflection_last_second": float(np.hypot(*e[last].T).max())}


def combined_results(results: dict) -> TimeSeries:
    """One table of the loops' records ``{key: Result}`` run on the same time points:
    the time, then every column of each, named ``<key>.<column>`` (``pd.arm.theta1``),
    with its unit."""
    records = list(results.values())
    t = records[0].time
    for key, r in results.items():
        if len(r.time) != len(t) or not np.array_equal(r.time, t):
            raise ValueError(f"the record of {key!r} has other time points than the first")
    columns, units = {"time": t}, {}
    for key, r in results.items():
        for name in r.names[1:]:
            columns[f"{key}.{name}"] = r[name]
            units[f"{key}.{name}"] = r.unit(name)
    return TimeSeries.from_columns(columns, units)


def demo_figure(results: dict, title: str = "Two-link flexible arm, (0, 0) to (15, 10) "
                "deg: three controllers (co-simulation)"):
    """One figure of the loops' records ``{key: Result}`` (keys of
    :data:`CONTROLLERS`) against time [s]: joint angles [rad], the end effector's
    deflection from the rigid arm ``|e|`` [m] (:mod:`controllers.evaluation.validation`)
    and the joint torques [N·m]; a colour per controller, a line style per joint, one
    legend.  Returns the matplotlib figure (Agg canvas, pyplot untouched)."""
    # matplotlib is imported when a figure is asked for (docs/architecture.md)
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

    fig = Figure(figsize=(8, 9))
    FigureCanvasAgg(fig)
    ax = fig.subplots(3, 1, sharex=True)
    joint_style = {1: "-", 2: "--"}
    handles = []
    for (key, r), colour in zip(results.items(), ("C3", "C0", "C2", "C1", "C4")):
        for i, style in joint_style.items():
            ax[0].plot(r.time, r[f"arm.theta{i}"], colour, ls=style, lw=1.2)
            ax[2].plot(r.time, r[f"ctrl.tau{i}"], colour, ls=style, lw=1.0)
        e = end_effector_deflection(r["arm.theta1"], r["arm.theta2"], r["arm.x_tip"],
                                    r["arm.y_tip"])
        ax[1].plot(r.time, np.hypot(*e.T), colour, lw=1.0)
        handles.append(Line2D([], [], color=colour, label=CONTROLLERS[key].label))
    handles += [Line2D([], [], color="k", ls=style, label=f"joint {i}")
                for i, style in joint_style.items()]
    first = next(iter(results.values()))         # the units as the records give them
    ax[0].set_ylabel(axis_label("joint angle", first.unit("arm.theta1")))
    ax[1].set_ylabel(axis_label("end-effector deflection |e|", first.unit("arm.x_tip")))
    ax[2].set_ylabel(axis_label("joint torque", first.unit("ctrl.tau1")))
    ax[2].set_xlabel(axis_label("time", "s"))
    for a in ax:
        a.grid(True, alpha=0.3)
    fig.suptitle(title)
    fig.legend(handles=handles, loc="upper center", ncol=len(handles), fontsize=8,
               bbox_to_anchor=(0.5, 0.955))
    fig.tight_layout(rect=(0, 0, 1, 0.93))
    return fig


def plot_closed_loop(result, path: str | Path,
                     title: str = "Two-link flexible arm, joint PD + rigid feedforward "
                                  "(co-simulation)") -> Path:
    """PNG of one loop with joint angles and their references [°], tracking errors
    (reference - angle) [°], joint torques [N·m] and link tip deflections [cm] against
    time [s] (the examples' figures).  ``title``: say which controller and reference
    ran."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    t = result.time
    fig = Figure(figsize=(8, 10))
    FigureCanvasAgg(fig)
    ax = fig.subplots(4, 1, sharex=True)
    for i, c in ((1, "C0"), (2, "C1")):
        ref = np.degrees(result[f"ref.theta{i}_ref"])
        angle = np.degrees(result[f"arm.theta{i}"])
        # the reference wide and pale underneath, the angle thin on top: both visible
        ax[0].plot(t, ref, color=c, lw=5, alpha=0.3, label=f"theta{i} reference")
        ax[0].plot(t, angle, c, lw=1.2, label=f"theta{i}")
        ax[1].plot(t, ref - angle, c, label=f"theta{i} reference - theta{i}")
        ax[2].plot(t, result[f"ctrl.tau{i}"], c, label=f"tau{i}")
        ax[3].plot(t, 100 * result[f"arm.w{i}"], c, label=f"w{i}")
    ax[0].set_ylabel(axis_label("joint angle", "deg"))
    ax[1].set_ylabel(axis_label("tracking error", "deg"))
    ax[2].set_ylabel(axis_label("joint torque", "N.m"))
    ax[3].set_ylabel(axis_label("link tip deflection", "cm"))
    ax[3].set_xlabel(axis_label("time", "s"))
    for a in ax:
        a.grid(True, alpha=0.3)
        a.legend(loc="best", fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return Path(path)


def _runnable(controllers, step: float) -> tuple[list[str], dict[str, str]]:
    """The controllers that run at ``step`` [s], and why each other one does not."""
    run, left_out = [], {}
    for key in controllers:
        dt = _case(key).sample_time()
        if dt is not None and abs(step - dt) > 1e-9 * dt:
            left_out[key] = (f"its design is sampled at {dt:g} s, the run's step is "
                             f"{step:g} s (run with --step {dt:g})")
        else:
            run.append(key)
    return run, left_out


def run_demo(out_dir: str | Path = "results", stop_time: float = 5.0, step: float = 1e-3,
             method: str = "gauss-seidel", use_fmus: bool = True, verbose: bool = True,
             c_fmus: bool = True, progress: Callable[[float, float], Any] | None = None,
             controllers=tuple(CONTROLLERS)) -> dict:
    """Run the closed loop of each of ``controllers`` (keys of :data:`CONTROLLERS`, the
    three by default) for ``stop_time`` [s] at communication steps ``step`` [s], write
    ``results.csv`` and ``closed_loop.png`` into ``out_dir`` and return
    ``{"figures": {key: demo_metrics(...)}, "left_out": {key: why}, "results": {key:
    Result}, "wall_time": [s], "real_time_factor", "csv", "png"}``; a controller that cannot run at ``step`` (the
    LQG, sampled at its design's step) is left out and said why.  ``use_fmus``: the
    components as FMUs, with ``c_fmus`` C-source FMUs, else Python FMUs; without
    ``use_fmus`` in-process blocks (module docstring).  ``verbose``: print the table and
    what it says on stdout; ``progress(t, total)``: told how far the runs are, ``t``
    [s] counted over all of them (:meth:`fmu.cosim.master.Master.run`)."""
    for key in controllers:
        _case(key)
    keys, left_out = _runnable(controllers, step)
    if not keys:
        raise ValueError(f"no controller runs at steps of {step:g} s: "
                         + "; ".join(f"{k}: {why}" for k, why in left_out.items()))
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    fmu_dir = out / "fmus" if use_fmus else None
    loops = {k: _components(fmu_dir, None, None, None, c_fmus and use_fmus, k) for k in keys}
    # compile the arm's equations (C, cached per machine after the first run) before the
    # clock starts: the real-time factor is the simulation's, not the compiler's
    arm = FlexibleManipulator()
    arm.rhs(0.0, arm.initial_state())
    results, total = {}, len(keys) * stop_time
    t0 = time.perf_counter()
    for n, (key, (ctrl, ref, arm_component)) in enumerate(loops.items()):
        told = None if progress is None else (
            lambda t, stop, done=n * stop_time: progress(done + t, total))
        results[key] = closed_loop_move(ctrl, ref, stop_time=stop_time, step=step,
                                        method=method, progress=told, arm=arm_component)
    wall = time.perf_counter() - t0
    csv = combined_results(results).to_csv(out / "results.csv")
    fig = demo_figure(results)
    png = out / "closed_loop.png"
    fig.savefig(png, dpi=110)
    figures = {k: demo_metrics(r, controller=k) for k, r in results.items()}
    summary = {"figures": figures, "left_out": left_out, "results": results, "wall_time": wall,
               "real_time_factor": total / wall, "csv": str(csv), "png": str(png)}
    if verbose:
        mode = "blocks" if not use_fmus else "C FMUs" if c_fmus else "Python FMUs"
        print(f"{len(keys)} closed loops of the flexible arm, (0, 0) -> (15, 10) deg, each "
              f"{stop_time:g} s at {step:g} s ({method}, {mode}): wall {wall:.2f} s, "
              f"{total / wall:.2f}x real time; wrote {csv} and {png}")
        print("\n".join(demo_table(figures, left_out, stop_time)))
    return summary


#: The table's header: what each figure is, its one definition (module docstring)
TABLE_HEADER = (
    "  overshoot: the largest excursion past the target, % of the move, joint 1 / 2;",
    f"  settling: the time from which both joints stay within {100 * SETTLING_BAND:g} % "
    "of their move;",
    "  residual vibration: the end effector's peak-to-peak deflection from the rigid arm "
    f"over the {RESIDUAL_WINDOW:g} s after settling;",
    "  peak torque: the largest |torque|, joint 1 / 2.",
)


def _mm(x: float) -> str:
    return f"{1000 * x:.2f}" if math.isfinite(x) else "-"


def demo_table(figures: dict, left_out: dict | None = None,
               stop_time: float | None = None) -> list[str]:
    """The printed table of ``figures`` (``{key: demo_metrics(...)}``) and, last, what
    it says in plain words (:func:`demo_story`)."""
    lines = list(TABLE_HEADER)
    lines.append(f"  {'controller':<16}{'overshoot [%]':>16}{'settling [s]':>14}"
                 f"{'residual vibration [mm]':>26}{'peak torque [N·m]':>20}")
    for key, f in figures.items():
        settling = f"{f['move_time']:.3f}" if math.isfinite(f["move_time"]) else "not settled"
        lines.append(f"  {CONTROLLERS[key].label:<16}"
                     f"{100 * f['overshoot1']:>8.2f} / {100 * f['overshoot2']:<5.2f}"
                     f"{settling:>14}{_mm(f['residual_vibration']):>26}"
                     f"{f['peak_tau1']:>12.3f} / {f['peak_tau2']:.3f}")
    for key, why in (left_out or {}).items():
        lines.append(f"  {CONTROLLERS[key].label:<16}not run: {why}")
    return lines + demo_story(figures, stop_time)


def demo_story(figures: dict, stop_time: float | None = None) -> list[str]:
    """The table in plain words: per controller, from the most residual vibration to the
    least, what it leaves, whether that has died out by the end of the run, and why;
    then how many times less the best leaves than the worst.  A controller whose
    vibration was not measured (the record ends before the second after its joints
    settle) says so."""
    measured = {k: f for k, f in figures.items() if math.isfinite(f["residual_vibration"])}
    order = sorted(measured, key=lambda k: -measured[k]["residual_vibration"])
    lines = []
    for key in order:
        f, case = measured[key], CONTROLLERS[key]
        lines.append(f"  {case.label}: joints settled at {f['move_time']:.2f} s, then "
                     f"{_mm(f['residual_vibration'])} mm of end-effector vibration, still up "
                     f"to {_mm(f['deflection_last_second'])} mm off the rigid arm in the last "
                     f"second of the run: {case.how}.")
    for key in (k for k in figures if k not in measured):
        f = figures[key]
        settled = (f"settled at {f['move_time']:.3f} s" if math.isfinite(f["move_time"])
                   else f"not within {100 * SETTLING_BAND:g} % of the move by then")
        end = f" at {stop_time:g} s" if stop_time is not None else ""
        lines.append(f"  {CONTROLLERS[key].label}: residual end-effector vibration not "
                     f"measured: the run ends{end}, before the second after its joints "
                     f"settle ({settled}; a longer --stop, e.g. 5 s, measures it).")
    if len(order) > 1 and measured[order[-1]]["residual_vibration"] > 0.0:
        worst, best = measured[order[0]], measured[order[-1]]
        ratio = worst["residual_vibration"] / best["residual_vibration"]
        lines.append(f"  {CONTROLLERS[order[-1]].label} leaves {ratio:.0f} times less "
                     f"residual vibration than {CONTROLLERS[order[0]].label}.")
    return lines


if __name__ == "__main__":  # pragma: no cover
    run_demo()
