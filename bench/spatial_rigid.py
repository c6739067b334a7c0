"""Spatial rigid bodies (issue 14): the long runs behind tests/test_mbdcore/spatial/test_spatial_rigid.py,
printed, not asserted (docs/spatial.md, "Measured").

    python3 bench/spatial_rigid.py [--quick] [top] [free] [bricard]

1. ``top``: heavy symmetric top (mbdcore.models.spatial_mechanisms.HEAVY_TOP) started in
   steady precession; relative error of the precession angle after 10 revolutions and
   the largest nutation deviation, RK4 (index 1) and generalized-alpha (rho_inf = 1),
   at several steps.
2. ``free``: torque-free asymmetric box tumbling 20 s; largest relative drift of the
   energy and of the angular momentum for generalized-alpha rho_inf = 1, Bathe and RK4.
3. ``bricard``: Bricard's linkage (IFToMM A04), 10 s from rest: energy variation
   relative to |E0| (potential datum at the origin) and to the largest kinetic energy,
   largest violation of all constraints (the removed redundant one included), point P3
   against an RK4 run at h = 5e-4 s, and the wall time, for generalized-alpha
   (rho_inf = 1), Bathe and RK4.
``--quick``: shorter runs (a check that the script works).
"""
from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")   # steadier timings (see tests/conftest)

import numpy as np  # noqa: E402

from mbdcore.dae.simulate import simulate  # noqa: E402
from mbdcore.models.spatial_mechanisms import HEAVY_TOP, bricard, heavy_top  # noqa: E402
from mbdcore.spatial import SpatialSystem  # noqa: E402

METHOD_OPTIONS = {"generalized-alpha": {"rho_inf": 1.0}, "bathe": {}, "rk4": {}}


def run(system, t_end, h, method, **kw):
    t0 = time.perf_counter()
    r = simulate(system, t_end, h, method, **METHOD_OPTIONS[method], **kw)
    return r, time.perf_counter() - t0


def top(quick: bool) -> None:
    omega = HEAVY_TOP["precession_rate"]
    revolutions = 2 if quick else 10
    t_end = revolutions * 2 * np.pi / omega
    print(f"\nheavy top, {revolutions} revolutions (Omega = {omega} rad/s, theta = "
          f"{HEAVY_TOP['nutation']} rad)")
    print(f"{'method':>18} {'h [s]':>8} {'rel. rate error':>16} {'nutation dev [rad]':>19}"
          f" {'wall [s]':>9}")
    cases = [("rk4", 2.5e-3), ("rk4", 1.25e-3), ("rk4", 6.25e-4), ("rk4", 5e-4),
             ("generalized-alpha", 2.5e-3), ("generalized-alpha", 6.25e-4)]
    if quick:
        cases = cases[:1]
    for method, h in cases:
        s = heavy_top()
        r, wall = run(s, t_end, h, method, record_every=50)
        w = r.q[:, s.body("top").index + 9:s.body("top").index + 12]
        azimuth = np.unwrap(np.arctan2(w[:, 1], w[:, 0]))
        nutation = np.arccos(np.clip(w[:, 2], -1, 1))
        err = (azimuth[-1] - azimuth[0]) / (omega * r.t[-1]) - 1.0
        print(f"{method:>18} {h:8.3g} {err:16.3e} "
              f"{np.abs(nutation - HEAVY_TOP['nutation']).max():19.3e} {wall:9.1f}")


def free(quick: bool) -> None:
    t_end = 4.0 if quick else 20.0
    print(f"\ntorque-free box (I = 0.2, 0.3, 0.4 kg m^2), {t_end:g} s")
    print(f"{'method':>18} {'h [s]':>8} {'energy drift':>13} {'momentum drift':>15} "
          f"{'wall [s]':>9}")
    for method in ("generalized-alpha", "bathe", "rk4"):
        steps = (1e-2, 5e-3, 2.5e-3, 1e-3) + ((5e-4,) if method == "rk4" else ())
        for h in ((1e-2,) if quick else steps):
            s = SpatialSystem()
            s.add_body("box", mass=2.0, inertia=(0.2, 0.3, 0.4),
                       angular_velocity=(1.0, 0.2, 3.0), velocity=(0.1, 0.0, 0.0))
            r, wall = run(s, t_end, h, method, record_every=10)
            E = np.array([s.energy(t, q, v) for t, q, v in zip(r.t, r.q, r.v)])
            H = np.array([s.angular_momentum(q, v) for q, v in zip(r.q, r.v)])
            print(f"{method:>18} {h:8.3g} {np.abs(E - E[0]).max() / E[0]:13.3e} "
                  f"{np.linalg.norm(H - H[0], axis=1).max() / np.linalg.norm(H[0]):15.3e} "
                  f"{wall:9.1f}")


def p3(system, result):
    rod3 = system.body("rod3")
    return result.q[:, rod3.index:rod3.index + 3]


def bricard_runs(quick: bool) -> None:
    t_end = 1.0 if quick else 10.0
    record = 10
    print(f"\nBricard's mechanism (IFToMM A04), {t_end:g} s from rest")
    s = bricard()
    ref_h = 1e-3 if quick else 5e-4
    ref, wall = run(s, t_end, ref_h, "rk4", record_every=round(1e-2 / ref_h))
    print(f"redundant equations removed: {s.redundant_equations}; reference RK4 h = "
          f"{ref_h:g} s ({wall:.0f} s)")
    p_ref = p3(s, ref)
    print(f"{'method':>18} {'h [s]':>8} {'dE/|E0|':>10} {'dE/max T':>10} {'constraints':>12}"
          f" {'P3 error [m]':>13} {'wall [s]':>9} {'Newton/step':>12}")
    cases = [("generalized-alpha", 1e-2), ("generalized-alpha", 2e-3),
             ("generalized-alpha", 1e-3), ("bathe", 2e-3), ("bathe", 1e-3), ("rk4", 2e-3)]
    if quick:
        cases = cases[2:4]
    for method, h in cases:
        s = bricard()
        r, wall = run(s, t_end, h, method, record_every=max(1, round(1e-2 / h)))
        E = np.array([s.energy(t, q, v) for t, q, v in zip(r.t, r.q, r.v)])
        kinetic = max(s.kinetic_energy(v, q) for q, v in zip(r.q, r.v))
        viol = max(np.abs(s.all_constraints(t, q)).max() for t, q in zip(r.t, r.q))
        err = np.abs(p3(s, r) - p_ref).max()
        iters = r.stats.get("iterations_per_step", float("nan"))
        print(f"{method:>18} {h:8.3g} {np.abs(E - E[0]).max() / abs(E[0]):10.2e} "
              f"{np.abs(E - E[0]).max() / kinetic:10.2e} {viol:12.2e} {err:13.3e} "
              f"{wall:9.1f} {iters:12.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cases", nargs="*", default=["top", "free", "bricard"])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    for case in args.cases:
        {"top": top, "free": free, "bricard": bricard_runs}[case](args.quick)


if __name__ == "__main__":
    main()
