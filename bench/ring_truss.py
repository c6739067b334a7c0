"""Ring truss (issue 14): cost per implicit step against the number of bays, printed, not
asserted (docs/ring_truss.md, "Cost").

    python3 bench/ring_truss.py [--quick] [--steps K]
                                [--net | --deploy-net [--kevlar] | --redundancy]

For N = 4, 6, 12, 24, 48 bays: the geared truss without drive (rigid bars, joints,
gears; one hinge driven from 1.0 rad by a cosine ramp), K generalized-alpha steps of
h = 10 ms on the sparse path, with the engine's default (modified Newton, geometric
terms of the Newton matrix differenced per joint) and with full Newton without the
geometric terms; printed: coordinates, kept constraint rows, build time (redundancy
check included), the peak memory of building it and taking two steps (traced in a
separate run), wall time per step and Newton iterations per step of both, and the
log-log exponents of the cost per step in N.  ``--quick``: N = 4, 6 and 12 only.

``--net``: instead, the deployed truss with its cable net (1 ring, tension-only ANCF
cables of 2 elements, latches, no drive) in its form equilibrium, K steps of h = 1 ms
with full Newton without the geometric terms: cables, cable elements, coordinates,
wall time per step and Newton iterations per step, for N = 4, 6, 12 (4, 6 with
``--quick``).

``--deploy-net``: the final part of a deployment with the net slack at the start
(docs/ring_truss.md, "The net during deployment"): 4 bays from 1.0 rad, one hinge
driven by the cosine ramp to pi/2 in 1.5 s, then 0.5 s held (latches on), the net of 1
ring of a soft cord (EA = 2e3 N, damping time 1e-2 s), h = 1 ms; printed every 0.1 s:
deployment ratio, largest and smallest tension, largest difference from the form's
pretension.  About 3 to 6 minutes.  With ``--quick``: the short final part, 4 bays from
1.1 rad, the ramp in 0.3 s, 0.1 s held, 1 element per cable, h = 2 ms (about a minute;
once a test, out of the suite for its time).

``--deploy-net --kevlar``: the same with the Kevlar cord (EA = 8.8e4 N, 1.13 g/m, the net's
defaults; damping time 1e-3 s, 1 element per cable): 4 bays from 1.1 rad, the ramp in
0.6 s, 0.3 s held (``--quick``: from 1.3 rad, 0.3 s, 0.1 s), error-controlled
generalized-alpha (``adaptive=True``, rtol = 1e-3, atol = 1e-5 m, docs/step_control.md)
on a 10 ms output grid; printed every 10 s of wall clock: time reached, accepted and
rejected steps, Newton rejections, smallest step, iterations per step, then the table as
above (docs/ring_truss.md, "The net during deployment").  Long: the full case took 30
minutes of wall clock on the shared, overloaded 2-core machine (load 9-10; about 5 minutes
of CPU by its share), 2730 steps.

``--redundancy``: the check of dependent constraint rows (``System.check_redundancy``:
projection, G of all rows, factorisation) at full deployment, the geared truss of N =
12, 24, 48 bays (12, 24 with ``--quick``), with the dense pivoted QR and the sparse
row-by-row Givens QR: dependent rows found by each, wall time (best of 3) and the peak
memory traced by tracemalloc in a separate run.  Then, along the deployment of the 12-bay
truss (bay angle 0.3 rad to pi/2; 4 to 6 with ``--quick``), geared and ungeared: the
rank of all rows (as n - rank, the mobility), of the rows kept and their smallest pivot
(``redundancy.rank_along``): where the rank changes.
"""
from __future__ import annotations

import argparse
import os
import time
import tracemalloc

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")   # steadier timings (see tests/conftest)

import numpy as np  # noqa: E402

from mbdcore.dae.methods import make_method  # noqa: E402
from mbdcore.dae.simulate import simulate  # noqa: E402
from mbdcore.models.cable_net import add_cable_net  # noqa: E402
from mbdcore.multibody.redundancy import rank_along  # noqa: E402
from mbdcore.models.ring_truss import (  # noqa: E402
    add_deployment_driver,
    ring_truss,
    smooth_deployment_motion,
)


def net_cost(sizes, steps: int) -> None:
    """Cost per step of the deployed truss with its cable net (module docstring)."""
    h = 1e-3
    print(f"{'N':>4} {'cables':>7} {'elements':>9} {'coords':>7} {'step [s]':>9} {'it.':>5}")
    for n in sizes:
        truss = ring_truss(n_bays=n, drive=False, latch=True, folded_angle=np.pi / 2)
        net = add_cable_net(truss, net_rings=1, cable_damping=1e-4)
        t0 = time.perf_counter()
        r = simulate(truss.system, steps * h, h, "generalized-alpha", sparse=True, rho_inf=0.6,
                     q0=net.coordinates(), iteration="newton", geometric_stiffness=False)
        per_step = (time.perf_counter() - t0) / steps
        elements = sum(c.n_elements for c in net.cables)
        print(f"{n:>4} {len(net.cables):>7} {elements:>9} {truss.system.n:>7} "
              f"{per_step:>9.3f} {r.stats['iterations_per_step']:>5.1f}")


def deploy_net(quick: bool = False, kevlar: bool = False) -> None:
    """The final part of a deployment with a slack net (module docstring); ``quick``:
    the short one (from 1.1 rad, 0.3 s ramp, 0.1 s held, 1 element per cable, 2 ms);
    ``kevlar``: the Kevlar cord, error-controlled steps."""
    if kevlar:
        theta0, duration, settle, h, elements = ((1.3, 0.3, 0.1, 1e-2, 1) if quick
                                                 else (1.1, 0.6, 0.3, 1e-2, 1))
        cord = {"cable_damping": 1e-3}
    else:
        theta0, duration, settle, h, elements = ((1.1, 0.3, 0.1, 2e-3, 1) if quick
                                                 else (1.0, 1.5, 0.5, 1e-3, 2))
        cord = {"cable_ea": 2e3, "cable_damping": 1e-2}
    truss = ring_truss(n_bays=4, folded_angle=theta0, drive=False, latch=True)
    net = add_cable_net(truss, net_rings=1, cable_elements=elements, **cord)
    q0 = net.coordinates()
    add_deployment_driver(truss, smooth_deployment_motion(theta0, np.pi / 2, duration))
    adaptive = {"adaptive": True, "rtol": 1e-3, "atol": 1e-5} if kevlar else {}
    integ = make_method("generalized-alpha", sparse=True, rho_inf=0.6, iteration="newton",
                        geometric_stiffness=False, **adaptive)
    t0 = time.perf_counter()

    def progress(t, stop):
        st = integ.stats()
        print(f"t = {t:.3f} s ({time.perf_counter() - t0:.0f} s): "
              f"{st.get('accepted_steps', st['nsteps'])} steps, "
              f"{st.get('rejected_steps', 0)} rejected, "
              f"{st.get('newton_rejections', st['step_retries'])} Newton rejections, "
              f"smallest {st.get('h_smallest', h):.2e} s, "
              f"{st['iterations_per_step']:.1f} iterations per step", flush=True)
    r = simulate(truss.system, duration + settle, h, integ, q0=q0,
                 record_every=int(round(0.1 / h)), progress=progress, progress_interval=10.0)
    print(f"{time.perf_counter() - t0:.0f} s, "
          f"{r.stats['iterations_per_step']:.2f} iterations and "
          f"{r.stats['switch_rounds']} active-set rounds in {r.stats['nsteps']} steps")
    form = net.form.tension
    print(f"{'t [s]':>6} {'ratio':>7} {'max T [N]':>10} {'min T [N]':>10} {'|T - form| [N]':>15}")
    for t, q in zip(r.t, r.q):
        tension = net.tensions(q)
        print(f"{t:>6.2f} {truss.deployment_ratio(q):>7.4f} {tension.max():>10.3f} "
              f"{tension.min():>10.3f} {np.abs(tension - form).max():>15.3e}")
    print(f"form: {form.min():.3f} .. {form.max():.3f} N")


def peak_memory(n_bays: int, h: float, steps: int = 2) -> float:
    """Peak memory [MB] traced (tracemalloc: Python objects and numpy arrays) while
    building the geared truss of ``n_bays`` and taking ``steps`` default
    generalized-alpha steps: a separate run, since tracing slows the timed ones."""
    tracemalloc.start()
    try:
        truss = ring_truss(n_bays=n_bays, drive=False, latch=False, folded_angle=1.0)
        add_deployment_driver(truss, smooth_deployment_motion(1.0, 1.5, 1.0))
        simulate(truss.system, steps * h, h, "generalized-alpha", sparse=True)
        return tracemalloc.get_traced_memory()[1] / 1e6
    finally:
        tracemalloc.stop()


def redundancy_cost(sizes) -> None:
    """Dense against sparse redundancy check (module docstring)."""
    print(f"{'N':>4} {'coords':>7} {'rows':>6} {'method':>7} {'dependent':>10} "
          f"{'time [s]':>9} {'memory [MB]':>12}")
    for n in sizes:
        truss = ring_truss(n_bays=n, drive=False, latch=False, folded_angle=1.0)
        system, q = truss.system, truss.coordinates(np.pi / 2)
        for method in ("dense", "sparse"):
            times = []
            for _ in range(3):
                t0 = time.perf_counter()
                found = system.check_redundancy(0.0, q, method=method)
                times.append(time.perf_counter() - t0)
            tracemalloc.start()
            try:
                system.check_redundancy(0.0, q, method=method)
                memory = tracemalloc.get_traced_memory()[1] / 1e6
            finally:
                tracemalloc.stop()
            print(f"{n:>4} {system.n:>7} {system.m_all:>6} {method:>7} {len(found):>10} "
                  f"{min(times):>9.3f} {memory:>12.1f}")



def rank_path(n_bays: int) -> None:
    """Rank of the rows along the deployment (module docstring, ``--redundancy``)."""
    angles = (0.3, 0.6, 0.9, 1.2, 1.4, 1.5, 1.55, 1.57, np.pi / 2)
    print(f"\n{n_bays} bays: n - rank of all rows (mobility) / kept rows of full rank / "
          "their smallest pivot over the largest row norm")
    print(f"{'angle [rad]':>12} " + " ".join(f"{a:>8.4f}" for a in angles))
    for gears in (True, False):
        truss = ring_truss(n_bays=n_bays, drive=False, latch=False, folded_angle=1.0,
                           gears=gears)
        profile = rank_along(truss.system, [truss.coordinates(a) for a in angles])
        label = "geared" if gears else "ungeared"
        print(f"{label:>12} " + " ".join(f"{truss.system.n - every:>8d}"
                                         for every, _, _ in profile))
        print(f"{'':>12} " + " ".join(f"{'yes' if kept == truss.system.m else 'NO':>8}"
                                      for _, kept, _ in profile))
        print(f"{'':>12} " + " ".join(f"{pivot:>8.1e}" for _, _, pivot in profile))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--net", action="store_true")
    ap.add_argument("--deploy-net", action="store_true")
    ap.add_argument("--redundancy", action="store_true")
    ap.add_argument("--kevlar", action="store_true")
    args = ap.parse_args()
    if args.redundancy:
        redundancy_cost((12, 24) if args.quick else (12, 24, 48))
        rank_path(6 if args.quick else 12)
        return
    if args.deploy_net:
        deploy_net(args.quick, args.kevlar)
        return
    if args.net:
        net_cost((4, 6) if args.quick else (4, 6, 12), args.steps)
        return
    sizes = (4, 6, 12) if args.quick else (4, 6, 12, 24, 48)
    h = 0.01
    rows = []
    variants = (("default", {}),
                ("newton, no geometric terms", {"iteration": "newton",
                                                "geometric_stiffness": False}))
    print(f"{'N':>4} {'coords':>7} {'rows':>6} {'build [s]':>10} {'memory [MB]':>12} " +
          " ".join(f"{'step [s] / it. (' + name + ')':>44}" for name, _ in variants))
    for n in sizes:
        memory = peak_memory(n, h)
        cells = []
        for name, options in variants:
            t0 = time.perf_counter()
            truss = ring_truss(n_bays=n, drive=False, latch=False, folded_angle=1.0)
            add_deployment_driver(truss, smooth_deployment_motion(1.0, 1.5, 1.0))
            m = truss.system.m
            build = time.perf_counter() - t0
            t0 = time.perf_counter()
            r = simulate(truss.system, args.steps * h, h, "generalized-alpha", sparse=True,
                         **options)
            per_step = (time.perf_counter() - t0) / args.steps
            cells.append((per_step, r.stats.get("iterations_per_step", float("nan"))))
        print(f"{n:>4} {truss.system.n:>7} {m:>6} {build:>10.2f} {memory:>12.1f} " +
              " ".join(f"{f'{c:.3f} / {i:.1f}':>44}" for c, i in cells))
        rows.append((n, *[c for c, _ in cells]))
    table = np.array(rows)
    ns = table[:, 0]
    for k, (name, _) in enumerate(variants):
        slope = np.polyfit(np.log(ns), np.log(table[:, 1 + k]), 1)[0]
        print(f"{name}: cost per step ~ N^{slope:.2f} (log-log fit over N = {int(ns[0])} ... "
              f"{int(ns[-1])})")
    if 24 in ns:
        print("projected: the source paper's case, 500 s of deployment at h = 1e-4 s, "
              f"for N = 24: {5e6 * float(np.interp(24, ns, table[:, 2])) / 3600:.0f} h at the "
              "cost per step without the geometric terms")


if __name__ == "__main__":
    main()
