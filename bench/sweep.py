"""Cases per second of a gain sweep on 1 and 2 worker processes, side by side in one run
(printed, never asserted).

    OPENBLAS_NUM_THREADS=1 python3 bench/sweep.py [--cases 8] [--workers 1,2]
                                                  [--deployments]

The case is the arm's point-to-point move under joint PD (docs/benchmarks.md §1,
``controllers.design.tuning.evaluate_move``: the 2 s quintic, 1 ms communication step,
recorded 4 s) with a gain pair (kp1, kd1) from a grid, in-process blocks.  Per worker
count: the wall time of the whole sweep (the pool's start included), the CPU time of this
process and its workers, cases per second, the speed-up over one worker and whether the
results equal those of one worker bit for bit (the wall time a deployment case reports
aside).  ``--deployments``: the cases are deployments of the 4-bay ring truss instead
(``mbdcore.models.truss_deployment.deployment_case``: from 1.45 rad to latched, 1.36 s at
h = 0.02 s, the rate set-point from a grid), a study of deployment scenarios.  One case is run first to warm up (imports, the compiled kernels) and timed alone:
that is the CPU a case needs.  On a machine shared with other work the speed-up falls
short of the worker count by the share of the cores the others take.
"""
from __future__ import annotations

import argparse
import itertools
import os
import time

from controllers.design.tuning import evaluate_move
from mbdcore.models.truss_deployment import deployment_case
from mbdcore.sweep import sweep


def cases(n: int) -> list[dict]:
    """n gain pairs around the PD's defaults (kp1 200 N m/rad, kd1 100 N m s/rad)."""
    grid = itertools.product((150.0, 200.0, 300.0, 400.0), (60.0, 100.0, 140.0, 180.0))
    return [{"ctrl": {"kp1": kp, "kd1": kd}} for kp, kd in itertools.islice(grid, n)]


def deployment_cases(n: int) -> list[dict]:
    """n deployments of the 4-bay truss from 1.45 rad, the rate set-point 0.04 to
    0.075 m/s."""
    return [{"n_bays": 4, "folded_angle": 1.45, "stop": 1.36, "rate": 0.04 + 0.005 * k}
            for k in range(n)]


def _same(results) -> str:
    """The results without what differs from run to run (a deployment's wall time)."""
    return repr([{k: v for k, v in r.items() if k != "wall_time"} for r in results])


def _cpu() -> float:
    """CPU time [s] of this process and of its children that have ended (the workers,
    once the sweep's pool is shut down)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=8, help="cases per sweep (default 8, "
                        "at most 16)")
    parser.add_argument("--workers", default="1,2", help="worker counts (default 1,2)")
    parser.add_argument("--deployments", action="store_true",
                        help="deployments of the 4-bay ring truss as the cases")
    args = parser.parse_args()
    if args.deployments:
        run, todo = deployment_case, deployment_cases(args.cases)
        what = "deployments of the 4-bay ring truss (1.36 s at 20 ms, rate grid)"
    else:
        run, todo = evaluate_move, cases(args.cases)
        what = "cases of the arm's PD move (4 s at 1 ms, kp1/kd1 grid)"
    t0 = time.perf_counter()
    run(todo[0])
    print(f"{len(todo)} {what}; one case alone {time.perf_counter() - t0:.2f} s; "
          f"{os.cpu_count()} CPUs")
    print(f"  {'workers':>7s}  {'wall [s]':>8s}  {'CPU [s]':>7s}  {'cases/s':>7s}  "
          f"{'speed-up':>8s}  same results as 1 worker")
    reference, base = None, None
    for workers in (int(w) for w in args.workers.split(",")):
        t0, cpu0 = time.perf_counter(), _cpu()
        results = sweep(run, todo, workers=workers)
        wall, cpu = time.perf_counter() - t0, _cpu() - cpu0
        rate = len(todo) / wall
        same = _same(results) if args.deployments else repr(results)
        reference = reference if reference is not None else same
        base = base if base is not None else rate
        print(f"  {workers:7d}  {wall:8.2f}  {cpu:7.2f}  {rate:7.2f}  {rate / base:8.2f}  "
              f"{'yes' if same == reference else 'NO'}")


if __name__ == "__main__":
    main()
