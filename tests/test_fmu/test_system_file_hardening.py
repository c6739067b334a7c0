"""System files in the field, second round (issue 22 items 9, 11, 12): a file names only
the project's own Python blocks unless asked, SSP 2.0 typed values are read as XML Schema
and range-checked, a parameter bound twice is refused, names with control characters are
refused."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from flexcosim.cli import main
from fmu.cosim.ssp import SSPError, load_system

TESTS = Path(__file__).resolve().parents[1]


def _json_system(folder: Path, block: str, name: str = "b", parameters=None) -> Path:
    path = folder / "system.json"
    entry = {"name": name, "block": block}
    if parameters is not None:
        entry["parameters"] = parameters
    path.write_text(json.dumps({"components": [entry],
                                "experiment": {"stop_time": 0.01, "step": 0.01}}))
    return path


# -- item 12: safe by default ----------------------------------------------------------
def test_a_module_outside_the_project_is_not_imported_unless_allowed(tmp_path):
    """Was: `this` printed the Zen of Python and a local module wrote a file on load."""
    (tmp_path / "writer_blocks.py").write_text(
        "import pathlib\npathlib.Path(__file__).with_name('ran').write_text('x')\n"
        "from mbdcore.blocks import Block\nclass B(Block):\n"
        "    def outputs(self):\n        return {}\n")
    for block in ("this:Anything", "writer_blocks:B"):
        path = _json_system(tmp_path, block)
        proc = subprocess.run([sys.executable, "-m", "flexcosim", "cosim", str(path)],
                              cwd=tmp_path, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 2, proc.stderr
        assert "Zen of Python" not in proc.stdout and "Beautiful" not in proc.stdout
        assert not (tmp_path / "ran").exists()
        [line] = proc.stderr.splitlines()
        assert f"'{block}'" in line and "not one of the project's own" in line
        assert "--allow-python-blocks" in line and "allow_python_blocks=True" in line
    # asked for: the local module is imported and its block runs
    proc = subprocess.run([sys.executable, "-m", "flexcosim", "cosim", str(path),
                           "--allow-python-blocks"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "ran").exists()


def test_the_projects_own_blocks_load_by_default_and_no_python_blocks_refuses_them(tmp_path):
    path = _json_system(tmp_path, "controllers.laws.pid:PIDController")
    system = load_system(path)
    assert type(system.by_name["b"].block).__name__ == "PIDController"
    assert main(["cosim", str(path), "-q"]) == 0
    with pytest.raises(SSPError, match="allow_python_blocks=False, --no-python-blocks"):
        load_system(path, allow_python_blocks=False)
    assert main(["cosim", str(path), "--no-python-blocks"]) == 2
    with pytest.raises(ValueError, match="allow_python_blocks = 'yes'"):
        load_system(path, allow_python_blocks="yes")


def test_a_package_named_like_the_projects_elsewhere_is_not_the_projects(tmp_path):
    """A folder controllers/ in the working directory (first on sys.path with
    ``python -m``) is not the installed package: refused, never imported."""
    pkg = tmp_path / "controllers"
    pkg.mkdir()
    for name in ("__init__.py", "evil.py"):
        (pkg / name).write_text(
            "import pathlib\npathlib.Path(__file__).parent.with_name('ran').write_text('x')\n")
    path = _json_system(tmp_path, "controllers.evil:B")
    proc = subprocess.run([sys.executable, "-m", "flexcosim", "cosim", str(path)],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2, proc.stderr
    assert "'controllers.evil:B', which is not one of the project's own" in proc.stderr
    assert not (tmp_path / "ran").exists()
