"""Packaging and the newcomer's first minutes (issue 13 items 29-30): the licence ships,
the version is one number everywhere, the command line runs."""
from __future__ import annotations

import importlib.metadata
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import flexcosim
from controllers.laws import QuinticJointTrajectory
from flexcosim.cli import main
from fmu.cosim.ssp import load_system
from fmu.fmi.export_c import export_c_fmu

ROOT = Path(__file__).resolve().parents[2]


def test_the_installed_distribution_carries_the_licence():
    files = importlib.metadata.files("flexcosim") or []
    assert any(f.name == "LICENSE" for f in files), files
    meta = importlib.metadata.metadata("flexcosim")
    assert meta["License-Expression"] == "MIT"
    assert "MIT License" in (ROOT / "LICENSE").read_text()


@pytest.mark.slow  # builds the wheel in an isolated environment (fetches setuptools)
def test_the_built_wheel_carries_the_licence(tmp_path):
    # built from a copy: pip builds in the source folder and would leave build/ there
    src = tmp_path / "src"
    skip = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", "build")
    src.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(ROOT / name, src / name)
    for package in ("mbdcore", "fmu", "controllers", "flexcosim"):
        shutil.copytree(ROOT / package, src / package, ignore=skip)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w",
                    str(tmp_path), str(src)], check=True, capture_output=True)
    (wheel,) = tmp_path.glob("flexcosim-*.whl")
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        assert {"mbdcore/py.typed", "fmu/py.typed", "controllers/py.typed",
                "flexcosim/py.typed"} <= set(names)
        # every C source and header the packages compile at run time is in the wheel
        native = {p.relative_to(ROOT).as_posix()
                  for package in ("mbdcore", "fmu", "controllers", "flexcosim")
                  for p in (ROOT / package).rglob("native/**/*") if p.suffix in (".c", ".h")}
        assert len(native) > 10 and native <= set(names), sorted(native - set(names))
        licence = [n for n in names if n.endswith(".dist-info/licenses/LICENSE")]
        assert licence, names
        assert z.read(licence[0]) == (ROOT / "LICENSE").read_bytes()


def test_version_is_the_installed_one():
    assert flexcosim.__version__ == importlib.metadata.version("flexcosim")


@pytest.mark.parametrize("command", [["flexcosim"], [sys.executable, "-m", "flexcosim"]])
def test_the_command_prints_the_installed_version(command):
    exe = Path(sys.executable).with_name("flexcosim")
    if command == ["flexcosim"]:
        command = [str(exe)]
    out = subprocess.run(command + ["--version"], check=True, capture_output=True, text=True)
    assert out.stdout.strip() == f"flexcosim {importlib.metadata.version('flexcosim')}"


@pytest.mark.parametrize("package", ["mbdcore", "fmu", "controllers", "flexcosim"])
def test_every_package_says_it_is_typed(package):
    # shipped: tests/test_architecture.py checks package-data, the wheel test above the wheel
    assert (ROOT / package / "py.typed").is_file()


@pytest.fixture(scope="module")
def trajectory_fmu(tmp_path_factory):
    """A real FMU, quick to make: the quintic reference as a C-source FMU."""
    out = tmp_path_factory.mktemp("fmu")
    return export_c_fmu(QuinticJointTrajectory, out / "traj.fmu")


def test_cosim_runs_a_single_fmu(trajectory_fmu, tmp_path, capsys):
    csv = tmp_path / "traj.csv"
    assert main(["cosim", str(trajectory_fmu), "--stop", "0.5", "--step", "0.01",
                 "-o", str(csv)]) == 0
    assert "51 points" in capsys.readouterr().out
    header, *rows = csv.read_text().splitlines()
    assert header.split(",") == ["time"] + [f"traj.{o.name}"
                                             for o in QuinticJointTrajectory.OUTPUTS]
    assert len(rows) == 51
    theta1 = [float(r.split(",")[1]) for r in rows]
    assert theta1[0] == 0.0 and 0.0 < theta1[-1] < QuinticJointTrajectory().params["theta1_end"]


def test_a_single_fmu_runs_its_default_experiment(trajectory_fmu, tmp_path, capsys):
    system = load_system(trajectory_fmu)
    assert [c.name for c in system.components] == ["traj"] and not system.connections
    # export_c_fmu writes DefaultExperiment startTime 0, stopTime 3, stepSize 1e-3
    assert system.experiment == {"start_time": 0.0, "stop_time": 3.0, "step": 1e-3}
    assert main(["cosim", str(trajectory_fmu)]) == 0
    assert "3001 points, t = 0 .. 3 s" in capsys.readouterr().out


def test_cosim_names_the_accepted_file_types(tmp_path, capsys):
    path = tmp_path / "system.txt"
    path.write_text("")
    assert main(["cosim", str(path)]) == 2
    assert ".fmu" in capsys.readouterr().err
