"""Cost of the linear state-space block and of importing mbdcore (printed, never asserted).

    OPENBLAS_NUM_THREADS=1 python3 bench/linear_block.py [--steps 20000]   (0: imports only)

* ``do_step``: microseconds per communication step of ``LinearSystemBlock``
  (x' = A x + B u, y = C x + D u; 1 ms step, 10 substeps, inputs set and outputs read
  each step) on chains of n/2 masses joined by springs and dampers (n = 2, 12, 48
  states), for the methods with a compiled stepping loop (RK4, Gill) and two that call
  the right-hand side from Python (Treanor, BDF2);
* the import time of ``mbdcore.models`` in a fresh process (``python -X importtime``,
  the cumulative microseconds of the top-level package) and of the heaviest
  third-party packages in it;
* the time from a fresh process to the block's first completed ``do_step`` (import,
  instantiate, one step), with the user's cache folder as it is and empty
  (``XDG_CACHE_HOME`` pointed at an empty folder: what a first run on a machine pays;
  the C kernels are built with the package, so nothing of ours is cached there).
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

from mbdcore.models.linear import LinearSystemBlock, state_space_config

H, SUBSTEPS = 1e-3, 10
METHODS = ("rk4", "gill", "treanor", "bdf2")


def mass_chain(n_masses: int):
    """A, B, C, D of n_masses masses of 1 kg in a line, the first tied to the ground, each
    to the next by 1e4 N/m and 2 N s/m; a force on the last; output its position."""
    k, c = 1e4, 2.0
    lap = 2.0 * np.eye(n_masses) - np.eye(n_masses, k=1) - np.eye(n_masses, k=-1)
    lap[-1, -1] = 1.0                          # the last mass has one neighbour
    n = 2 * n_masses
    A = np.zeros((n, n))
    A[:n_masses, n_masses:] = np.eye(n_masses)
    A[n_masses:, :n_masses] = -k * lap
    A[n_masses:, n_masses:] = -c * lap
    B = np.zeros((n, 1))
    B[-1, 0] = 1.0
    C = np.zeros((1, n))
    C[0, n_masses - 1] = 1.0
    return state_space_config(A=A, B=B, C=C, D=[[0.0]])


def step_cost(config, method: str, steps: int) -> float:
    """Microseconds per set_inputs + do_step + outputs (after 100 untimed steps)."""
    block = LinearSystemBlock.configured(config, "Bench")(method=method, substeps=SUBSTEPS)
    for k in range(100):
        block.set_inputs({"u0": 1.0})
        block.do_step(k * H, H)
    start = time.perf_counter()
    for k in range(100, 100 + steps):
        block.set_inputs({"u0": 1.0 if (k // 500) % 2 else -1.0})
        block.do_step(k * H, H)
        block.outputs()
    return 1e6 * (time.perf_counter() - start) / steps


FIRST_STEP = """
import time
t0 = time.perf_counter()
from mbdcore.models.linear import LinearSystemBlock, state_space_config
cls = LinearSystemBlock.configured(state_space_config(A=[[0.0, 1.0], [-100.0, -1.0]],
                                   B=[[0.0], [1.0]], C=[[1.0, 0.0]], D=[[0.0]]), "First")
b = cls()
b.set_inputs({"u0": 1.0})
b.do_step(0.0, 1e-3)
print(time.perf_counter() - t0)
"""


def first_step(env: dict) -> float:
    """Seconds from a fresh process's first statement to its first completed do_step."""
    done = subprocess.run([sys.executable, "-c", FIRST_STEP], capture_output=True, text=True,
                          env=env, check=True)
    return float(done.stdout.split()[-1])


def import_times(env: dict) -> dict:
    """Import time [us] of ``import mbdcore.models`` in a fresh process (``python -X
    importtime``) by top-level package: the cumulative time of each module whose importer
    is outside its package (so a package's total holds what it pulled in first)."""
    done = subprocess.run([sys.executable, "-X", "importtime", "-c", "import mbdcore.models"],
                          capture_output=True, text=True, env=env, check=True)
    rows = []                                   # (nesting level, package, cumulative us)
    for line in done.stderr.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        _, cum, name = line[len("import time:"):].split("|")
        level = (len(name) - len(name.lstrip())) // 2
        rows.append((level, name.strip().split(".")[0], int(cum)))
    totals = {}
    for i, (level, package, cum) in enumerate(rows):
        # a module's importer is the next line of lower level (children print first)
        importer = next((p for lv, p, _ in rows[i + 1:] if lv < level), None)
        if importer != package:
            totals[package] = totals.get(package, 0) + cum
    return totals


def main(steps: int) -> None:
    if steps:
        step_costs(steps)
    imports_and_first_step()


def step_costs(steps: int) -> None:
    print(f"LinearSystemBlock.do_step [us] (1 ms step, {SUBSTEPS} substeps, {steps} steps)")
    print(f"{'states':>7} " + " ".join(f"{m:>9}" for m in METHODS))
    for n_masses in (1, 6, 24):
        config = mass_chain(n_masses)
        print(f"{2 * n_masses:7d} " + " ".join(f"{step_cost(config, m, steps):9.1f}"
                                               for m in METHODS))


def imports_and_first_step() -> None:
    env = dict(os.environ)
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    runs = [import_times(env) for _ in range(5)]
    median = {name: sorted(r.get(name, 0) for r in runs)[2] for name in runs[0]}
    print(f"\nimport mbdcore.models: {median['mbdcore'] / 1e3:.0f} ms (median of 5, python "
          "-X importtime); the largest packages the process imports:")
    for name, us in sorted(median.items(), key=lambda kv: -kv[1])[:6]:
        if name != "mbdcore":
            print(f"    {name:>10}: {us / 1e3:6.0f} ms")
    warm = sorted(first_step(env) for _ in range(5))[2]
    with tempfile.TemporaryDirectory() as empty:
        cold_env = dict(env, XDG_CACHE_HOME=empty)
        cold = first_step(cold_env)
    print(f"fresh process to the first do_step: {warm:.3f} s (median of 5), {cold:.3f} s "
          "with an empty user cache folder")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20000,
                        help="timed do_step calls per row (0: only the imports)")
    main(parser.parse_args().steps)
