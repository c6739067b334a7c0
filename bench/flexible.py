"""Benchmark of the flexible-body models (issue 4): wall time against accuracy, and the
cost of one implicit step as a chain of ANCF elements grows.

(a) Hub-beam spin-up (Kane, Ryan & Banerjee 1987; docs/benchmarks.md §2), 0-20 s, final
    rate 4 rad/s: the floating-frame modal beam (2, 4 modes), the finite-segment beam
    (5, 10, 20 segments) and the ANCF beam (4, 8, 16 elements), all with
    generalized-alpha (GGL, rho_inf = 0.8) at h = 5 ms.  Peak and final transverse tip
    deflection in the hub frame, against the finest model of the same family and
    against the finest ANCF beam.
(b) The two-link arm of docs/benchmarks.md §1 under the bang-bang torques of load case
    1a, 0-1.2 s, built from the general engine with each beam model, against the
    minimal-coordinate model (mbdcore.models.manipulator.FlexibleManipulator, 4 modes):
    wall time and largest joint-angle difference.
(c) Cost of one generalized-alpha step (modified Newton) on a hanging chain of 10 ...
    3000 ANCF elements (0.1 m each): the first step (Jacobian and factorisation fresh)
    and a typical step, for the sparse path and, where feasible, the dense one, with
    the log-log slope (scaling exponent) of cost against the number of elements;
    then the memory of the chain for 10, 100, 1000, 3000 elements (tracemalloc peak
    while building it and taking two steps, and the bytes the beam keeps), per element.

Nothing is asserted; the numbers are printed.

    python bench/flexible.py            # all three parts (several minutes)
    python bench/flexible.py --part c   # one part
    python bench/flexible.py --quick    # shorter runs and chains (smoke test)
"""
from __future__ import annotations

import argparse
import math
import os
import time
import tracemalloc

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")   # steadier timings (see tests/conftest)

import numpy as np  # noqa: E402

from mbdcore.multibody.ancf import ANCFBeam, cantilever  # noqa: E402
from mbdcore.multibody.flexible import FiniteSegmentBeam, ModalBeam  # noqa: E402
from mbdcore.dae.index1 import assemble
from mbdcore.dae.simulate import simulate  # noqa: E402
from mbdcore.dae.schemes import GeneralizedAlpha  # noqa: E402
from mbdcore.models.manipulator import FlexibleManipulator, bang_bang_torque  # noqa: E402
from mbdcore.models.mechanisms import hub_beam, two_link_arm  # noqa: E402

IMPLICIT = dict(formulation="index3", rho_inf=0.8)


# -- (a) hub-beam spin-up ---------------------------------------------------------------
def hub_factories():
    """(family, label, beam factory(name, length, rho_a, ei, ea)), coarse to fine."""
    out = []
    for k in (2, 4):
        out.append(("modal", f"modal {k} modes",
                    lambda n, L, ra, ei, ea, k=k: ModalBeam(n, L, ra, ei, n_modes=k)))
    for k in (5, 10, 20):
        out.append(("segments", f"segments {k}",
                    lambda n, L, ra, ei, ea, k=k: FiniteSegmentBeam(n, L, ra, ei, n_segments=k)))
    for k in (4, 8, 16):
        out.append(("ancf", f"ANCF {k} elements",
                    lambda n, L, ra, ei, ea, k=k: ANCFBeam(n, (0.0, 0.0), (L, 0.0), k, ra, ei, ea)))
    return out


def hub_tip_history(factory, t_end: float, h: float):
    """(t, transverse tip deflection in the hub frame [m], wall time [s], n coords)."""
    s = hub_beam(factory, 4.0)
    beam, hub = s.body("beam"), s.body("hub")
    t0 = time.perf_counter()
    r = simulate(s, t_end, h, "generalized-alpha", record_every=int(round(0.05 / h)),
                 **IMPLICIT)
    wall = time.perf_counter() - t0
    tips = []
    for q in r.q:
        p = s.view(q, np.zeros_like(q))[beam].point(beam.markers["tip"])[0]
        th = q[hub.index + 2]
        tips.append(-math.sin(th) * p[0] + math.cos(th) * p[1])
    return r.t, np.array(tips), wall, s.n


def part_a(t_end: float) -> None:
    h = 5e-3
    print(f"(a) hub-beam spin-up to 4 rad/s, 0-{t_end:g} s, generalized-alpha h = {h:g} s")
    runs = {}
    for family, label, factory in hub_factories():
        runs[label] = (family, *hub_tip_history(factory, t_end, h))
    finest = {}
    for label, (family, *_rest) in runs.items():
        finest[family] = label                     # factories go coarse to fine
    ref = runs[finest["ancf"]]
    print(f"{'model':>20} {'n':>4} {'wall [s]':>9} {'peak [m]':>9} {'t_peak':>6} "
          f"{'final [m]':>10} {'d_peak':>9} {'d_final':>9} {'max|d| fam':>10} "
          f"{'max|d| ANCF':>11}")
    for label, (family, t, tip, wall, n) in runs.items():
        fam = runs[finest[family]]
        k = int(np.argmax(np.abs(tip)))
        peak, fam_peak = tip[k], fam[2][int(np.argmax(np.abs(fam[2])))]
        print(f"{label:>20} {n:4d} {wall:9.2f} {peak:9.4f} {t[k]:6.2f} {tip[-1]:10.5f} "
              f"{abs(peak - fam_peak):9.2e} {abs(tip[-1] - fam[2][-1]):9.2e} "
              f"{np.abs(tip - fam[2]).max():10.2e} {np.abs(tip - ref[2]).max():11.2e}")
    print("  d_peak, d_final, max|d| fam: against the finest model of the same family; "
          "max|d| ANCF: against the finest ANCF beam, over the whole history\n")


# -- (b) two-link arm ---------------------------------------------------------------------
def arm_factories():
    """(label, link factory, modes of the modal beam or None), coarse to fine."""
    out = []
    for k in (2, 4):
        out.append((f"modal {k} modes", lambda n, L, ra, ei, at, k=k: ModalBeam(
            n, L, ra, ei, n_modes=k, position=at), k))
    for k in (5, 10, 20):
        out.append((f"segments {k}", lambda n, L, ra, ei, at, k=k: FiniteSegmentBeam(
            n, L, ra, ei, n_segments=k, position=at), None))
    for k in (2, 4, 8):
        out.append((f"ANCF {k} elements", lambda n, L, ra, ei, at, k=k: ANCFBeam(
            n, at, (at[0] + L, at[1]), k, ra, ei, 1e5), None))
    return out


def part_b(t_end: float) -> None:
    h = 1e-3
    print(f"(b) two-link arm, bang-bang torques, 0-{t_end:g} s, generalized-alpha "
          f"h = {h:g} s, against the minimal-coordinate model (4 modes, RK4 h = 1e-4 s)")
    ref_model = FlexibleManipulator(n_modes=4)
    t0 = time.perf_counter()
    _, x = ref_model.simulate(bang_bang_torque, t_end, 1e-4)
    ref_wall = time.perf_counter() - t0
    stride = int(round(h / 1e-4))
    ref1, ref2 = x[::stride, 0], x[::stride, 1]
    print(f"{'model':>20} {'n':>4} {'m':>4} {'wall [s]':>9} {'max|d theta1|':>14} "
          f"{'max|d theta2|':>14} {'same basis':>11}")
    print(f"{'minimal (4 modes)':>20} {ref_model.n_dof:4d} {0:4d} {ref_wall:9.2f} "
          f"{'-':>14} {'-':>14}")
    for label, factory, modes in arm_factories():
        s = two_link_arm(factory)
        t0 = time.perf_counter()
        r = simulate(s, t_end, h, "generalized-alpha",
                     inputs=lambda t: dict(zip(("tau1", "tau2"), bang_bang_torque(t))),
                     **IMPLICIT)
        wall = time.perf_counter() - t0
        d1 = np.abs(r["hub1.phi"] - ref1).max()
        d2 = np.abs(r["rotor.phi"] - r["stator.phi"] - ref2).max()
        same = "-"
        if modes is not None:
            # the modal beam's own basis (clamped-free shapes): the same physics
            _, y = FlexibleManipulator(n_modes=modes, mode_shapes="clamped-free").simulate(
                bang_bang_torque, t_end, 1e-4)
            gap = max(np.abs(r["hub1.phi"] - y[::stride, 0]).max(),
                      np.abs(r["rotor.phi"] - r["stator.phi"] - y[::stride, 1]).max())
            same = f"{gap:.2e}"
        print(f"{label:>20} {s.n:4d} {s.m:4d} {wall:9.2f} {d1:14.2e} {d2:14.2e} {same:>11}")
    print("  same basis: the modal beam against the minimal model with its own basis "
          "(clamped-free shapes, same number of modes), i.e. the integration error.\n"
          "  The gaps of the finest models are modelling: clamped-free shapes converge "
          "slowly under the tip masses\n  (the minimal model's clamped-free and clamped-mass "
          "4-mode bases differ by 2e-2 rad in theta2), and the minimal model\n  truncates "
          "the kinetic energy at second order in the deflection (tests/test_mbdcore/models/test_ancf_arm.py).\n")


# -- (c) cost per implicit step -------------------------------------------------------
def hanging_chain(n_elements: int):
    """Clamped at the top, 0.3 rad off the vertical, gravity: elements of 0.1 m,
    EI = 1 N m^2, EA = 1e5 N, rho A = 1 kg/m (the system of tests/test_mbdcore/dae/test_sparse.py)."""
    return cantilever(length=0.1 * n_elements, n_elements=n_elements, ei=1.0, ea=1e5,
                      gravity=(0.0, -9.81), direction=-math.pi / 2 + 0.3)


def step_costs(n_elements: int, sparse: bool, steps: int = 6, h: float = 1e-3):
    """(first step [s], median of the following steps [s], Newton iterations per step)."""
    s = hanging_chain(n_elements)
    q, v = assemble(s)
    integ = GeneralizedAlpha(rho_inf=0.8, sparse=sparse)
    integ.start(s, 0.0, q, v)
    times, t = [], 0.0
    for _ in range(steps):
        t0 = time.perf_counter()
        q, v = integ.step(s, t, q, v, h)
        times.append(time.perf_counter() - t0)
        t += h
    return times[0], float(np.median(times[1:])), integ.newton_iterations / steps


def memory_per_element(n_elements: int, steps: int = 2, h: float = 1e-3):
    """(peak traced memory of building the chain and taking ``steps`` sparse
    generalized-alpha steps [bytes], bytes held by the beam's arrays and sparse matrices
    after the steps) for a hanging chain of ``n_elements``."""
    tracemalloc.start()
    s = hanging_chain(n_elements)
    q, v = assemble(s)
    integ = GeneralizedAlpha(rho_inf=0.8, sparse=True)
    integ.start(s, 0.0, q, v)
    t = 0.0
    for _ in range(steps):
        q, v = integ.step(s, t, q, v, h)
        t += h
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    held = 0
    for value in vars(s.body("beam")).values():
        if isinstance(value, np.ndarray):
            held += value.nbytes
        elif hasattr(value, "data") and hasattr(value, "indices"):     # scipy sparse
            held += value.data.nbytes + value.indices.nbytes + value.indptr.nbytes
    return peak, held


def part_memory(sizes) -> None:
    print("(c') memory of a hanging chain of n ANCF elements: peak traced by tracemalloc "
          "while building it and taking two sparse generalized-alpha steps, and the bytes "
          "the beam keeps in arrays and sparse matrices (a dense mass matrix alone would "
          "be 8 (4 (n + 1))^2 bytes)")
    print(f"{'n':>6} {'peak [MB]':>10} {'peak/elem [kB]':>15} {'beam [MB]':>10} "
          f"{'beam/elem [kB]':>15} {'dense M [MB]':>13}")
    for n in sizes:
        peak, held = memory_per_element(n)
        dense = 8.0 * (4 * (n + 1)) ** 2
        print(f"{n:6d} {peak / 1e6:10.2f} {peak / n / 1e3:15.2f} {held / 1e6:10.3f} "
              f"{held / n / 1e3:15.3f} {dense / 1e6:13.1f}")
    print()


def slope(sizes, costs) -> float:
    return float(np.polyfit(np.log(sizes), np.log(costs), 1)[0])


def part_c(sparse_sizes, dense_sizes) -> None:
    print("(c) one generalized-alpha step (modified Newton, GGL) on a hanging chain of "
          "n ANCF elements (4 (n + 1) coordinates)")
    print(f"{'path':>7} {'n':>6} {'coords':>7} {'first [ms]':>11} {'typical [ms]':>13} "
          f"{'its/step':>9}")
    results = {}
    for path, sizes in (("sparse", sparse_sizes), ("dense", dense_sizes)):
        rows = []
        for n in sizes:
            first, typical, its = step_costs(n, path == "sparse")
            rows.append((n, first, typical))
            print(f"{path:>7} {n:6d} {4 * (n + 1):7d} {1e3 * first:11.1f} {1e3 * typical:13.1f} "
                  f"{its:9.1f}")
        results[path] = np.array(rows)
    for path, rows in results.items():
        if len(rows) >= 2:
            big = rows[rows[:, 0] >= 100] if np.sum(rows[:, 0] >= 100) >= 2 else rows
            print(f"  {path}: cost ~ n^p with p = {slope(rows[:, 0], rows[:, 1]):.2f} (first "
                  f"step), {slope(rows[:, 0], rows[:, 2]):.2f} (typical step) over "
                  f"n = {rows[0, 0]:.0f}..{rows[-1, 0]:.0f}; from n = {big[0, 0]:.0f}: "
                  f"{slope(big[:, 0], big[:, 1]):.2f}, {slope(big[:, 0], big[:, 2]):.2f}")
    print()


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--part", choices=("a", "b", "c"), action="append",
                    help="run only this part (repeatable)")
    ap.add_argument("--quick", action="store_true", help="short runs (smoke test)")
    args = ap.parse_args(argv)
    parts = args.part or ["a", "b", "c"]
    if "a" in parts:
        part_a(2.0 if args.quick else 20.0)
    if "b" in parts:
        part_b(0.2 if args.quick else 1.2)
    if "c" in parts:
        if args.quick:
            part_c([10, 100], [10, 30])
            part_memory([10, 100])
        else:
            part_c([10, 30, 100, 300, 1000, 3000], [10, 30, 100, 300])
            part_memory([10, 100, 1000, 3000])


if __name__ == "__main__":
    main()
