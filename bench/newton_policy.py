"""Benchmark of the implicit integrators' Newton policy (issue 12, item 2).

Three runs of generalized-alpha (GGL) with the default ``iteration="modified"``:

(a) the undamped slider-crank (tests/test_mbdcore/dae/test_index3_slider_crank.py),
    rho_inf = 1, h = 1e-3 s, 0-2 s;
(b) the hub-beam spin-up with an ANCF beam of 8 elements, Omega = 6 rad/s
    (mbdcore.models.mechanisms.hub_beam), rho_inf = 0.8, h = 2.5e-3 s, 0-5 s;
(c) the two-link arm with ANCF links of 4 elements under the bang-bang torques of load
    case 1a (tests/test_mbdcore/models/test_ancf_arm.py), rho_inf = 0.8, h = 2.5e-4 s, 0-0.3 s.

For each: CPU time (``time.process_time``, so the load of other processes on the
machine counts less than in wall time), Newton iterations, factorisations and Jacobian
(block) builds per step, and the largest difference of the final (q, v) from the same
run with full Newton (``iteration="newton"``: fresh matrix at every iteration), the
reference of the policy's correctness.  ``--save FILE`` writes the final states,
``--against FILE`` prints the difference from the states of another revision
(before/after).  Nothing is asserted.

    python bench/newton_policy.py                 # all three (a few minutes)
    python bench/newton_policy.py --case a        # one case
    python bench/newton_policy.py --no-reference  # skip the full-Newton runs
"""
from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")   # steadier timings (see tests/conftest)

import numpy as np  # noqa: E402

from mbdcore.dae.simulate import simulate  # noqa: E402
from mbdcore.models.manipulator import bang_bang_torque  # noqa: E402
from mbdcore.models.mechanisms import hub_beam, slider_crank, two_link_arm  # noqa: E402
from mbdcore.multibody.ancf import ANCFBeam  # noqa: E402


def crank():
    return slider_crank(damping=0.0), 2.0, 1e-3, {"rho_inf": 1.0}


def spin_up():
    s = hub_beam(lambda n, L, ra, ei, ea: ANCFBeam(n, (0.0, 0.0), (L, 0.0), 8, ra, ei, ea), 6.0)
    return s, 5.0, 2.5e-3, {"rho_inf": 0.8}


def arm():
    s = two_link_arm(lambda n, L, ra, ei, at: ANCFBeam(n, at, (at[0] + L, at[1]), 4, ra, ei,
                                                       1e4))
    inputs = lambda t: dict(zip(("tau1", "tau2"), bang_bang_torque(t)))
    return s, 0.3, 2.5e-4, {"rho_inf": 0.8, "inputs": inputs}


CASES = {"a": ("slider-crank, rho 1, h 1e-3, 2 s", crank),
         "b": ("ANCF spin-up 8 el., 6 rad/s, h 2.5e-3, 5 s", spin_up),
         "c": ("ANCF arm 4 el./link, h 2.5e-4, 0.3 s", arm)}


def run(make, iteration):
    system, t_end, h, options = make()
    t0 = time.process_time()
    r = simulate(system, t_end, h, "generalized-alpha", formulation="index3",
                 iteration=iteration, record_every=10 ** 9, **options)
    cpu = time.process_time() - t0
    return r, cpu


def per_step(stats, key):
    return stats.get(key, float("nan")) / max(1, stats["nsteps"])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--case", choices=sorted(CASES), action="append")
    ap.add_argument("--no-reference", action="store_true")
    ap.add_argument("--save")
    ap.add_argument("--against")
    args = ap.parse_args()
    other = dict(np.load(args.against)) if args.against else {}
    saved = {}
    print(f"{'case':>44} {'iteration':>9} {'CPU [s]':>8} {'its/step':>8} "
          f"{'fact/step':>9} {'builds/step':>11} {'fail':>4} {'|dq| ref':>9} "
          f"{'|dv| ref':>9} {'|dq| rev':>9} {'|dv| rev':>9}")
    for case in args.case or sorted(CASES):
        label, make = CASES[case]
        ref = None if args.no_reference else run(make, "newton")
        for iteration, (r, cpu) in (("modified", run(make, "modified")),
                                    *((("newton", ref),) if ref else ())):
            s = r.stats
            # before this change the modified Newton factorised at every iteration
            fact = s.get("factorizations", s["newton_iterations"])
            q, v = r.q[-1], r.v[-1]
            dq = dv = dq_o = dv_o = float("nan")
            if ref is not None:
                dq = np.abs(q - ref[0].q[-1]).max()
                dv = np.abs(v - ref[0].v[-1]).max()
            if f"{case}_{iteration}_q" in other:
                dq_o = np.abs(q - other[f"{case}_{iteration}_q"]).max()
                dv_o = np.abs(v - other[f"{case}_{iteration}_v"]).max()
            saved[f"{case}_{iteration}_q"], saved[f"{case}_{iteration}_v"] = q, v
            print(f"{label:>44} {iteration:>9} {cpu:8.2f} "
                  f"{per_step(s, 'newton_iterations'):8.3f} {fact / s['nsteps']:9.3f} "
                  f"{per_step(s, 'jacobian_evaluations'):11.4f} {s['failures']:4d} "
                  f"{dq:9.2e} {dv:9.2e} {dq_o:9.2e} {dv_o:9.2e}", flush=True)
    print("|dq| ref, |dv| ref: largest difference of the final q [m, rad], v [m/s, rad/s] "
          "from full Newton; |dq| rev, |dv| rev: from the run saved by --save")
    if args.save:
        np.savez(args.save, **saved)


if __name__ == "__main__":
    main()
