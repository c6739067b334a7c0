"""Ring truss (issue 14): cost per implicit step against the number of bays, printed, not
asserted (docs/ring_truss.md, "Cost").

    python3 bench/ring_truss.py [--quick] [--steps K]
                                [--net | --drive | --c-fmu | --deploy-net [--kevlar]
                                 | --redundancy
                                 | --source-case [--bays N ...] [--stop T] [--from-angle A]
                                   [--sparse-solver native|superlu|pardiso]]

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

``--drive``: the truss with its drives and latches (a DC motor and screw per bay, each
latch open; every supply at 24 V), generalized-alpha steps of h = 1 ms on the sparse
path, CPU time per step (runs of 2K and K steps, their difference over K: the start is
left out) on the compiled path (the force elements as measure elements in C, issue 23)
and on the Python path (``System.compiled_residual = False``, what every truss with
drives took before) in the same run, with their Newton iterations per step and the
largest difference of the two trajectories, for N = 4, 12, 24 (4, 6 with ``--quick``).

``--c-fmu``: the 4-bay truss with drives and latches, nearly deployed (1.55 rad), every
supply at 48 V, written as a model file (generalized-alpha, full Newton, h = 1 ms) and
exported as C-source FMUs (``flexcosim export-c``: the whole step in C, the latches
switched in C), one on the dense path (``sparse: false``: the Newton matrix dense, LU
with partial pivoting, built every step) and one on the sparse path (``sparse: true``:
the matrix in a pattern fixed at export, sparse_lu.c on a pivot order fixed there, the
factors kept across steps): the median and worst CPU time of ``fmi2DoStep`` over 10^4
steps of each in fmpy (500 with ``--quick``), side by side, and the largest difference
of the first K steps' outputs (default 250: the latches engage at 0.212 s) from the
Python block's (on the sparse path).  Needs gcc; the dense FMU's 10^4 steps take about
7 minutes.

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

``--source-case [--bays N ...] [--stop T] [--steps K] [--from-angle A] [--sparse-solver S]``:
the source's case (issue 24): the geared truss of N bays (default 24) with its Kevlar
net, deployed by its motors as :func:`~mbdcore.models.truss_deployment.deploy_truss`
does with a net (its
defaults, ``NET_DEPLOYMENT``, ``NET_STEP_CONTROL``), from ``A`` rad (default 1.0, its
folded start; ``--from-angle 1.5`` a window near latching, where the net snaps taut).
The 500 s deployment cannot run in a bench session, so a window of it: K steps (default
10) at the source's fixed step h = 1e-4 s, and ``T`` s (default 0.2) of error-controlled
steps (rtol 1e-3, atol 1e-5 m) on the 20 ms output grid; the start (consistent
accelerations, redundancy check) timed apart (one fixed step, less the cost of a step)
and left out of the cost per step.  Printed: coordinates, constraint rows kept and
removed, accepted and rejected steps, Newton iterations, wall time, cost per step (an
attempted step: a rejected one costs as much), the mean and smallest accepted step, and
the projection of 500 s: 5e6 fixed steps, and 500 s over the window's mean step (its
rejections included).  The window's steps are those of its part of the deployment: near
the snap they are smaller (docs/benchmarks.md §12).  With more than one
N, the exponent of the cost per step in the coordinates; 48 bays not measured: its
projection extrapolated by that exponent (or, with one N, linearly in the coordinates,
a lower bound: the sparse factorisation grows faster).  ``--sparse-solver``: the sparse
path's factorisation (default the native LU; ``pardiso`` needs the extra ``parallel``).
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
    build_coordinates,
    ring_truss,
    smooth_deployment_motion,
)
from mbdcore.models.truss_deployment import NET_DEPLOYMENT, deploy_truss  # noqa: E402


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


def drive_cost(sizes, steps: int) -> None:
    """Cost per step of the truss with drives and latches, compiled and Python paths
    (module docstring)."""
    h = 1e-3
    print(f"{'N':>4} {'coords':>7} {'compiled [ms]':>14} {'it.':>5} {'python [ms]':>12} "
          f"{'it.':>5} {'ratio':>6} {'max |dq|':>9}")

    def run(n, compiled, k):
        truss = ring_truss(n_bays=n, drive=True, latch=True, folded_angle=1.0)
        system = truss.system
        system.compiled_residual = compiled
        assert (system.compiled_terms() is not None) == compiled
        for name in system.inputs:
            system.inputs[name] = 24.0
        t0 = time.process_time()
        r = simulate(system, k * h, h, "generalized-alpha", sparse=True, rho_inf=0.6)
        return time.process_time() - t0, r

    for n in sizes:
        runs = []
        for compiled in (True, False):
            # the cost of the steps alone: 2K steps less K (the start, its consistent
            # initial conditions and rank check, is the same in both), each the best of
            # 3 runs (a single pair on a loaded machine can even come out negative)
            t1 = min(run(n, compiled, steps)[0] for _ in range(3))
            t2, r = min((run(n, compiled, 2 * steps) for _ in range(3)), key=lambda x: x[0])
            runs.append(((t2 - t1) / steps, r))
        (tc, rc), (tp, rp) = runs
        print(f"{n:>4} {rc.q.shape[1]:>7} {1e3 * tc:>14.2f} "
              f"{rc.stats['iterations_per_step']:>5.1f} {1e3 * tp:>12.2f} "
              f"{rp.stats['iterations_per_step']:>5.1f} {tp / tc:>6.1f} "
              f"{np.abs(rc.q - rp.q).max():>9.1e}")


def _truss_fmu(folder, sparse: bool, h: float, volts: float, outputs):
    """(block class, started fmpy slave, value references) of the 4-bay truss's C FMU
    with the method's ``sparse`` (module docstring, ``--c-fmu``)."""
    import json       # the FMU tools only here: the other cases need none of them

    from fmpy import extract, read_model_description
    from fmpy.fmi2 import FMU2Slave

    from fmu.fmi.export_c import export_c_fmu
    from mbdcore.models.model_block import ModelSystemBlock
    from mbdcore.models.model_file import model_to_dict

    truss = ring_truss(n_bays=4, folded_angle=1.55)
    model = model_to_dict(truss.system, "4-bay ring truss")
    model.update(outputs=outputs, method={"name": "generalized-alpha", "substeps": 1,
                                          "rho_inf": 0.6, "sparse": sparse,
                                          "iteration": "newton", "tol": 1e-12})
    name = "sparse" if sparse else "dense"
    (folder / f"{name}.json").write_text(json.dumps(model))
    block_class = ModelSystemBlock.for_model(folder / f"{name}.json")
    t0 = time.perf_counter()
    fmu = export_c_fmu(block_class, folder, model_name=name)
    print(f"{name}: {truss.system.n} coordinates; export and compile "
          f"{time.perf_counter() - t0:.1f} s")
    md = read_model_description(str(fmu))
    vr = {v.name: v.valueReference for v in md.modelVariables}
    slave = FMU2Slave(guid=md.guid, unzipDirectory=extract(str(fmu)),
                      modelIdentifier=md.coSimulation.modelIdentifier, instanceName=name)
    slave.instantiate()
    slave.setupExperiment(startTime=0.0)
    slave.enterInitializationMode()
    slave.exitInitializationMode()
    inputs = [s.name for s in block_class.INPUTS]
    slave.setReal([vr[u] for u in inputs], [volts] * len(inputs))
    return block_class, slave, vr


def c_fmu_cost(steps: int, timed: int) -> None:
    """The 4-bay truss as C FMUs on the dense and the sparse path against its Python
    block (module docstring): ``timed`` steps of each FMU, the first ``steps`` of them
    compared."""
    import tempfile
    from pathlib import Path

    h, volts = 1e-3, 48.0
    outputs = ["motor0.phi", "der(motor0.phi)", "der(motor0.charge)", "vertical1.x",
               "vertical1.y", "der(vertical1.x)"]
    folder = Path(tempfile.mkdtemp())
    rows, cost = {}, {}
    for sparse in (False, True):
        block_class, slave, vr = _truss_fmu(folder, sparse, h, volts, outputs)
        name = "sparse" if sparse else "dense"
        rows[name], cost[name] = [], []
        for k in range(timed):
            t0 = time.process_time()
            slave.doStep(k * h, h)
            cost[name].append(time.process_time() - t0)
            if k < steps:
                rows[name].append(slave.getReal([vr[o] for o in outputs]))
        slave.terminate()
        slave.freeInstance()
    block = block_class()                    # the sparse file's: the Python sparse path
    for u in [s.name for s in block_class.INPUTS]:
        block.inputs[u] = volts
    python, t0 = [], time.process_time()
    for k in range(steps):
        block.do_step(k * h, h)
        python.append([block.outputs()[o] for o in outputs])
    per_step = (time.process_time() - t0) / steps
    latched = sorted({f.latch_time for f in block.system.forces_list
                      if type(f).__name__ == "DiagonalLatch" and f.latched})
    print(f"fmi2DoStep over {timed} steps of 1 ms, CPU time [ms]:")
    print(f"{'path':>8} {'median':>8} {'worst':>8} {'largest difference':>20}")
    for name in ("dense", "sparse"):
        diff = np.abs(np.array(rows[name]) - np.array(python)).max()
        print(f"{name:>8} {1e3 * np.median(cost[name]):8.3f} {1e3 * max(cost[name]):8.3f} "
              f"{diff:20.1e}")
    print(f"(differences from the Python block on the sparse path over the first {steps} "
          f"steps, {1e3 * per_step:.0f} ms per step, outputs up to "
          f"{np.abs(python).max():.3g}; latches engaged at {latched} s)")


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


#: the source's case (issue 24): 500 s of deployment at h = 1e-4 s
SOURCE_DURATION, SOURCE_STEP = 500.0, 1e-4


def source_window(n_bays: int, from_angle: float, stop: float, fixed: bool,
                  sparse_solver: str = "native") -> dict:
    """One window of the source's case: :func:`deploy_truss` with the net from
    ``from_angle`` [rad] for ``stop`` [s], at the fixed step SOURCE_STEP or with the
    default error-controlled steps, the sparse path's ``sparse_solver``; its size,
    steps, iterations and wall time [s]."""
    # fixed steps: the error control of NET_STEP_CONTROL switched off (None: not set)
    solver = {"sparse_solver": sparse_solver}
    options = ({"method_options": {"adaptive": False, "rtol": None, "atol": None, **solver},
                "h": SOURCE_STEP} if fixed else {"method_options": solver})
    began = []      # the CPU time at the run's start (its first progress call): the
    # build left out, as from the wall time deploy_truss reports
    run = deploy_truss(n_bays=n_bays, folded_angle=from_angle, stop=stop, net=True,
                       progress=lambda t, end: began.append(time.process_time()), **options)
    cpu = time.process_time() - began[0]
    system, stats = run.truss.system, run.result.stats
    accepted = int(stats.get("accepted_steps", stats["nsteps"]))
    rejected = int(stats.get("rejected_steps", 0)) + int(stats.get("step_retries", 0))
    return {"coords": system.n, "kept": system.m, "removed": system.m_all - system.m,
            "cables": len(run.net.cables), "accepted": accepted, "rejected": rejected,
            "iterations": int(stats["newton_iterations"]), "wall": run.wall_time, "cpu": cpu,
            "reached": run.end_time, "failure": run.failure,
            "h_smallest": float(stats.get("h_smallest", SOURCE_STEP))}


def _window_line(name: str, w: dict, wall: float, cpu: float) -> str:
    """A window's steps, iterations and cost per step [s] in a line."""
    return (f"  {name:>20}: {w['reached']:.4f} s simulated in {w['wall']:.1f} s of wall "
            f"time, {w['accepted']} accepted / {w['rejected']} rejected steps, "
            f"{w['iterations'] / max(w['accepted'] + w['rejected'], 1):.2f} Newton "
            f"iterations per step, {1e3 * wall:.0f} ms wall / {1e3 * cpu:.0f} ms CPU per "
            "step" + ("" if w["failure"] is None else f"; stopped: {w['failure']}"))


def source_case(sizes, stop: float, steps: int, from_angle: float,
                sparse_solver: str = "native") -> dict:
    """The source's case in windows, timed and projected to 500 s (module docstring);
    returns per N (coordinates, CPU per fixed step [s], CPU per error-controlled step
    [s], mean accepted step [s], attempted over accepted steps)."""
    hours = 1 / 3600
    measured = {}
    for n in sizes:
        one = source_window(n, from_angle, SOURCE_STEP, True, sparse_solver)
        print(f"{n} bays ({sparse_solver} sparse LU) with the net of {one['cables']} cables "
              f"from {from_angle} rad: "
              f"{one['coords']:,} coordinates, constraint rows {one['kept']:,} kept / "
              f"{one['removed']:,} removed", flush=True)
        fixed = source_window(n, from_angle, steps * SOURCE_STEP, True, sparse_solver)
        # per fixed step: wall clock (simulate's, the build left out) and CPU time of
        # this process (what the run costs alone on a shared machine), the start (one
        # step's run less a step) left out
        step = {c: (fixed[c] - one[c]) / (steps - 1) for c in ("wall", "cpu")}
        start = {c: max(one[c] - step[c], 0.0) for c in ("wall", "cpu")}
        print(f"  start (consistent accelerations, redundancy check) {start['wall']:.1f} s "
              f"wall, {start['cpu']:.1f} s CPU")
        print(_window_line(f"h = {SOURCE_STEP:g} s fixed", fixed, step["wall"], step["cpu"]),
              flush=True)
        if min(step.values()) <= 0.0:
            print("  (a cost per fixed step <= 0: the K steps cost less than the two runs' "
                  "noise; raise --steps)")
        adaptive = source_window(n, from_angle, stop, False, sparse_solver)
        attempted = adaptive["accepted"] + adaptive["rejected"]
        mean_step = adaptive["reached"] / adaptive["accepted"]
        per = {c: (adaptive[c] - start[c]) / attempted for c in ("wall", "cpu")}
        print(_window_line("error-controlled", adaptive, per["wall"], per["cpu"]))
        ratio = attempted / adaptive["accepted"]
        projected = {c: (SOURCE_DURATION / SOURCE_STEP * step[c] * hours,
                         SOURCE_DURATION / mean_step * ratio * per[c] * hours)
                     for c in ("wall", "cpu")}
        measured[n] = (fixed["coords"], step["cpu"], per["cpu"], mean_step, ratio)
        print(f"  error-controlled steps: mean {mean_step:.2e} s, smallest "
              f"{adaptive['h_smallest']:.2e} s over this window")
        print(f"  projected 500 s (wall / CPU): {projected['wall'][0]:,.0f} / "
              f"{projected['cpu'][0]:,.0f} h at h = {SOURCE_STEP:g} s; "
              f"{projected['wall'][1]:,.1f} / {projected['cpu'][1]:,.1f} h at the window's "
              "mean error-controlled step (the steps where the net snaps taut are smaller)",
              flush=True)
    if 48 not in measured:
        extrapolate_48(measured)
    return measured


def extrapolate_48(measured: dict) -> None:
    """The 500 s projection for 48 bays from the largest N measured: the same steps,
    the CPU cost per step scaled by the coordinates to the exponent fitted over the N
    measured (on the error-controlled windows' costs, many steps each), or linearly (a
    lower bound) from one N."""
    ns = sorted(measured)
    coords48 = build_coordinates(48, **{k: NET_DEPLOYMENT[k]
                                        for k in ("net_rings", "cable_elements")})
    if len(ns) > 1:
        x = np.log([measured[n][0] for n in ns])
        exponent = np.polyfit(x, np.log([measured[n][2] for n in ns]), 1)[0]
        how = f"CPU cost per step ~ coordinates^{exponent:.2f}, fitted over N = {ns}"
    else:
        exponent, how = 1.0, "cost per step linear in the coordinates (a lower bound)"
    coords, fixed_cost, adaptive_cost, mean_step, ratio = measured[ns[-1]]
    scale, hours = (coords48 / coords) ** exponent, 1 / 3600
    print(f"48 bays ({coords48:,} coordinates), extrapolated from {ns[-1]} bays ({how}; the "
          f"same steps), CPU: "
          f"{SOURCE_DURATION / SOURCE_STEP * fixed_cost * scale * hours:,.0f} h "
          f"at h = {SOURCE_STEP:g} s, "
          f"{SOURCE_DURATION / mean_step * ratio * adaptive_cost * scale * hours:,.1f} h "
          "error-controlled")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--steps", type=int, default=None, help="K (default 10; 250 with --c-fmu)")
    ap.add_argument("--net", action="store_true")
    ap.add_argument("--deploy-net", action="store_true")
    ap.add_argument("--redundancy", action="store_true")
    ap.add_argument("--kevlar", action="store_true")
    ap.add_argument("--drive", action="store_true")
    ap.add_argument("--c-fmu", action="store_true")
    ap.add_argument("--source-case", action="store_true")
    ap.add_argument("--bays", type=int, nargs="+", default=[24],
                    help="--source-case: the numbers of bays (default 24)")
    ap.add_argument("--stop", type=float, default=0.2,
                    help="--source-case: the error-controlled window [s] (default 0.2)")
    ap.add_argument("--from-angle", type=float, default=1.0,
                    help="--source-case: the bay angle the window starts from [rad] "
                         "(default 1.0; 1.5: near latching)")
    ap.add_argument("--sparse-solver", default="native",
                    choices=("native", "superlu", "pardiso"),
                    help="--source-case: the sparse path's factorisation (default native)")
    args = ap.parse_args()
    if args.c_fmu:
        c_fmu_cost(args.steps or 250, 500 if args.quick else 10_000)
        return
    args.steps = args.steps or 10
    if args.source_case:
        source_case(args.bays, args.stop, max(args.steps, 2), args.from_angle,
                    args.sparse_solver)
        return
    if args.redundancy:
        redundancy_cost((12, 24) if args.quick else (12, 24, 48))
        rank_path(6 if args.quick else 12)
        return
    if args.drive:
        drive_cost((4, 6) if args.quick else (4, 12, 24), args.steps)
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
