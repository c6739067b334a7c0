"""Benchmark of the two-link flexible arm (issue: first complete slice).

Prints, for the open-loop case of docs/benchmarks.md §1 (load case 1a: 1.2 s at h = 1e-4 s):
wall time with Gill, Treanor and classical RK4 against the computing times that
Yan & Al Dmour (2022; docs/benchmarks.md §1, §8.1) report for their two-link flexible arm
(47 s fixed-step Treanor, 2 min 56 s Gill), and the real-time factor of the
closed-loop demo (3 s at 1 ms) with Python FMUs, with C-source FMUs and with in-process
blocks.

    python bench/manipulator.py
"""
from __future__ import annotations

import tempfile
import time

import numpy as np

from flexcosim.demo import run_demo
from mbdcore.models.manipulator import FlexibleManipulator, bang_bang_torque

#: Computing times [s] at h = 1e-4 s published by Yan & Al Dmour (2022) for their two-link
#: flexible arm (docs/benchmarks.md §1, load case 1a); hardware not stated.
SEED_SECONDS = {"gill": 176.0, "treanor": 47.0}


def open_loop(method: str, h: float = 1e-4, repeats: int = 3) -> tuple[float, np.ndarray]:
    arm = FlexibleManipulator()
    arm.simulate(bang_bang_torque, 10 * h, h, method=method)  # JIT warm-up
    best = np.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        _, x = arm.simulate(bang_bang_torque, 1.2, h, method=method)
        best = min(best, time.perf_counter() - t0)
    return best, x[-1]


def main() -> None:
    print("open-loop case, 1.2 s at h = 1e-4 s (12 000 steps), best of 3")
    print(f"{'method':>8} {'wall [s]':>9} {'paper [s]':>9} {'speed-up':>9}  theta1(1.2) [rad]")
    finals = {}
    for method in ("gill", "treanor", "rk4"):
        wall, x = open_loop(method)
        finals[method] = x
        seed = SEED_SECONDS.get(method)
        ratio = f"{seed / wall:9.0f}" if seed else f"{'-':>9}"
        print(f"{method:>8} {wall:9.3f} {seed or float('nan'):9.0f} {ratio}  {x[0]:.12f}")
    print(f"max |gill - treanor| at 1.2 s: {np.abs(finals['gill'] - finals['treanor']).max():.2e}")

    print("\nclosed-loop demo, 3 s at 1 ms communication step")
    with tempfile.TemporaryDirectory() as tmp:
        run_demo(tmp, verbose=False)  # builds the FMUs, warms up
        run_demo(tmp, verbose=False, c_fmus=True)
        for label, kwargs in (("Python FMUs", {}), ("C FMUs", {"c_fmus": True}),
                              ("blocks", {"use_fmus": False})):
            fig = run_demo(tmp, verbose=False, **kwargs)
            print(f"  {label:>11}: wall {fig['wall_time']:.2f} s, "
                  f"real-time factor {fig['real_time_factor']:.2f}")


if __name__ == "__main__":
    main()
