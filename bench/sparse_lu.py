"""The project's sparse LU (mbdcore.dae.sparse_solver, native/sparse_lu.c) against
SuperLU (scipy.sparse.linalg.splu) on the implicit integrators' Newton matrices, and the
cost per step of the index-3 sparse path with each; printed, never asserted
(docs/sparse_lu.md).

    python bench/sparse_lu.py            # about a minute on 2 cores
    python bench/sparse_lu.py --quick    # ring truss at 4 bays and the cable net only
    python bench/sparse_lu.py --parallel # PARDISO (pypardiso, the extra "parallel")

Matrices: the last Newton matrix factored in two generalized-alpha steps (GGL) of the
ring truss (deployment driver, gears; 4, 12, 24 bays, h = 10 ms) and of the deployed
6-bay truss with its pretensioned net of tension-only spatial ANCF cables (2 rings, 2
elements per cable; full Newton, h = 1 ms).  Printed per matrix: size, entries, the
best wall time of SparseLU's analysis (ordering, "auto": the A^T A one for these
matrices with their zero diagonal block), factorisation, refactorisation and solve, of
splu's factorisation and solve, the entries of L + U of both (and of SparseLU with the
other ordering) and the largest residual |A x - b| of both.  Then per model: the wall time per step over K steps of
the sparse path with ``sparse_solver="native"`` and ``"superlu"`` and their Newton
iterations per step (the same, to rounding).

``--parallel``: the Newton matrix of the ring truss at 24 and 48 bays factored afresh by
SparseLU (factor, and refactor on kept pivots), SuperLU and MKL's PARDISO
(``sparse_solver="pardiso"``: analysis and factorisation, PARDISO's phases 11 and 22,
as for a new pattern; and its numerical factorisation alone, phase 22, on the analysis
kept, as the integrator calls it while the pattern stays) with 1 and 2 MKL threads:
best wall time per factorisation and the largest residual; then the wall time per step
of the sparse path with PARDISO (with the analyses it made).
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")   # steadier timings (see tests/conftest)
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
from scipy.sparse.linalg import splu  # noqa: E402

from mbdcore.dae.sparse_solver import SparseLU  # noqa: E402
from support.newton_matrices import (  # noqa: E402
    cable_net_problem,
    newton_matrices,
    ring_truss_problem,
)


def best_time(fn, budget: float = 0.3) -> float:
    """Best wall time of fn() [s] over repetitions filling about ``budget`` seconds."""
    fn()
    t0 = time.perf_counter()
    fn()
    once = max(time.perf_counter() - t0, 1e-7)
    best = np.inf
    for _ in range(max(3, min(1000, int(budget / once)))):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def matrix_row(name, A) -> None:
    """One line of the factorisation table for the matrix A."""
    b = np.random.default_rng(23).standard_normal(A.shape[0])
    symbolic = SparseLU(A)
    ours = symbolic.factored(A)
    theirs = splu(A)
    times = [best_time(lambda: SparseLU(A)), best_time(lambda: symbolic.factored(A)),
             best_time(lambda: ours.refactored(A)), best_time(lambda: ours.solve(b)),
             best_time(lambda: splu(A)), best_time(lambda: theirs.solve(b))]
    res = [np.abs(A @ f.solve(b) - b).max() for f in (ours, theirs)]
    other = SparseLU(A, ordering="symmetric" if ours.ordering == "normal" else "normal")
    print(f"{name:>14} {A.shape[0]:>6} {A.nnz:>7} {ours.ordering:>9} "
          + " ".join(f"{t * 1e3:>8.3f}" for t in times)
          + f" {ours.lu_nnz:>8} {other.factored(A).lu_nnz:>8}"
          + f" {theirs.L.nnz + theirs.U.nnz - A.shape[0]:>8} {res[0]:>9.1e} {res[1]:>9.1e}")


def step_row(name, problem, steps: int) -> None:
    """Wall time per step of the sparse path with each factorisation."""
    cells = []
    for solver in ("native", "superlu"):
        system, q, v, h, options = problem
        _, integ = newton_matrices(problem, 1, sparse_solver=solver)   # warm up
        t0 = time.perf_counter()
        _, integ = newton_matrices(problem, steps, sparse_solver=solver)
        per_step = (time.perf_counter() - t0) / steps
        stats = integ.stats()
        cells.append(f"{per_step * 1e3:>10.2f} {stats['iterations_per_step']:>5.2f} "
                     f"{stats['factorizations_per_step']:>5.2f}")
    print(f"{name:>14} {problem[0].n:>6} " + "   ".join(cells))


def parallel_rows(steps: int) -> None:
    """PARDISO against SparseLU and SuperLU (module docstring, ``--parallel``)."""
    from mbdcore.dae.sparse_solver import (  # optional: only this table needs them
        PardisoAnalysis,
        pardiso_factors,
        pardiso_threads,
    )

    print("time per factorisation [ms] of the truss's Newton matrix; PARDISO "
          "phases 11 + 22 (analysis and factor: a new pattern) / phase 22 (factor on "
          "the kept analysis: what the integrator calls while the pattern stays)")
    print(f"{'N':>4} {'n':>6} {'SparseLU':>9} {'refactor':>9} {'SuperLU':>9} "
          f"{'P11+22 1 t':>10} {'P22 1 thr':>10} {'P11+22 2 t':>10} {'P22 2 thr':>10} "
          f"{'residual':>9} {'PARDISO':>9}")
    for n in (24, 48):
        A = newton_matrices(ring_truss_problem(n), 2)[0][-1].tocsc()
        b = np.random.default_rng(23).standard_normal(A.shape[0])
        ours = SparseLU(A).factored(A)
        cells = [best_time(lambda: SparseLU(A).factored(A)),
                 best_time(lambda: ours.refactored(A)), best_time(lambda: splu(A))]
        Ar = A.tocsr()
        for threads in (1, 2):
            pardiso_threads(threads)
            cells.append(best_time(lambda: pardiso_factors(Ar)))
            analysis = PardisoAnalysis(Ar, Ar)
            cells.append(best_time(lambda: analysis.factor(Ar)))
            del analysis
        lu = pardiso_factors(Ar)
        res = [np.abs(A @ ours.solve(b) - b).max(), np.abs(A @ lu.solve(b) - b).max()]
        print(f"{n:>4} {A.shape[0]:>6} " + " ".join(f"{c * 1e3:>9.2f}" for c in cells[:3])
              + " " + " ".join(f"{c * 1e3:>10.2f}" for c in cells[3:])
              + f" {res[0]:>9.1e} {res[1]:>9.1e}")
    print(f"\nper step ({steps} steps; ms, Newton iterations and factorisations per step)")
    for n in (24, 48):
        problem = ring_truss_problem(n)
        for solver, threads in (("native", 1), ("superlu", 1), ("pardiso", 1), ("pardiso", 2)):
            pardiso_threads(threads)
            newton_matrices(problem, 1, sparse_solver=solver)          # warm up
            t0 = time.perf_counter()
            _, integ = newton_matrices(problem, steps, sparse_solver=solver)
            per_step = (time.perf_counter() - t0) / steps
            stats = integ.stats()
            print(f"{n:>4} bays {solver:>8} {threads} thread(s): {per_step * 1e3:>8.1f} ms, "
                  f"{stats['iterations_per_step']:.2f} iterations, "
                  f"{stats['factorizations_per_step']:.2f} factorisations per step"
                  + (f", {stats['pardiso_analyses']} analyses" if solver == "pardiso"
                     else ""))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--parallel", action="store_true")
    args = ap.parse_args()
    if args.parallel:
        parallel_rows(args.steps)
        return
    bays = (4,) if args.quick else (4, 12, 24)
    problems = [(f"truss {n} bays", ring_truss_problem(n)) for n in bays]
    problems.append(("cable net", cable_net_problem()))
    print("times in ms; fill: entries of L + U (the diagonal once), with the ordering "
          "'auto' chose, the other one, SuperLU's")
    print(f"{'matrix':>14} {'n':>6} {'nnz':>7} {'ordering':>9} {'analyse':>8} {'factor':>8} "
          f"{'refactor':>8} {'solve':>8} {'splu':>8} {'solve':>8} {'fill':>8} {'other':>8} "
          f"{'splu':>8} {'residual':>9} {'splu':>9}")
    for name, problem in problems:
        matrix_row(name, newton_matrices(problem, 2)[0][-1])
    print(f"\nper step ({args.steps} steps; ms, Newton iterations and factorisations per "
          "step)")
    print(f"{'model':>14} {'coords':>6} {'native':>22}   {'superlu':>22}")
    for name, problem in problems:
        step_row(name, problem, args.steps)


if __name__ == "__main__":
    main()
