"""The hub-beam spin-up in 3D against the planar engine (issue 14, ANCF 3D acceptance):
``mbdcore.models.spatial_mechanisms.hub_beam_3d`` (natural-coordinate hub, hinge, angle
driver, ANCF cable held by a cable clamp) and ``mbdcore.models.mechanisms.hub_beam``
with the planar ANCF beam, same elements, step and method, over the whole spin-up to
Omega = 6 rad/s (Kane, Ryan & Banerjee 1987; 0-20 s).  Prints the largest tip
difference [m], the CPU time of each, and, with the hinge along (1, 1, 1), the largest
difference of the transverse tip deflection's size.  Nothing is asserted.

    OPENBLAS_NUM_THREADS=1 python bench/spatial_hub_beam.py [--elements 8] [--stop 20]
"""
from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")   # small dense LU: threads only hurt

import numpy as np  # noqa: E402

from mbdcore.dae.simulate import simulate  # noqa: E402
from mbdcore.models.mechanisms import hub_beam  # noqa: E402
from mbdcore.models.spatial_mechanisms import hub_beam_3d  # noqa: E402
from mbdcore.multibody.ancf import ANCFBeam  # noqa: E402


def run(system, stop, h):
    t0 = time.process_time()
    r = simulate(system, stop, h, "generalized-alpha", rho_inf=0.8,
                 record_every=int(round(0.01 / h)))
    cpu = time.process_time() - t0
    beam = system.body("beam")
    sl = slice(beam.index, beam.index + beam.n_coords)
    tips = np.array([system.view(q, np.zeros_like(q))[beam].point(beam.markers["tip"])[0]
                     for q in r.q])
    deflection = np.array([beam.tip_deflection(q[sl]) for q in r.q])
    return cpu, tips, deflection


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--elements", type=int, default=8)
    ap.add_argument("--stop", type=float, default=20.0, help="end time [s]")
    ap.add_argument("--step", type=float, default=2.5e-3, help="time step [s]")
    a = ap.parse_args()
    n, stop, h = a.elements, a.stop, a.step
    planar = hub_beam(lambda nm, L, ra, ei, ea: ANCFBeam(nm, (0.0, 0.0), (L, 0.0), n, ra, ei,
                                                         ea), 6.0)
    c2, tips2, d2 = run(planar, stop, h)
    c3, tips3, _ = run(hub_beam_3d(6.0, n), stop, h)
    print(f"{n} elements, h = {h:g} s, 0-{stop:g} s, generalized-alpha rho_inf = 0.8")
    print(f"  planar: {c2:.2f} s CPU; peak |tip deflection| {np.abs(d2).max():.4f} m")
    print(f"  3D, hinge along z: {c3:.2f} s CPU; max |tip - planar tip| "
          f"{np.abs(tips3[:, :2] - tips2).max():.2e} m, max |z| {np.abs(tips3[:, 2]).max():.1e} m")
    c3t, _, d3t = run(hub_beam_3d(6.0, n, axis=(1.0, 1.0, 1.0)), stop, h)
    err = np.abs(np.linalg.norm(d3t, axis=1) - np.abs(d2)).max()
    print(f"  3D, hinge along (1, 1, 1): {c3t:.2f} s CPU; max | |deflection| - planar | "
          f"{err:.2e} m")


if __name__ == "__main__":
    main()
