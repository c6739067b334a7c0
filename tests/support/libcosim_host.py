"""libcosim (the Open Simulation Platform's co-simulation library, through libcosimpy) as a
third-party FMI host for the tests, run in a process of its own.

A separate process because (1) libcosim crashes the process on some inputs instead of
reporting an error (an SSP file without its algorithm annotation: a null algorithm), which
must not take pytest down, and (2) a Python FMU there starts from an interpreter that has
imported none of the project: it runs the sources it embeds, as in any other host.  The
environment holds nothing but ``PATH=/usr/bin:/bin`` and one BLAS thread.

``python libcosim_host.py SPEC.json OUT.json`` (``run_libcosim`` of
tests/test_fmu/cosim/test_libcosim.py, with the test session's interpreter) reads ``spec`` and
writes ``{"component.variable": [value after step 1, 2, ...]}`` (the host's time grid:
``spec["steps"]`` values, the first at ``t0 + h``).  ``spec``:

* ``step`` [s], ``steps``: libcosim's fixed-step algorithm, ``steps`` steps of ``step``;
* ``ssp``: an ``.ssp``/``.ssd`` loaded with ``CosimExecution.from_ssp_file`` (its step
  from the file when ``step`` is None), or ``fmus``: ``{instance: path}`` added with
  ``add_local_slave`` and ``connections``: ``[["out.var", "in.var"], ...]``;
* ``start``: ``{instance: {variable: value}}`` initial values (float, int or str);
* ``inputs``: ``{instance: {variable: [value for step 1, 2, ...]}}``, set through an
  override manipulator before each step;
* ``observe``: ``{instance: [variable, ...]}``, read with a last-value observer.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from libcosimpy._internal import get_last_error_message
from libcosimpy.CosimExecution import CosimExecution
from libcosimpy.CosimLogging import CosimLogLevel, log_output_level
from libcosimpy.CosimManipulator import CosimManipulator
from libcosimpy.CosimObserver import CosimObserver
from libcosimpy.CosimSlave import CosimLocalSlave

__all__ = ["run"]

NANOSECONDS_PER_SECOND = 1e9  # libcosim counts time in integer nanoseconds


def check(ok, what: str) -> None:
    """libcosimpy answers True/False or 0/-1; stop with libcosim's own message."""
    if ok is False or ok is None or (type(ok) is int and ok < 0):
        raise SystemExit(f"libcosim: {what}: {get_last_error_message()}")


def run(spec: dict) -> dict[str, list[float]]:
    step = spec.get("step")
    step_ns = None if step is None else int(round(step * NANOSECONDS_PER_SECOND))
    if spec.get("ssp"):
        ex = (CosimExecution.from_ssp_file(spec["ssp"]) if step_ns is None
              else CosimExecution.from_ssp_file(spec["ssp"], step_size=step_ns))
    else:
        ex = CosimExecution.from_step_size(step_ns)
        for name, path in spec["fmus"].items():
            check(ex.add_local_slave(CosimLocalSlave(path, name)) >= 0, f"adding {name}")
    index = {info.name.decode(): info.index for info in ex.slave_infos()}
    refs = {name: {v.name.decode(): v.reference for v in ex.slave_variables(i)}
            for name, i in index.items()}
    for out, inp in spec.get("connections", []):
        (so, vo), (si, vi) = out.split(".", 1), inp.split(".", 1)
        check(ex.connect_real_variables(index[so], refs[so][vo], index[si], refs[si][vi]) == 0,
              f"connecting {out} -> {inp}")
    for name, values in spec.get("start", {}).items():
        for var, value in values.items():
            setter = (ex.string_initial_value if isinstance(value, str) else
                      ex.integer_initial_value if isinstance(value, int) else
                      ex.real_initial_value)
            check(setter(index[name], refs[name][var], value), f"initial value {name}.{var}")
    manipulator = CosimManipulator.create_override()
    ex.add_manipulator(manipulator)
    observer = CosimObserver.create_last_value()
    ex.add_observer(observer)
    observed = [(name, var) for name, names in spec["observe"].items() for var in names]
    out: dict[str, list[float]] = {f"{n}.{v}": [] for n, v in observed}
    for k in range(spec["steps"]):
        for name, signals in spec.get("inputs", {}).items():
            manipulator.slave_real_values(index[name], [refs[name][v] for v in signals],
                                          [signal[k] for signal in signals.values()])
        check(ex.step(1), f"step {k + 1}")
        for name, names in spec["observe"].items():
            for var, value in zip(names, observer.last_real_values(
                    index[name], [refs[name][v] for v in names])):
                out[f"{name}.{var}"].append(value)
    return out


if __name__ == "__main__":
    log_output_level(CosimLogLevel.WARNING)
    spec_file, out_file = sys.argv[1:3]
    Path(out_file).write_text(json.dumps(run(json.loads(Path(spec_file).read_text()))))
