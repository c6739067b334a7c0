"""Benchmark of the two-link flexible arm (issue: first complete slice).

Prints, for the open-loop case of docs/benchmarks.md §1 (load case 1a: 1.2 s at h = 1e-4 s):
wall time with Gill, Treanor and classical RK4, the whole run in one C call (the torques
a PiecewiseInput sampled in C) next to the Python-driven loop (a Python call per step) in
the same run, against the computing times that
Yan & Al Dmour (2022; docs/benchmarks.md §1, §8.1) report for their two-link flexible arm
(47 s fixed-step Treanor, 2 min 56 s Gill), and the real-time factor of the
closed-loop demo's joint PD loop (3 s at 1 ms) with Python FMUs, with C-source FMUs and with in-process
blocks.

    python bench/manipulator.py [--open-loop]     (--open-loop: without the demo)
"""
from __future__ import annotations

import sys
import tempfile
import time

import numpy as np

from flexcosim.demo import run_demo
from mbdcore.models.manipulator import BANG_BANG_TORQUE, FlexibleManipulator, bang_bang_torque

#: Computing times [s] at h = 1e-4 s published by Yan & Al Dmour (2022) for their two-link
#: flexible arm (docs/benchmarks.md §1, load case 1a); hardware not stated.
SEED_SECONDS = {"gill": 176.0, "treanor": 47.0}


def open_loop(method: str, schedule, h: float = 1e-4,
              repeats: int = 3) -> tuple[float, float, np.ndarray]:
    """Best wall time and best CPU time of this process [s] of load case 1a with the
    torques ``schedule``, and the final state (CPU time: on a shared machine the wall
    time also counts the waits for a core)."""
    arm = FlexibleManipulator()
    arm.simulate(schedule, 10 * h, h, method=method)  # warm-up
    best, best_cpu = np.inf, np.inf
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        _, x = arm.simulate(schedule, 1.2, h, method=method)
        best = min(best, time.perf_counter() - t0)
        best_cpu = min(best_cpu, time.process_time() - c0)
    return best, best_cpu, x[-1]


def python_driven(t: float) -> tuple[float, float]:
    """The bang-bang torques as a plain function: integrate_held's Python loop, a Python
    call per step to sample them and to record."""
    return bang_bang_torque(t)


def rhs_seconds(calls: int = 48000, repeats: int = 3, **params) -> float:
    """Best CPU time [s] of one evaluation of the compiled right-hand side of the arm of
    ``params``, timed over ``arm_advance`` (RK4, 100 evaluations a call, no Python
    between them)."""
    arm = FlexibleManipulator(**params)
    x0, register = arm.initial_state(), np.zeros(2 * arm.n_dof)
    best = np.inf
    for _ in range(repeats):
        t0 = time.process_time()
        for _ in range(calls // 100):
            arm.kernel.lib.arm_advance(arm.kernel.table, x0.copy(), register, 0.2, 0.05,
                                       1e-4, 25, 0, None)
        best = min(best, time.process_time() - t0)
    return best / calls


def main() -> None:
    print("open-loop case, 1.2 s at h = 1e-4 s (12 000 steps), best of 3")
    print("  compiled: the whole run in one C call (BANG_BANG_TORQUE sampled in C, arm_run);")
    print("  Python-driven: a Python call per step (the torque function, step_autonomous)")
    print(f"{'method':>8} {'compiled [s]':>12} {'Python [s]':>10} {'speed-up':>8} "
          f"{'CPU: compiled':>13} {'Python':>7} {'paper [s]':>9} {'vs paper':>8}  "
          f"theta1(1.2) [rad]  |compiled - Python|")
    finals = {}
    for method in ("gill", "treanor", "rk4"):
        wall, cpu, x = open_loop(method, BANG_BANG_TORQUE)
        wall_py, cpu_py, x_py = open_loop(method, python_driven)
        finals[method] = x
        seed = SEED_SECONDS.get(method)
        ratio = f"{seed / wall:8.0f}" if seed else f"{'-':>8}"
        print(f"{method:>8} {wall:12.4f} {wall_py:10.4f} {wall_py / wall:8.2f} "
              f"{cpu:13.4f} {cpu_py:7.4f} {seed or float('nan'):9.0f} {ratio}  "
              f"{x[0]:.12f}  {np.abs(x - x_py).max():.1e}")
    print(f"max |gill - treanor| at 1.2 s: {np.abs(finals['gill'] - finals['treanor']).max():.2e}")
    for kinematics in ("exact", "second-order"):
        per_call = rhs_seconds(kinematics=kinematics)
        print(f"the arm's right-hand side alone (arm_rhs, 4 a step), {kinematics} kinematics, "
              f"CPU: {per_call * 1e6:.2f} us a call, {per_call * 48000:.3f} s for the run's "
              f"48 000 calls")
    print("  (issue 23's target for the exact kinematics: the run in 0.02 s, 0.42 us a call)")
    if "--open-loop" in sys.argv[1:]:
        return

    print("\nclosed-loop demo, its joint PD loop, 3 s at 1 ms communication step")
    # the one loop of the demo's first versions, so that the figures compare with theirs
    pd = {"verbose": False, "stop_time": 3.0, "controllers": ("pd",)}
    with tempfile.TemporaryDirectory() as tmp:
        run_demo(tmp, **pd)  # builds the FMUs, warms up
        run_demo(tmp, c_fmus=False, **pd)
        for label, kwargs in (("Python FMUs", {"c_fmus": False}), ("C FMUs", {}),
                              ("blocks", {"use_fmus": False})):
            fig = run_demo(tmp, **pd, **kwargs)
            print(f"  {label:>11}: wall {fig['wall_time']:.2f} s, "
                  f"real-time factor {fig['real_time_factor']:.2f}")


if __name__ == "__main__":
    main()
