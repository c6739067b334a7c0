"""Cost of the spatial ANCF cable's and beam's elastic forces and tangents
(docs/spatial.md; printed, never asserted).

For N = 10 to 3000 elements of a cable bent out of every coordinate plane and moving
(Kelvin-Voigt damping on, so the damping tangent is made too): the wall time of one
evaluation of the forces alone, of the forces with the element tangents (one call of
native/ancf3d.c), and of the sparse assembly of K and C; per element, and the memory
the body keeps (its arrays, the CSR mass matrix and the assembly pattern) and a tangent
pair takes, per element.  Also the planar ANCF beam's forces+tangents per element for
comparison (8 coordinates per element against 12), and the same table for the fully
parameterised beam (24 coordinates per element; 4 Gauss strains and 5 nodal ones).

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
from mbdcore.spatial.ancf import ANCFBeam3D, ANCFCable  # noqa: E402


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


def bent_state(body):
    q, _ = body.initial_coordinates()
    s = np.repeat(body.node_arc, body.node_size)
    q = q + 1e-3 * np.sin(7.0 * s + np.arange(q.size))
    return q, np.cos(3.0 * s + np.arange(q.size))


def costs(body, n):
    """(forces, forces + element tangents, assembly) per element [us], bytes kept by
    the body and by a pair of sparse tangents, per element."""
    q, v = bent_state(body)
    t_f = best_time(lambda: body.internal_forces(q, v))
    t_fk = best_time(lambda: body._elastic(q, v, True))
    _, k_el, c_el = body._elastic(q, v, True)
    t_asm = best_time(lambda: (body._assemble_sparse(k_el), body._assemble_sparse(c_el)))
    K, C = body.tangent_matrices(q, v)
    tangent_bytes = sum(m.data.nbytes + m.indices.nbytes + m.indptr.nbytes for m in (K, C))
    us = 1e6 / n
    return t_f * us, t_fk * us, t_asm * us, held_bytes(body) / n, tangent_bytes / n


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
        t_f, t_fk, t_asm, body_b, tangent_b = costs(cable, n)
        beam = ANCFBeam("b", (0, 0), (3.0, 0.0), n, 1.0, 1.0, 1e6, damping=1e-3)
        qb, _ = beam.initial_coordinates()
        qb = qb + 1e-3 * np.sin(np.arange(qb.size))
        vb = np.cos(np.arange(qb.size))
        t_planar = best_time(lambda: beam._elastic(qb, vb, True)) * 1e6 / n
        print(f"{n:>6} {t_f:>9.3f} {t_fk:>13.3f} {t_asm:>9.3f} {t_fk + t_asm:>8.3f} "
              f"{t_planar:>11.3f} {body_b:>10.0f} {tangent_b:>10.0f}")
    print("\nfully parameterised ANCF beam (ANCFBeam3D), same table")
    print(f"{'N':>6} {'forces':>9} {'f + K_e, C_e':>13} {'assembly':>9} {'total':>8} "
          f"{'body B/el':>10} {'K, C B/el':>10}")
    for n in sizes:
        beam3 = ANCFBeam3D("b", (0, 0, 0), (1.0, 2.0, 2.0), n, 1.0, 1e6, 1.0, 4.0, 0.5,
                           1e-4, 1e-4, damping=1e-3)
        t_f, t_fk, t_asm, body_b, tangent_b = costs(beam3, n)
        print(f"{n:>6} {t_f:>9.3f} {t_fk:>13.3f} {t_asm:>9.3f} {t_fk + t_asm:>8.3f} "
              f"{body_b:>10.0f} {tangent_b:>10.0f}")


if __name__ == "__main__":
    main()
