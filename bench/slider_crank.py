"""Slider-crank 0-2 s: wall time and error of each integrator (the comparison of Ji et al. 2020).

For h = 1e-3 s and 1e-4 s, every method of the engine runs the slider-crank of
docs/benchmarks.md §6 (mbdcore.models.slider_crank) and is compared with a reference
(index-1 without stabilisation, DOP853 at rtol 1e-11): wall time [s], max error of the
final coordinates and velocities, constraint violation, energy drift with c = 0.

    python bench/slider_crank.py            # both step sizes (a few minutes)
    python bench/slider_crank.py --quick    # h = 1e-3 only
"""
from __future__ import annotations

import sys
import time

import numpy as np
from mbdcore.dae.simulate import reference_solution, simulate
from mbdcore.models.mechanisms import slider_crank

T_END = 2.0
METHODS = [
    ("index1", "rk4", {}), ("index1", "gill", {}), ("index1", "treanor", {}),
    ("index1", "bdf2", {}), ("index1", "bdf4", {}), ("index1", "rk45", {"rtol": 1e-8}),
    ("index1", "dop853", {"rtol": 1e-10}),
    ("index3", "generalized-alpha", {"rho_inf": 0.8}), ("index3", "hht", {}),
    ("index3", "bathe", {}), ("index3", "bathe-broyden", {}),
]


def main(quick: bool = False) -> None:
    system = slider_crank(damping=0.0)
    ref = reference_solution(system, T_END)
    print(f"slider-crank, 0-{T_END:g} s, c = 0; reference DOP853 rtol 1e-11")
    print(f"{'formulation':>11} {'method':>18} {'h [s]':>7} {'wall [s]':>9} {'error':>9} "
          f"{'violation':>9} {'max |dE|/E':>12}")
    for h in ((1e-3,) if quick else (1e-3, 1e-4)):
        for form, method, opts in METHODS:
            t0 = time.perf_counter()
            try:
                r = simulate(system, T_END, h, method, formulation=form,
                             record_every=int(round(0.01 / h)), **opts)
            except Exception as exc:  # a failing method is a result too
                print(f"{form:>11} {method:>18} {h:7.0e}   failed: {exc}")
                continue
            wall = time.perf_counter() - t0
            err = np.abs(np.concatenate([r.q[-1], r.v[-1]]) - ref).max()
            drift = np.abs(r.energy - r.energy[0]).max() / abs(r.energy[0])
            print(f"{form:>11} {method:>18} {h:7.0e} {wall:9.2f} {err:9.2e} "
                  f"{r.violation.max():9.1e} {drift:12.2e}")


if __name__ == "__main__":
    main(quick="--quick" in sys.argv)
