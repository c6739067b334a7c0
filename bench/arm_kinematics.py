"""Range of validity of the arm's kinematics (printed, not asserted; docs/manipulator.md).

    python3 bench/arm_kinematics.py [--scales 0.5 1 2 3 5 10] [--elements 8]

The open-loop case of docs/benchmarks.md §1 (1.2 s) with the torques scaled: the arm
built from ANCF beams in the general engine (generalized-alpha, h = 2.5e-4 s) against the
minimal-coordinate arm (4 modes per link, RK4 at h = 1e-4 s) with the second-order and the
exact kinematics: largest joint-angle difference and largest tip deflection / length.
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from mbdcore.dae.simulate import simulate
from mbdcore.models.manipulator import FlexibleManipulator, bang_bang_torque
from mbdcore.models.mechanisms import two_link_arm
from mbdcore.multibody.ancf import ANCFBeam


def ancf_arm(n_elements: int, ea: float = 1e4):
    return two_link_arm(lambda n, L, ra, ei, at: ANCFBeam(
        n, at, (at[0] + L, at[1]), n_elements, ra, ei, ea))


def main(scales, elements: int) -> None:
    print(f"{'torques x':>9} {'max |w|/l':>10} {'second order [rad]':>19} {'exact [rad]':>12} "
          f"{'ANCF [s]':>9}")
    for scale in scales:
        torque = lambda t: [scale * u for u in bang_bang_torque(t)]
        wall = time.perf_counter()
        r = simulate(ancf_arm(elements), 1.2, 2.5e-4, "generalized-alpha", record_every=40,
                     inputs=lambda t: dict(zip(("tau1", "tau2"), torque(t))))
        wall = time.perf_counter() - wall
        ref = np.column_stack([r["hub1.phi"], r["rotor.phi"] - r["stator.phi"]])
        gaps, ratio = {}, 0.0
        for kinematics in ("second-order", "exact"):
            arm = FlexibleManipulator(n_modes=4, kinematics=kinematics)
            _, x = arm.simulate(torque, 1.2, 1e-4)
            gaps[kinematics] = np.abs(x[::100, :2] - ref).max()
            if kinematics == "exact":
                ratio = max(max(abs(o["w1"]) / 0.5, abs(o["w2"]) / 0.5)
                            for o in map(arm.outputs, x[::100]))
        print(f"{scale:9g} {ratio:10.2f} {gaps['second-order']:19.2e} {gaps['exact']:12.2e} "
              f"{wall:9.1f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scales", type=float, nargs="+", default=[0.5, 1, 2, 3, 5, 10])
    parser.add_argument("--elements", type=int, default=8)
    args = parser.parse_args()
    main(args.scales, args.elements)
