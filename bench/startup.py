"""Start-up times of the command line and of the packages (printed, never asserted).

    python3 bench/startup.py [--runs 7]

Each case is a fresh process (``subprocess``), timed from launch to exit on the wall
clock; printed is the median of ``--runs`` rounds over all cases, with the fastest and
the slowest.  The
command is the ``flexcosim`` script beside this interpreter (``python -m flexcosim``
where it is not installed).  ``python -c pass`` is the interpreter's own start, the floor
under every other line.  Set ``OPENBLAS_NUM_THREADS=1`` on a shared machine: numpy's
BLAS otherwise starts a thread per core on import.

What a case imports, module by module: ``python -X importtime -c "import fmu.cosim"``.
"""
from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path


def _command() -> list[str]:
    """The installed ``flexcosim`` script of this interpreter's environment, else ``-m``."""
    script = shutil.which("flexcosim", path=str(Path(sys.executable).parent))
    return [script] if script else [sys.executable, "-m", "flexcosim"]


def cases() -> list[tuple[str, list[str]]]:
    cli = _command()
    python = [sys.executable, "-c"]
    return [
        ("python -c pass", python + ["pass"]),
        ("flexcosim --version", cli + ["--version"]),
        ("flexcosim --help", cli + ["--help"]),
        ("flexcosim demp (mistyped command)", cli + ["demp"]),
        ("flexcosim build manipulatr (mistyped model)", cli + ["build", "manipulatr"]),
        ("import mbdcore", python + ["import mbdcore"]),
        ("import fmu", python + ["import fmu"]),
        ("import controllers", python + ["import controllers"]),
        ("import fmu.cosim", python + ["import fmu.cosim"]),
        ("import mbdcore.dae", python + ["import mbdcore.dae"]),
        ("import controllers.laws", python + ["import controllers.laws"]),
        ("import controllers.design", python + ["import controllers.design"]),
    ]


def wall_time(argv: list[str]) -> float:
    t0 = time.perf_counter()
    # the exit code is not checked: a mistyped command exits with 2 by design
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="runs per case (default 7)")
    args = parser.parse_args()
    print(f"{' '.join(_command())}; median of {args.runs} runs [s] (fastest, slowest)")
    table = cases()
    times: dict[str, list[float]] = {label: [] for label, _ in table}
    # round after round over all cases: a load that comes and goes on a shared machine
    # then falls on every case alike instead of on whichever ran at the time
    for _ in range(args.runs):
        for label, argv in table:
            times[label].append(wall_time(argv))
    for label, t in times.items():
        print(f"  {label:45s} {statistics.median(t):6.3f}   ({min(t):.3f}, {max(t):.3f})")


if __name__ == "__main__":
    main()
