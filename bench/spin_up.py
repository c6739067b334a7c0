"""Hub-beam spin-up at Omega_s = 6 rad/s (Kane, Ryan & Banerjee 1987; docs/benchmarks.md
§2): the floating-frame modal beam with its two kinematics against the engine's ANCF
beam refined in space and time (printed, never asserted).

For each model: CPU time, and the transverse tip deflection's difference from the
reference (ANCF 16 elements, generalized-alpha at h = 1.25 ms; 32 elements agree with
16 to 1e-6 of the peak) at 5, 10, 15 and 20 s, at the minimum, and the largest over
0-20 s, each as a fraction of the peak deflection.  The modal beams run RK4 at 2 ms
(1 ms gives the same to 1e-8 of the peak).  ``--stiff`` adds the ANCF beam with its
axial stiffness multiplied by 100, nearer the inextensible limit the modal beam's exact
kinematics assume.

    python bench/spin_up.py            # about 5 minutes on 2 cores
    python bench/spin_up.py --quick    # 0-10 s, fewer models
    python bench/spin_up.py --write-reference tests/data/spin_up_omega6_inextensible.json

The last writes the near-inextensible reference (ANCF 16 elements, EA x 100, h = 1.25 ms,
0-20 s, every 50 ms) that tests/test_mbdcore/multibody/test_flexible.py compares the modal beam's
exact kinematics with (about 2 minutes).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")   # steadier timings (see tests/conftest)

import numpy as np  # noqa: E402

from mbdcore.dae.simulate import simulate  # noqa: E402
from mbdcore.models.mechanisms import hub_beam  # noqa: E402
from mbdcore.multibody.ancf import ANCFBeam  # noqa: E402
from mbdcore.multibody.flexible import ModalBeam  # noqa: E402

RATE = 6.0  # rad/s


def tip_history(factory, t_end: float, h: float, **method):
    """(t [s], transverse tip deflection in the hub frame [m], CPU time [s])."""
    s = hub_beam(factory, RATE)
    beam, hub = s.body("beam"), s.body("hub")
    cpu = time.process_time()
    r = simulate(s, t_end, h, record_every=int(round(0.01 / h)), **method)
    cpu = time.process_time() - cpu
    tips = []
    for q in r.q:
        p = s.view(q, np.zeros_like(q))[beam].point(beam.markers["tip"])[0]
        th = q[hub.index + 2]
        tips.append(-math.sin(th) * p[0] + math.cos(th) * p[1])
    return r.t, np.array(tips), cpu


def ancf(k: int, ea_factor: float = 1.0):
    return lambda n, L, ra, ei, ea: ANCFBeam(n, (0.0, 0.0), (L, 0.0), k, ra, ei, ea * ea_factor)


def modal(k: int, kinematics: str):
    return lambda n, L, ra, ei, ea: ModalBeam(n, L, ra, ei, n_modes=k, kinematics=kinematics)


def write_reference(path: str) -> None:
    h = 1.25e-3
    t, tip, cpu = tip_history(ancf(16, 100.0), 20.0, h, method="generalized-alpha",
                              rho_inf=0.8)
    keep = np.arange(0, len(t), 5)                      # every 50 ms
    data = {"what": "hub-beam spin-up, Omega_s = 6 rad/s (docs/benchmarks.md §2): transverse "
                    "tip deflection in the hub frame [m] of the engine's ANCF beam, 16 "
                    "elements, axial stiffness EA x 100 (near the inextensible limit), "
                    "generalized-alpha rho_inf 0.8 (GGL) at h = 1.25 ms",
            "made_by": "python bench/spin_up.py --write-reference PATH",
            "cpu_s": round(cpu, 1), "t": t[keep].tolist(), "tip": tip[keep].tolist(),
            "minimum": float(tip.min()), "t_minimum": float(t[np.argmin(tip)])}
    with open(path, "w") as f:
        json.dump(data, f, indent=0)
    print(f"wrote {path} ({cpu:.1f} s CPU)")


def main(quick: bool, stiff: bool) -> None:
    t_end = 10.0 if quick else 20.0
    implicit = dict(method="generalized-alpha", rho_inf=0.8)
    t_ref, ref, cpu = tip_history(ancf(16), t_end, 1.25e-3, **implicit)
    peak = np.abs(ref).max()
    print(f"reference: ANCF 16 elements, h = 1.25 ms, {cpu:.1f} s CPU; peak {peak:.6f} m "
          f"at {t_ref[np.argmax(np.abs(ref))]:.2f} s")
    times = [t for t in (5.0, 10.0, 15.0, 20.0) if t <= t_end]
    print(f"{'model':>28} {'CPU [s]':>8} " + " ".join(f"{f'{t:g} s':>8}" for t in times)
          + f" {'minimum':>8} {'largest':>8}   (difference / peak)")
    runs = [("ANCF 8 elements, 2.5 ms", ancf(8), 2.5e-3, implicit)]
    if not quick:
        runs.append(("ANCF 16 elements, 2.5 ms", ancf(16), 2.5e-3, implicit))
    if stiff:
        runs.append(("ANCF 16, EA x 100, 1.25 ms", ancf(16, 100.0), 1.25e-3, implicit))
    for kinematics in ("second-order", "exact"):
        for k in ((4,) if quick else (3, 4, 5, 8)):
            runs.append((f"modal {k} modes, {kinematics}", modal(k, kinematics), 2e-3,
                         dict(method="rk4")))
    for label, factory, h, method in runs:
        t, tip, cpu = tip_history(factory, t_end, h, **method)
        on_ref = np.interp(t_ref, t, tip)
        at = [abs(np.interp(T, t, tip) - np.interp(T, t_ref, ref)) / peak for T in times]
        print(f"{label:>28} {cpu:8.1f} " + " ".join(f"{a:8.1e}" for a in at)
              + f" {abs(tip.min() - ref.min()) / peak:8.1e} "
              f"{np.abs(on_ref - ref).max() / peak:8.1e}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--stiff", action="store_true")
    parser.add_argument("--write-reference", metavar="PATH")
    args = parser.parse_args()
    if args.write_reference:
        write_reference(args.write_reference)
    else:
        main(args.quick, args.stiff)
