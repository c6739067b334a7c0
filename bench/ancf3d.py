"""Cost of the spatial ANCF cable's elastic forces and tangents (docs/spatial.md; printed,
never asserted).

For N = 10 to 3000 elements of a cable bent out of every coordinate plane and moving
(Kelvin-Voigt damping on, so the damping tangent is made too): the wall time of one
evaluation of the forces alone, of the forces with the element tangents (one call of
native/ancf3d.c), and of the sparse assembly of K and C; per element, and the memory
the body keeps (its arrays, the CSR mass matrix and the assembly pattern) and a tangent
pair takes, per element.  Also the planar ANCF beam's forces+tangents per element for
comparison (8 coordinates per element against 12).

    python bench/ancf3d.py             # about 20 s on 2 cores
    python bench/ancf3d.py --quick     # N = 10, 100, 1000
"""
from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")   # steadier timings (see tests/conftest)

import numpy as np  # noqa: E402
import scipy.sparse  # noqa: E402

from mbdcore.multibody.ancf import ANCFBeam  # noqa: E402
from mbdcore.spatial.ancf import ANCFCable  # noqa: E402


def best_time(fn, budget: float = 0.3) -> float:
    """Best wall time of fn() [s] over repetitions filling about ``budget`` seconds."""
    fn()
    t0 = time.perf_counter()
    fn()
    once = max(time.perf_counter() - t0, 1e-7)
    reps = max(3, min(2000, int(budget / once)))
    best = np.inf
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def held_bytes(obj) -> int:
    """Bytes of the numpy arrays and sparse matrices an object keeps (one level deep,
    plus tuples of arrays: the assembly pattern)."""
    total = 0
    for value in vars(obj).values():
        items = value if isinstance(value, tuple) else (value,)
        for item in items:
            if isinstance(item, np.ndarray):
                total += item.nbytes
            elif scipy.sparse.issparse(item):
                total += item.data.nbytes + item.indices.nbytes + item.indptr.nbytes
    return total


def bent_state(cable: ANCFCable):
    q, _ = cable.initial_coordinates()
    s = np.repeat(cable.node_arc, 6)
    q = q + 1e-3 * np.sin(7.0 * s + np.arange(q.size))
    return q, np.cos(3.0 * s + np.arange(q.size))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="N = 10, 100, 1000 only")
    args = parser.parse_args()
    sizes = (10, 100, 1000) if args.quick else (10, 30, 100, 300, 1000, 3000)
    print("spatial ANCF cable, 5 Gauss points per element, damping on; times per element [us]")
    print(f"{'N':>6} {'forces':>9} {'f + K_e, C_e':>13} {'assembly':>9} {'total':>8} "
          f"{'planar f+K':>11} {'body B/el':>10} {'K, C B/el':>10}")
    for n in sizes:
        cable = ANCFCable("c", (0, 0, 0), (1.0, 2.0, 2.0), n, 1.0, 1e6, 1.0, damping=1e-3)
        q, v = bent_state(cable)
        t_f = best_time(lambda: cable.internal_forces(q, v))
        t_fk = best_time(lambda: cable._elastic(q, v, True))
        _, k_el, c_el = cable._elastic(q, v, True)
        t_asm = best_time(lambda: (cable._assemble_sparse(k_el), cable._assemble_sparse(c_el)))
        cable.tangent_matrices(q, v)
        K, C = cable.tangent_matrices(q, v)
        tangent_bytes = sum(m.data.nbytes + m.indices.nbytes + m.indptr.nbytes for m in (K, C))
        beam = ANCFBeam("b", (0, 0), (3.0, 0.0), n, 1.0, 1.0, 1e6, damping=1e-3)
        qb, _ = beam.initial_coordinates()
        qb = qb + 1e-3 * np.sin(np.arange(qb.size))
        vb = np.cos(np.arange(qb.size))
        t_planar = best_time(lambda: beam._elastic(qb, vb, True))
        us = 1e6 / n
        print(f"{n:>6} {t_f * us:>9.3f} {t_fk * us:>13.3f} {t_asm * us:>9.3f} "
              f"{(t_fk + t_asm) * us:>8.3f} {t_planar * us:>11.3f} "
              f"{held_bytes(cable) / n:>10.0f} {tangent_bytes / n:>10.0f}")


if __name__ == "__main__":
    main()
