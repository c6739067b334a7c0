"""Ring truss (issue 14): cost per implicit step against the number of bays, printed, not
asserted (docs/ring_truss.md, "Cost").

    python3 bench/ring_truss.py [--quick] [--steps K]

For N = 4, 6, 12, 24, 48 bays: the geared truss without drive (rigid bars, joints,
gears; one hinge driven from 1.0 rad by a cosine ramp), K generalized-alpha steps of
h = 10 ms on the sparse path; printed: coordinates, kept constraint rows, build time
(redundancy check included), wall time per step, Newton iterations per step, and the
log-log exponent of the cost per step in N.  ``--quick``: N = 4, 6 and 12 only.
"""
from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")   # steadier timings (see tests/conftest)

import numpy as np  # noqa: E402

from mbdcore.dae.simulate import simulate  # noqa: E402
from mbdcore.models.ring_truss import (  # noqa: E402
    add_deployment_driver,
    ring_truss,
    smooth_deployment_motion,
)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--steps", type=int, default=10)
    args = ap.parse_args()
    sizes = (4, 6, 12) if args.quick else (4, 6, 12, 24, 48)
    h = 0.01
    rows = []
    print(f"{'N':>4} {'coords':>7} {'rows':>6} {'build [s]':>10} {'per step [s]':>13} "
          f"{'Newton it./step':>16}")
    for n in sizes:
        t0 = time.perf_counter()
        truss = ring_truss(n_bays=n, drive=False, latch=False, folded_angle=1.0)
        add_deployment_driver(truss, smooth_deployment_motion(1.0, 1.5, 1.0))
        m = truss.system.m
        build = time.perf_counter() - t0
        t0 = time.perf_counter()
        r = simulate(truss.system, args.steps * h, h, "generalized-alpha", sparse=True)
        per_step = (time.perf_counter() - t0) / args.steps
        it_text = f"{r.stats.get('iterations_per_step', float('nan')):.1f}"
        print(f"{n:>4} {truss.system.n:>7} {m:>6} {build:>10.2f} {per_step:>13.3f} {it_text:>16}")
        rows.append((n, per_step))
    ns, cost = np.array(rows).T
    slope = np.polyfit(np.log(ns), np.log(cost), 1)[0]
    print(f"cost per step ~ N^{slope:.2f} (log-log fit over N = {int(ns[0])} ... {int(ns[-1])})")
    if 24 in ns:
        print("projected: the source paper's case, 500 s of deployment at h = 1e-4 s, "
              f"for N = 24: {5e6 * float(np.interp(24, ns, cost)) / 3600:.0f} h at this cost "
              "per step")


if __name__ == "__main__":
    main()
