"""fmusim, the simulator of the Modelica Association's Reference-FMUs, as a third-party
FMI host for the tests (``tests/test_fmu/fmi/test_fmusim.py``).

fmusim is not built by the project: its sources are another project's, and no package
registry the project installs from ships it.  The tests run the fmusim found as
``$FMUSIM`` or as ``fmusim`` on ``PATH`` (a Reference-FMUs release or a build of its
``fmusim/`` folder; ``fmusim --version`` must answer) and are skipped, saying why, where
there is none (:func:`find_fmusim`).

What the comparisons rest on: fmusim writes its result CSV with ``%.16g`` (the time and
every Float64/Real output), 16 significant digits, one short of a double's round trip;
so a value fmusim computed equals the double another host computed exactly when it
equals that double printed with ``%.16g`` and read back (:func:`printed`).
"""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import numpy as np

__all__ = ["FMUSIM_VARIABLE", "find_fmusim", "write_input_csv", "run_fmusim", "read_result",
           "printed"]

#: the environment variable naming the fmusim executable
FMUSIM_VARIABLE = "FMUSIM"


def find_fmusim() -> tuple[Path | None, str]:
    """The fmusim to run and its ``--version`` line, or None and why there is none."""
    named = os.environ.get(FMUSIM_VARIABLE)
    path = named or shutil.which("fmusim")
    if path is None:
        return None, (f"fmusim not found: set {FMUSIM_VARIABLE} to an fmusim executable "
                      "(Modelica Reference-FMUs) or put one on PATH")
    try:
        done = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30)
    except OSError as error:
        return None, f"fmusim {path!r} does not run: {error}"
    # its exit status is not looked at: fmusim 0.0.31 answers --version with status 4
    if not done.stdout.startswith("fmusim "):
        return None, f"fmusim {path!r} --version answered {done.stdout + done.stderr!r}"
    return Path(path), done.stdout.strip()


def write_input_csv(path, time, **signals) -> Path:
    """An fmusim input file: a quoted header ``"time","<name>",...``, one row per time.

    ``time`` [s] is the column of breakpoints; each signal a sequence of the same length
    (a constant: repeat it).  Values are written with ``repr``, the double's shortest
    round trip, so fmusim reads back the very doubles given."""
    path = Path(path)
    columns = [np.asarray(time, dtype=float)] + [np.asarray(v, dtype=float)
                                                 for v in signals.values()]
    if any(c.shape != columns[0].shape or c.ndim != 1 for c in columns):
        raise ValueError("time and every signal: one-dimensional and of the same length")
    lines = [",".join(f'"{name}"' for name in ("time", *signals))]
    lines += [",".join(repr(float(c[i])) for c in columns) for i in range(len(columns[0]))]
    path.write_text("\n".join(lines) + "\n")
    return path


def read_result(path) -> np.ndarray:
    """fmusim's result CSV as a structured array named by its header (quotes removed)."""
    return np.genfromtxt(path, delimiter=",", names=True, deletechars="", dtype=float)


def run_fmusim(fmusim: Path, fmu, output, *options: str, read: bool = True):
    """Run ``fmusim OPTIONS --output-file OUTPUT FMU`` and return its result (``read``;
    else the result file's path: an FMI 3.0 array's cells hold space-separated values);
    an exit status other than 0 raises with what fmusim printed."""
    command = [str(fmusim), *options, "--output-file", str(output), str(fmu)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise AssertionError(f"{' '.join(command)} exited with {done.returncode}:\n"
                             f"{done.stdout}{done.stderr}")
    return read_result(output) if read else Path(output)


def printed(values) -> np.ndarray:
    """``values`` as fmusim's result file holds them: printed with ``%.16g``, read back."""
    return np.array([float(f"{v:.16g}") for v in np.ravel(values)]).reshape(np.shape(values))
