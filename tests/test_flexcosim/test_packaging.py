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
from fmu.cosim.system_file import load_system
from fmu.fmi.export_c import export_c_fmu
from mbdcore.models.manipulator import FlexibleManipulatorBlock
from support import ROOT



def test_the_installed_distribution_carries_the_licence():
    files = importlib.metadata.files("flexcosim") or []
    assert any(f.name == "LICENSE" for f in files), files
    meta = importlib.metadata.metadata("flexcosim")
    assert meta["License-Expression"] == "MIT"
    assert "MIT License" in (ROOT / "LICENSE").read_text()


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel of this source tree, built as pip builds it (an isolated environment)."""
    tmp_path = tmp_path_factory.mktemp("wheel")
    # built from a copy: pip builds in the source folder and would leave build/ there
    src = tmp_path / "src"
    skip = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", "build", "*.so")
    src.mkdir()
    for name in ("pyproject.toml", "setup.py", "README.md", "LICENSE"):
        shutil.copy2(ROOT / name, src / name)
    for package in ("mbdcore", "fmu", "controllers", "flexcosim"):
        shutil.copytree(ROOT / package, src / package, ignore=skip)
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w",
                           str(tmp_path), str(src)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    (built,) = tmp_path.glob("flexcosim-*.whl")
    return built


@pytest.mark.slow  # builds the wheel in an isolated environment (fetches setuptools)
def test_the_built_wheel_carries_the_licence_and_the_sources(wheel):
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        assert {"mbdcore/py.typed", "fmu/py.typed", "controllers/py.typed",
                "flexcosim/py.typed"} <= set(names)
        # every C source and header is in the wheel (C FMUs embed them; kernels are
        # checked against them)
        native = {p.relative_to(ROOT).as_posix()
                  for package in ("mbdcore", "fmu", "controllers", "flexcosim")
                  for p in (ROOT / package).rglob("native/**/*") if p.suffix in (".c", ".h")}
        assert len(native) > 10 and native <= set(names), sorted(native - set(names))
        licence = [n for n in names if n.endswith(".dist-info/licenses/LICENSE")]
        assert licence, names
        assert z.read(licence[0]) == (ROOT / "LICENSE").read_bytes()


@pytest.mark.slow
def test_the_wheel_is_a_platform_wheel_with_every_compiled_part(wheel):
    """The C is compiled when the package is built: the wheel is tagged for this platform
    and holds every kernel module, the FMI wrapper and a binary per kept C FMU code."""
    assert not wheel.name.endswith("-none-any.whl"), wheel.name
    with zipfile.ZipFile(wheel) as z:
        compiled = {n.split("/")[-1].split(".")[0] for n in z.namelist() if n.endswith(".so")}
    kernels = {"_newton", "_beam_kinematics", "_ancf", "_constraint_plan", "_system_terms",
               "_redundancy",
               "_ancf3d", "_arm", "_rigid_arm", "_drive", "_antenna_axis", "_joint_laws",
               "_pid", "_lqg", "_notch", "_antenna_servo", "_log_proxy", "_flexcosim_fmi2"}
    assert kernels <= compiled, kernels - compiled
    kept = [f for f in (ROOT / "fmu" / "fmi" / "native" / "prebuilt").iterdir() if f.is_dir()]
    assert len([c for c in compiled if c.startswith("_cfmu_")]) == len(kept) > 5


@pytest.fixture(scope="module")
def no_compiler_site(wheel, tmp_path_factory):
    """The wheel installed into a folder, and an environment in which it runs with no C
    compiler to be found (PATH holds nothing but this Python) and empty HOME and cache."""
    tmp = tmp_path_factory.mktemp("site")
    site = tmp / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target",
                    str(site), str(wheel)], check=True, capture_output=True)
    bin_dir = tmp / "bin"
    bin_dir.mkdir()
    # a script, not a link: the interpreter finds its virtual environment by its own path
    (bin_dir / "python3").write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    (bin_dir / "python3").chmod(0o755)
    home = tmp / "home"
    home.mkdir()
    env = {"PATH": str(bin_dir), "PYTHONPATH": str(site), "HOME": str(home),
           "XDG_CACHE_HOME": str(home / ".cache"), "OPENBLAS_NUM_THREADS": "1",
           "MPLBACKEND": "Agg"}
    probe = subprocess.run(["python3", "-c", "import shutil, mbdcore; print(mbdcore.__file__);"
                            "print(shutil.which('gcc'), shutil.which('cc'))"],
                           env=env, capture_output=True, text=True, cwd=tmp)
    assert probe.returncode == 0, probe.stderr
    assert probe.stdout.splitlines() == [str(site / "mbdcore" / "__init__.py"), "None None"]
    return env, tmp


def _run(env, cwd, *args):
    return subprocess.run(["python3", *args], env=env, cwd=cwd, capture_output=True,
                          text=True, timeout=600)


@pytest.mark.slow
def test_without_a_compiler_the_c_fmu_demo_runs(no_compiler_site):
    env, tmp = no_compiler_site
    done = _run(env, tmp, "-m", "flexcosim", "demo", "--c-fmus", "-o", "demo", "--stop", "1")
    assert done.returncode == 0, done.stderr[-3000:]
    assert (tmp / "demo" / "results.csv").is_file() and (tmp / "demo" / "closed_loop.png").is_file()
    for fmu in (tmp / "demo" / "fmus").glob("*C.fmu"):
        with zipfile.ZipFile(fmu) as z:     # the package's binary with the export's numbers
            assert {f"binaries/linux64/{fmu.stem}.so", "resources/model_data.bin"} <= set(z.namelist())
    # nothing compiled, nothing cached by flexcosim (matplotlib keeps its font list there)
    assert not (tmp / "home" / ".cache" / "flexcosim").exists()


@pytest.mark.slow
def test_without_a_compiler_export_c_of_another_structure_writes_sources_and_says_so(
        no_compiler_site):
    env, tmp = no_compiler_site
    done = _run(env, tmp, "-m", "flexcosim", "export-c", "manipulator", "--set", "n_modes=3",
                "-o", "arm3")
    assert done.returncode == 0, done.stderr
    assert "no C compiler here" in done.stderr and "sources only and no binary" in done.stderr
    assert "Traceback" not in done.stderr
    (fmu,) = (tmp / "arm3").glob("*.fmu")
    with zipfile.ZipFile(fmu) as z:
        names = z.namelist()
    assert "sources/model.c" in names and not [n for n in names if n.startswith("binaries/")]


@pytest.mark.slow
def test_without_a_compiler_the_python_arm_fmu_runs_in_fmpy(no_compiler_site):
    env, tmp = no_compiler_site
    script = ("from fmpy import simulate_fmu\n"
              "from fmu.fmi.build import build_fmu\n"
              "from mbdcore.models.manipulator import FlexibleManipulatorBlock\n"
              "path = build_fmu(FlexibleManipulatorBlock, 'pyfmu', model_name='Arm')\n"
              "r = simulate_fmu(str(path), stop_time=0.2, step_size=1e-3,\n"
              "                 start_values={'tau1': 0.5}, output=['theta1'])\n"
              "print(r['theta1'][-1])\n")
    done = _run(env, tmp, "-c", script)
    assert done.returncode == 0, done.stderr[-3000:]
    # the same move as the block here: 0.5 N m held for 200 steps of 1 ms from rest
    block = FlexibleManipulatorBlock()
    block.set_inputs({"tau1": 0.5})
    for k in range(200):
        block.do_step(k * 1e-3, 1e-3)
    expected = block.outputs()["theta1"]
    assert expected > 1e-3
    assert float(done.stdout.strip().splitlines()[-1]) == pytest.approx(expected, rel=1e-12)


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
