"""The main job: the two-link flexible arm, closed loop, under the co-simulation master.

Three components (docs/benchmarks.md §1, load case 1b):

* ``ref``  — quintic point-to-point reference (0, 0) -> (15 deg, 10 deg) in 2 s,
  a Python block;
* ``ctrl`` — joint PD with rigid-model feedforward and torque limits, an FMU;
* ``arm``  — the flexible arm (joint torques in, link states out), an FMU.

``run_demo`` builds the FMUs when they are missing or older than the sources, runs
3 s at a 1 ms communication step, writes ``results.csv`` and ``closed_loop.png`` and
returns the figures it prints: overshoot, settling time, peak torque and the residual
end-effector vibration (:mod:`controllers.design.validation`).
"""
from __future__ import annotations

import importlib.util
import logging
import math
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

from controllers.design.metrics import move_metrics
from controllers.design.validation import move_report
from controllers.laws.joint_pd import JointPDController
from controllers.laws.trajectory import QuinticJointTrajectory
from flexcosim.catalog import BUILD_MODELS, resolve
from fmu.cosim.components import BlockComponent
from fmu.cosim.fmu_component import FMUComponent
from fmu.cosim.master import Master
from fmu.cosim.system import System
from fmu.fmi.build import EMBEDDED_PACKAGES, build_fmu
from fmu.fmi.export_c import export_c_fmu
from mbdcore.models.manipulator import (
    JOINT_STATES,
    FlexibleManipulator,
    FlexibleManipulatorBlock,
)

__all__ = ["MODELS", "MEASURED", "ensure_fmu", "ensure_c_fmu", "closed_loop_system",
           "demo_metrics", "plot_closed_loop", "run_demo"]

#: name on the command line -> (block class, FMU model name): the built-in models of
#: ``flexcosim build`` (:data:`flexcosim.catalog.BUILD_MODELS`, where they are names)
MODELS = {name: (resolve(m.block), m.model_name) for name, m in BUILD_MODELS.items()}

#: What the joint PD controller measures: the joint states.
MEASURED = JOINT_STATES

#: What the demo is doing before its run (building FMUs), for the command line's stderr.
logger = logging.getLogger(__name__)


def _newest_source_mtime() -> float:
    newest = 0.0
    for package in EMBEDDED_PACKAGES:
        folder = Path(importlib.util.find_spec(package).origin).parent
        newest = max([newest] + [p.stat().st_mtime for p in folder.rglob("*")
                                 if p.suffix in (".py", ".c", ".h")])
    return newest


def ensure_fmu(model: str, folder: str | Path, force: bool = False) -> Path:
    """Path of the FMU of ``model`` (a key of :data:`MODELS`) in ``folder``, built if
    missing, older than the package sources, or if ``force``."""
    return _ensure(model, folder, force, "", lambda block, path, name:
                   build_fmu(block, path, model_name=name))


def ensure_c_fmu(model: str, folder: str | Path, force: bool = False) -> Path:
    """Path of the C-source FMU of ``model`` (a key of :data:`MODELS`; model name with a
    ``C`` appended) in ``folder``, exported as :func:`ensure_fmu` builds."""
    return _ensure(model, folder, force, "C", lambda block, path, name:
                   export_c_fmu(block, path, model_name=name))


def _ensure(model, folder, force, suffix, make) -> Path:
    if model not in MODELS:
        raise ValueError(f"unknown model {model!r}; accepted: {', '.join(MODELS)}")
    block, name = MODELS[model]
    path = Path(folder) / f"{name}{suffix}.fmu"
    if force or not path.exists() or path.stat().st_mtime < _newest_source_mtime():
        logger.info("building %s (missing, or older than the sources)", path)
        path.parent.mkdir(parents=True, exist_ok=True)
        make(block, path, name + suffix)
    return path


def closed_loop_system(fmu_dir: str | Path | None = None, arm_params: dict | None = None,
                       ctrl_params: dict | None = None, ref_params: dict | None = None,
                       c_fmus: bool = False) -> System:
    """The closed-loop system; with ``fmu_dir`` the controller and the arm are FMUs
    built there (with ``c_fmus`` the reference, the controller and the arm are C-source
    FMUs, no Python inside), without it all three are in-process blocks (same
    equations)."""
    arm_params = dict(arm_params or {})
    ctrl_params = dict(ctrl_params or {})
    ref = BlockComponent("ref", QuinticJointTrajectory(**(ref_params or {})))
    if fmu_dir is not None and c_fmus:
        ref = FMUComponent("ref", ensure_c_fmu("trajectory", fmu_dir),
                           parameters=dict(ref_params or {}))
        ctrl = FMUComponent("ctrl", ensure_c_fmu("joint-pd", fmu_dir), parameters=ctrl_params)
        arm = FMUComponent("arm", ensure_c_fmu("manipulator", fmu_dir), parameters=arm_params)
    elif fmu_dir is None:
        ctrl = BlockComponent("ctrl", JointPDController(**ctrl_params))
        arm = BlockComponent("arm", FlexibleManipulatorBlock(**arm_params))
    else:
        ctrl = FMUComponent("ctrl", ensure_fmu("joint-pd", fmu_dir), parameters=ctrl_params)
        arm = FMUComponent("arm", ensure_fmu("manipulator", fmu_dir), parameters=arm_params)
    connections = {f"ref.{n}": f"ctrl.{n}" for n in QuinticJointTrajectory.output_names()}
    connections.update({f"arm.{n}": f"ctrl.{n}" for n in MEASURED})
    connections.update({"ctrl.tau1": "arm.tau1", "ctrl.tau2": "arm.tau2"})
    return System([ref, ctrl, arm], connections)


def demo_metrics(result, ref_params: dict | None = None) -> dict:
    """Figures of the closed-loop move (angles in rad, torques in N m, lengths in m):
    per joint i the :func:`~controllers.design.metrics.move_metrics` figures with suffix
    i and ``peak_tau<i>`` [N m]; ``move_time`` [s] and ``residual_vibration`` [m], the
    project's one definition (:func:`controllers.design.validation.move_report`: the
    end effector's peak-to-peak deflection over the second after the joints settle),
    and ``vibration_after_reference`` [m] (over the second after the reference ends)."""
    ref = QuinticJointTrajectory(**(ref_params or {})).params
    start = (ref["theta1_start"], ref["theta2_start"])
    target = (ref["theta1_end"], ref["theta2_end"])
    t = result.time
    report = move_report(result, ref["start_time"] + ref["move_time"], start, target)
    out = {k: report[k] for k in ("move_time", "residual_vibration",
                                  "vibration_after_reference")}
    for i in (1, 2):
        m = move_metrics(t, result[f"arm.theta{i}"], start[i - 1], target[i - 1])
        out.update({f"{k}{i}": v for k, v in m.items()})
        out[f"peak_tau{i}"] = report[f"peak_tau{i}"]
    return out


def plot_closed_loop(result, path: str | Path,
                     title: str = "Two-link flexible arm, joint PD + rigid feedforward "
                                  "(co-simulation)") -> Path:
    """PNG with joint angles and their references [deg], tracking errors (reference -
    angle) [deg], joint torques [N m] and link tip deflections [cm] against time [s].
    ``title``: say which controller and reference ran."""
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
    ax[0].set_ylabel("joint angle [deg]")
    ax[1].set_ylabel("tracking error [deg]")
    ax[2].set_ylabel("joint torque [N m]")
    ax[3].set_ylabel("link tip deflection [cm]")
    ax[3].set_xlabel("time [s]")
    for a in ax:
        a.grid(True, alpha=0.3)
        a.legend(loc="best", fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return Path(path)


def run_demo(out_dir: str | Path = "results", stop_time: float = 3.0, step: float = 1e-3,
             method: str = "gauss-seidel", use_fmus: bool = True, verbose: bool = True,
             c_fmus: bool = False, progress: Callable[[float, float], Any] | None = None) -> dict:
    """Run the closed-loop case, write ``results.csv`` and ``closed_loop.png`` into
    ``out_dir`` and return the metrics (plus wall time [s] and real-time factor); with
    ``c_fmus`` the three components are C-source FMUs.  ``verbose``: print the figures
    on stdout; ``progress(t, stop_time)``: told how far the run is
    (:meth:`fmu.cosim.master.Master.run`)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    system = closed_loop_system(out / "fmus" if use_fmus or c_fmus else None, c_fmus=c_fmus)
    master = Master(system, step, method=method)
    # compile the arm's equations (C, cached per machine after the first run) before the
    # clock starts: the real-time factor is the simulation's, not the compiler's
    arm = FlexibleManipulator()
    arm.rhs(0.0, arm.initial_state())
    t0 = time.perf_counter()
    result = master.run(stop_time, progress=progress)
    wall = time.perf_counter() - t0
    csv = result.to_csv(out / "results.csv")
    png = plot_closed_loop(result, out / "closed_loop.png")
    figures = demo_metrics(result)
    figures.update(wall_time=wall, real_time_factor=stop_time / wall)
    if verbose:
        print(f"closed loop, {stop_time:g} s at {step:g} s ({method}, "
              f"{'C FMUs' if c_fmus else 'FMUs' if use_fmus else 'blocks'}): wall {wall:.2f} s, "
              f"{stop_time / wall:.2f}x real time")
        for i, target in ((1, 15.0), (2, 10.0)):
            print(f"  joint {i} -> {target:g} deg: overshoot {100 * figures[f'overshoot{i}']:.2f} %, "
                  f"settling (2 %) {figures[f'settling_time{i}']:.3f} s, "
                  f"final error {100 * figures[f'final_error{i}']:+.2f} %, "
                  f"peak torque {figures[f'peak_tau{i}']:.3f} N m")
        if math.isfinite(figures["residual_vibration"]):
            print(f"  joints settled (2 %) at {figures['move_time']:.3f} s, residual "
                  f"end-effector vibration (p-p over the second after that) "
                  f"{1000 * figures['residual_vibration']:.2f} mm")
        else:
            print(f"  residual end-effector vibration not measured: the run ends at "
                  f"{stop_time:g} s, before the second after the joints settle "
                  f"(joints settled at {figures['move_time']:.3f} s; a longer --stop, "
                  f"e.g. 3 s, measures it)")
        print(f"  wrote {csv} and {png}")
    figures.update(csv=str(csv), png=str(png))
    return figures


if __name__ == "__main__":  # pragma: no cover
    run_demo()
