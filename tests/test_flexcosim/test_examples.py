"""Every example runs as a user runs it (``python examples/<name>.py DIR``), writes
what its docstring promises and shows the progress of its long runs on stderr: a smoke
test of the whole stack, not of numbers (the numbers the examples print are asserted by
the physics and controller tests)."""
from __future__ import annotations

import re
import subprocess
import sys

import numpy as np
import pytest

from mbdcore.models.model_file import load_model
from support import EXAMPLES, ROOT


WRITES = {
    "manipulator_input_shaping": ["input_shaping_closed_loop.png",
                                  "input_shaping_deflection.png", "input_shaping_unshaped.csv",
                                  "input_shaping_shaped.csv"],
    "manipulator_lqr": ["lqg_closed_loop.png", "lqg_2dof_closed_loop.png",
                        "lqg_loops_bode.png", "lqg_closed_loop.csv", "lqg_2dof_closed_loop.csv"],
    "tune_manipulator": ["tune_manipulator.png", "tune_manipulator.csv"],
    "antenna_pointing": ["pointing_step.csv", "pointing_ramp.csv", "pointing_ramp_gust.csv",
                         "antenna_pointing.png"],
    "antenna_deployment": ["deployment_smooth.csv", "deployment_bang-bang.csv",
                           "antenna_deployment.png"],
    "ring_truss_deployment": ["ring_truss_deployment.csv", "ring_truss_configurations.png",
                              "ring_truss_deployment.gif", "ring_truss.json"],
}


def test_every_example_is_listed():
    assert sorted(p.stem for p in EXAMPLES.glob("*.py")) == sorted(WRITES)


def test_the_readme_lists_every_example():
    """The README's row of ``examples/`` names the examples the folder holds, no more and
    no fewer (it had left out ``ring_truss_deployment.py``)."""
    row = next(line for line in (ROOT / "README.md").read_text().splitlines()
               if line.startswith("| `examples/` |"))
    listed = re.findall(r"`([\w.-]+\.py)`", row)
    assert sorted(listed) == sorted(p.name for p in EXAMPLES.glob("*.py"))


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(WRITES))
def test_example_runs_and_writes_its_files(name, tmp_path):
    run = subprocess.run([sys.executable, str(EXAMPLES / f"{name}.py"), str(tmp_path)],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "Traceback" not in run.stderr
    # stderr is a pipe: the progress of the long runs as whole lines, each ending at 100 %
    assert "100 % (" in run.stderr and "\r" not in run.stderr
    for file in WRITES[name]:
        path = tmp_path / file
        assert path.is_file() and path.stat().st_size > 0, f"{name} did not write {file}"
        if file.endswith(".png"):
            assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        elif file.endswith(".gif"):
            assert path.read_bytes()[:6] in (b"GIF87a", b"GIF89a")
        elif file.endswith(".json"):                # a model file: it loads again
            system = load_model(path)
            assert sorted(system.inputs) == [f"voltage{k}" for k in range(6)]
        elif file == "tune_manipulator.csv":       # the sweep's table, one row per case
            data = np.genfromtxt(path, delimiter=",", names=True, deletechars="")
            assert data.dtype.names == ("payload_kg", "kp1_Nm_per_rad", "residual_vibration_m")
            assert len(data) == 9 and np.isfinite(data["residual_vibration_m"]).sum() >= 6
        else:
            data = np.genfromtxt(path, delimiter=",", names=True, deletechars="")
            assert data.dtype.names[0] == "time" and len(data) > 10
            assert np.all(np.isfinite(data.view(np.float64)))
