"""Restart at input discontinuities (issue 12, item 3): errors printed, not asserted.

    python3 bench/breakpoints.py [--arm] [--elements 4 8 16] [--h 5e-4]

1. A mass-spring (m = 1 kg, k = 4 pi^2 N/m: 1 Hz) at rest, under a force step of 1 N at
   t_s = 0.31 s, off the grid of h = 0.02 s; error of x(1 s) [m] against the exact
   x = F/k (1 - cos w (t - t_s)) for RK4, generalized-alpha and BDF2, without the
   breakpoint declared (the step is sampled at the next grid point: O(h)) and with
   ``breakpoints=[0.31]`` (the step split there, the integrator restarted).
2. ``--arm``: the two-link arm from ANCF beams (tests/test_mbdcore/models/test_ancf_arm.py),
   open loop with the bang-bang torques (jumps at 0.3 s and 0.6 s), generalized-alpha at
   h (default 5e-4 s) with 4, 8, 16 elements per link, without and with the breakpoints;
   the joint angles every 10 ms against the same model with 32 elements per link at the
   same h with the breakpoints declared (the reference: the same time discretisation, so
   what is left is the spatial error; docs/architecture.md, "Inputs that jump").
"""
from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")   # steadier timings (see tests/conftest)

import numpy as np  # noqa: E402

from mbdcore.dae.problem import ConstrainedProblem  # noqa: E402
from mbdcore.dae.simulate import simulate  # noqa: E402
from mbdcore.models.manipulator import bang_bang_torque  # noqa: E402
from mbdcore.models.mechanisms import two_link_arm  # noqa: E402
from mbdcore.multibody.ancf import ANCFBeam  # noqa: E402


class StepForceOscillator(ConstrainedProblem):
    """x'' = (F - k x)/m with the force F [N] an input (``"F"``)."""

    n, m = 1, 0

    def __init__(self, mass: float = 1.0, stiffness: float = 4 * np.pi ** 2):
        self.mass, self.stiffness, self.force = mass, stiffness, 0.0

    def mass_matrix(self, q):
        return np.array([[self.mass]])

    def forces(self, t, q, v):
        return np.array([self.force - self.stiffness * q[0]])

    def force_jacobians(self, t, q, v):
        return np.array([[-self.stiffness]]), np.zeros((1, 1))

    def set_input(self, name, value):
        self.force = float(value)

    def initial_state(self):
        return np.zeros(1), np.zeros(1)

    def energy(self, t, q, v):
        return 0.5 * self.mass * v[0] ** 2 + 0.5 * self.stiffness * q[0] ** 2

    def exact(self, t, t_step, force=1.0):
        w = np.sqrt(self.stiffness / self.mass)
        return np.where(t < t_step, 0.0, force / self.stiffness * (1 - np.cos(w * (t - t_step))))


def step_force_error(method: str, h: float, declared: bool, t_step: float = 0.31,
                     t_end: float = 1.0) -> float:
    """|x(t_end) - exact| [m] under a 1 N step at ``t_step`` [s]."""
    problem = StepForceOscillator()
    r = simulate(problem, t_end, h, method, inputs=lambda t: {"F": 1.0 * (t >= t_step)},
                 breakpoints=[t_step] if declared else None)
    return abs(r.q[-1, 0] - float(problem.exact(t_end, t_step)))


def ancf_arm(n_elements: int, ea: float = 1e4):
    return two_link_arm(lambda n, L, ra, ei, at: ANCFBeam(
        n, at, (at[0] + L, at[1]), n_elements, ra, ei, ea))


def arm_angles(n_elements: int, h: float, declared: bool, t_end: float = 1.2):
    """Joint angles [rad] every 10 ms of the ANCF arm, open loop (generalized-alpha)."""
    r = simulate(ancf_arm(n_elements), t_end, h, "generalized-alpha",
                 record_every=int(round(0.01 / h)), sparse=False,
                 inputs=lambda t: dict(zip(("tau1", "tau2"), bang_bang_torque(t))),
                 breakpoints=bang_bang_torque.breakpoints if declared else None)
    return np.column_stack([r["hub1.phi"], r["rotor.phi"] - r["stator.phi"]])


def main(arm: bool, elements, h: float) -> None:
    print("mass-spring, 1 N step at 0.31 s (off the grid of every h): |x(1 s) - exact| [m],"
          " observed order log(e1/e2)/log(h1/h2)")
    print(f"{'method':>18} {'h [s]':>7} {'undeclared':>11} {'order':>6} {'declared':>11} "
          f"{'order':>6}")
    steps = (0.04, 0.02, 0.008, 0.004)
    for method in ("rk4", "generalized-alpha", "bdf2"):
        prev = None
        for hs in steps:
            e = (step_force_error(method, hs, False), step_force_error(method, hs, True))
            orders = (["" for _ in e] if prev is None else
                      [f"{np.log(a / b) / np.log(prev[0] / hs):6.2f}"
                       for a, b in zip(prev[1], e)])
            print(f"{method:>18} {hs:7.3f} {e[0]:11.3e} {orders[0]:>6} {e[1]:11.3e} "
                  f"{orders[1]:>6}")
            prev = (hs, e)
    if not arm:
        return
    wall = time.perf_counter()
    ref = arm_angles(32, h, True)
    print(f"\nANCF arm, open loop, generalized-alpha h = {h:g} s: max joint-angle error "
          f"[rad] against 32 elements/link, breakpoints declared "
          f"({time.perf_counter() - wall:.0f} s)", flush=True)
    print(f"{'elements/link':>13} {'undeclared':>11} {'declared':>11}")
    for n in elements:
        errs = [np.abs(arm_angles(n, h, d) - ref).max() for d in (False, True)]
        print(f"{n:>13} {errs[0]:11.3e} {errs[1]:11.3e}", flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arm", action="store_true")
    parser.add_argument("--elements", type=int, nargs="+", default=[4, 8, 16])
    parser.add_argument("--h", type=float, default=5e-4)
    args = parser.parse_args()
    main(args.arm, args.elements, args.h)
