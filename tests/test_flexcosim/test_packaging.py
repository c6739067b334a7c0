"""Packaging and the newcomer's first minutes (issue 13 items 29-30): the licence ships,
the version is one number everywhere, the command line runs."""
from __future__ import annotations

import importlib.metadata
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import flexcosim

ROOT = Path(__file__).resolve().parents[2]


def test_the_installed_distribution_carries_the_licence():
    files = importlib.metadata.files("flexcosim") or []
    assert any(f.name == "LICENSE" for f in files), files
    meta = importlib.metadata.metadata("flexcosim")
    assert meta["License-Expression"] == "MIT"
    assert "MIT License" in (ROOT / "LICENSE").read_text()


@pytest.mark.slow  # builds the wheel in an isolated environment (fetches setuptools)
def test_the_built_wheel_carries_the_licence(tmp_path):
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w",
                    str(tmp_path), str(ROOT)], check=True, capture_output=True)
    (wheel,) = tmp_path.glob("flexcosim-*.whl")
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        assert {"mbdcore/py.typed", "fmu/py.typed", "controllers/py.typed",
                "flexcosim/py.typed"} <= set(names)
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
