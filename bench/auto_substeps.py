"""What the arm's error-controlled stepping (substeps = 0, "auto") costs against a fixed
number of substeps, and what it buys (printed, never asserted).

    OPENBLAS_NUM_THREADS=1 python3 bench/auto_substeps.py [--stop 3.0] [--scales 1,10,100]

For the open-loop torques of docs/benchmarks.md §1 (``bang_bang_torque``, times ``scale``)
at a 1 ms communication step, per configuration (fixed 10 substeps, fixed 100, auto with
the default rtol = 1e-6, atol = 1e-9):

* wall time per communication step (``do_step`` only, best of ``--repeat`` runs);
* RK4 substeps per communication step, mean and largest (auto counts the trial
  solutions too: n + 2n per attempt);
* the largest local error of a step, in units of the default tolerance, against the
  same step with 4000 substeps from the same state (``--local``, first 200 steps; the
  issue's case is scale 100);
* theta1 at the end;

and the demo's closed loop (``flexcosim.demo``, in-process blocks, 3 s): its run time and
move figures with the arm at fixed 10 substeps and at auto, and the largest difference of
the arm's outputs between the two.
"""
from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

from flexcosim.demo import closed_loop_system, demo_metrics
from fmu.cosim.master import Master
from mbdcore.blocks import StepError
from mbdcore.models.manipulator import FlexibleManipulatorBlock, bang_bang_torque

H = 1e-3
CONFIGS = {"fixed 10": {"substeps": 10}, "fixed 100": {"substeps": 100}, "auto": {}}


def counted(params: dict) -> FlexibleManipulatorBlock:
    """The arm, counting every RK4 substep it takes (auto's trial solutions included,
    which the integrator's own count loses when auto restores it for the next trial)."""
    block = FlexibleManipulatorBlock(**params)
    block.substeps_taken = 0
    stepper = block.integrator.step_autonomous

    def step_autonomous(rhs, args, h, n=1):
        block.substeps_taken += int(n)
        return stepper(rhs, args, h, n)
    block.integrator.step_autonomous = step_autonomous
    return block


def run(params: dict, scale: float, stop: float) -> dict:
    block = counted(params)
    steps = int(round(stop / H))
    elapsed, t, done = 0.0, 0.0, 0
    try:
        for k in range(steps):
            tau1, tau2 = bang_bang_torque(t)
            block.set_inputs({"tau1": scale * tau1, "tau2": scale * tau2})
            start = time.perf_counter()
            block.do_step(t, H)
            elapsed += time.perf_counter() - start
            t, done = (k + 1) * H, k + 1
        failed = ""
    except StepError as exc:
        failed = str(exc)[:120]
    n = block.substeps_taken
    return {"us_per_step": 1e6 * elapsed / max(1, done), "substeps_per_step": n / max(1, done),
            "theta1": block.outputs()["theta1"], "t_end": t, "failed": failed}


def local_error(params: dict, scale: float, steps: int = 200) -> float:
    block, reference = FlexibleManipulatorBlock(**params), FlexibleManipulatorBlock(substeps=4000)
    worst, t = 0.0, 0.0
    for k in range(steps):
        tau1, tau2 = bang_bang_torque(t)
        for b in (block, reference):
            b.set_inputs({"tau1": scale * tau1, "tau2": scale * tau2})
        start = block.x.copy()
        block.do_step(t, H)
        reference.x, reference.time = start, t
        reference.do_step(t, H)
        err = np.abs(block.x - reference.x) / (1e-9 + 1e-6 * np.abs(reference.x))
        worst = max(worst, float(err.max()))
        t = (k + 1) * H
    return worst


def demo(params: dict) -> tuple[float, dict, object]:
    start = time.perf_counter()
    result = Master(closed_loop_system(arm_params=params), 1e-3).run(3.0)
    return time.perf_counter() - start, demo_metrics(result), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stop", type=float, default=3.0, help="simulated time [s]")
    parser.add_argument("--scales", default="1,10,100", help="torque scales, comma separated")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--local", action="store_true", help="also the local errors")
    args = parser.parse_args()
    warnings.simplefilter("ignore")          # the range warning at large torques
    for scale in (float(s) for s in args.scales.split(",")):
        print(f"torque x {scale:g} (open loop, {args.stop:g} s at {H:g} s)")
        for name, params in CONFIGS.items():
            runs = [run(params, scale, args.stop) for _ in range(args.repeat)]
            best = min(runs, key=lambda r: r["us_per_step"])
            line = (f"  {name:10s} {best['us_per_step']:8.1f} us/step "
                    f"{best['substeps_per_step']:8.1f} RK4 steps/step  "
                    f"theta1({best['t_end']:.3f} s) = {best['theta1']:.10g} rad")
            if args.local:
                line += f"  local error <= {local_error(params, scale):.3g} x tol"
            print(line + (f"  FAILED: {best['failed']}" if best["failed"] else ""))
    runs = {name: demo(CONFIGS[name]) for name in ("fixed 10", "auto")}
    print("demo closed loop (in-process blocks, 3 s at 1 ms)")
    for name, (seconds, figures, _) in runs.items():
        print(f"  {name:10s} {seconds:6.2f} s  move_time {figures['move_time']:.6f} s  "
              f"residual_vibration {figures['residual_vibration']:.6f} m")
    fixed, auto = runs["fixed 10"][2], runs["auto"][2]
    diff = max(float(np.max(np.abs(fixed[f"arm.{n}"] - auto[f"arm.{n}"])))
               for n in FlexibleManipulatorBlock.output_names())
    print(f"  largest difference of the arm's outputs, auto - fixed 10: {diff:.3g}")


if __name__ == "__main__":
    main()
