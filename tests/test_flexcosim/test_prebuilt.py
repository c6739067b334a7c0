"""C-source FMUs on a machine without a C compiler: the binaries compiled with the package.

An export's code (model.c, model_config.h) holds no number a parameter's value decides;
the numbers go to model_data.c, or, for a binary compiled with the package, to
resources/model_data.bin, which that binary reads and checks at fmi2Instantiate.
"""
from __future__ import annotations

import struct
import zipfile
from pathlib import Path

import numpy as np
import pytest
from fmpy import read_model_description

import fmu.fmi.export_c as export_c
from support.fmi import ERROR, OK, Unzipped, start
from support.fmi import Instance
from flexcosim.prebuilt import PREBUILT_MODELS, prebuilt_code
from fmu.fmi.export_c import (MODEL_DATA_FILE, PREBUILT_SOURCES, SourceOnlyWarning,
                              export_c_fmu, prebuilt_binary)
from mbdcore.cbuild import code_files, skeleton_digest
from flexcosim.catalog import C_MODELS, resolve
from mbdcore.models.manipulator import ARM_OUTPUTS, FlexibleManipulatorBlock

H = 1e-3   # the arm's communication step [s]


@pytest.fixture
def no_compiler(monkeypatch):
    """This machine as one without a C compiler, for export_c."""
    monkeypatch.setattr(export_c, "find_compiler", lambda platform="linux64": None)


@pytest.mark.parametrize("model", PREBUILT_MODELS)
def test_the_kept_code_is_what_an_export_writes_now(model):
    name, code = prebuilt_code(model)
    for file, data in code.items():
        kept = PREBUILT_SOURCES / name / file
        assert kept.is_file() and kept.read_bytes() == data, (
            f"{kept} is not the code export-c writes now: run python -m flexcosim.prebuilt "
            "and rebuild the package")


@pytest.mark.parametrize("model", PREBUILT_MODELS)
def test_the_code_holds_no_number_of_the_parameters(model, tmp_path):
    """Two exports that differ in every number a parameter decides have the same code:
    a table value (the arm's l1, a gain's range) and the start values."""
    block, name = resolve(C_MODELS[model].block), C_MODELS[model].model_name
    first = export_c_fmu(block, tmp_path / "a", model_name=name, compile=False)
    changed = {p.name: p.default * 1.1 for p in block.PARAMETERS
               if isinstance(p.default, float) and p.default > 0 and p.max is None}
    second = export_c_fmu(block, tmp_path / "b", model_name="Other" + name,
                          parameters=changed, compile=False)
    with zipfile.ZipFile(first) as a, zipfile.ZipFile(second) as b:
        for file in ("model.c", "model_config.h"):
            assert a.read(f"sources/{file}") == b.read(f"sources/{file}"), file
        if changed:
            assert a.read("sources/model_data.c") != b.read("sources/model_data.c")


@pytest.mark.parametrize("model", PREBUILT_MODELS)
def test_every_kept_code_has_its_binary_in_the_package(model, tmp_path):
    _, name, _ = C_MODELS[model]
    with zipfile.ZipFile(export_c_fmu(resolve(C_MODELS[model].block), tmp_path, model_name=name,
                                      compile=False)) as z:
        z.extractall(tmp_path / "x")
    assert prebuilt_binary(skeleton_digest(code_files(tmp_path / "x" / "sources"))) is not None


def _run_arm(fmu_file: Path, folder: Path, steps: int = 300, **params) -> np.ndarray:
    unzipped = Unzipped(fmu_file, folder)
    arm = Instance(unzipped.md, str(unzipped.dir), step=H, **params)
    assert not arm.refused and arm.exit_refused is None, arm.errors()
    rows = []
    for k in range(steps):
        arm.set("tau1", 0.4 * np.sin(0.02 * k))
        arm.set("tau2", -0.1)
        arm.step()
        rows.append(arm.get(*ARM_OUTPUTS))
    arm.close()
    return np.array(rows)


@pytest.mark.parametrize("parameters", [{}, {"l1": 0.6, "theta1_0": 0.2}],
                         ids=["default", "other-numbers"])
def test_without_a_compiler_the_arm_gets_the_package_binary_and_moves_as_compiled(
        parameters, tmp_path, monkeypatch):
    """The arm exported here with gcc, and as on a machine without one (the package's
    binary with resources/model_data.bin): the same outputs to the last bit over 300
    steps, for the default and for other numbers of the same structure."""
    compiled = export_c_fmu(FlexibleManipulatorBlock, tmp_path / "gcc", model_name="ArmC",
                            parameters=parameters, compile=True)
    monkeypatch.setattr(export_c, "find_compiler", lambda platform="linux64": None)
    packaged = export_c_fmu(FlexibleManipulatorBlock, tmp_path / "none", model_name="ArmC",
                            parameters=parameters)
    with zipfile.ZipFile(packaged) as z:
        names = z.namelist()
    assert "binaries/linux64/ArmC.so" in names and MODEL_DATA_FILE in names
    assert "sources/model_data.c" in names              # still buildable on a target
    ours = _run_arm(compiled, tmp_path / "a")
    theirs = _run_arm(packaged, tmp_path / "b")
    assert np.array_equal(ours, theirs)
    assert np.abs(ours[:, 0]).max() > 1e-3               # the arm moved


def test_without_a_compiler_another_structure_is_written_as_sources_with_a_warning(
        tmp_path, no_compiler):
    with pytest.warns(SourceOnlyWarning, match="no C compiler here.*gcc -std=c99"):
        path = export_c_fmu(FlexibleManipulatorBlock, tmp_path, model_name="Arm3C",
                            parameters={"n_modes": 3})
    with zipfile.ZipFile(path) as z:
        names = z.namelist()
    assert not [n for n in names if n.startswith("binaries/")]
    assert {"sources/fmi2_cs.c", "sources/model.c", "sources/model_data.c"} <= set(names)
    assert read_model_description(str(path)).coSimulation.modelIdentifier == "Arm3C"


def test_the_package_binary_on_request_where_a_compiler_is_too(tmp_path):
    """``compile="prebuilt"`` (the demo's FMUs): the binary compiled with the package,
    byte for byte, though gcc is here, with the export's numbers beside it; a structure
    the package has no binary for is exported as without the option (here, on a machine
    without a compiler, its sources with the warning)."""
    path = export_c_fmu(resolve(C_MODELS["joint-pd"].block), tmp_path, model_name="PDC",
                        parameters={"kp1": 150.0}, compile="prebuilt")
    with zipfile.ZipFile(path) as z:
        z.extractall(tmp_path / "x")
    binary = prebuilt_binary(skeleton_digest(code_files(tmp_path / "x" / "sources")))
    assert (tmp_path / "x" / "binaries" / "linux64" / "PDC.so").read_bytes() == \
        binary.read_bytes()
    assert (tmp_path / "x" / MODEL_DATA_FILE).is_file()
    with pytest.raises(ValueError, match="compile = 'yes': accepted None, True, False or "
                                         "'prebuilt'"):
        export_c_fmu(FlexibleManipulatorBlock, tmp_path, compile="yes")


def test_the_package_binary_on_request_falls_back_as_without_it(tmp_path, no_compiler):
    with pytest.warns(SourceOnlyWarning, match="no C compiler here"):
        path = export_c_fmu(FlexibleManipulatorBlock, tmp_path, model_name="Arm3C",
                            parameters={"n_modes": 3}, compile="prebuilt")
    with zipfile.ZipFile(path) as z:
        assert not [n for n in z.namelist() if n.startswith("binaries/")]


# -- the data file is checked field by field ---------------------------------------------

@pytest.fixture
def packaged_arm(tmp_path, no_compiler) -> Unzipped:
    path = export_c_fmu(FlexibleManipulatorBlock, tmp_path, model_name="ArmC")
    return Unzipped(path, tmp_path / "unzipped")


def _data(fmu: Unzipped) -> Path:
    return fmu.dir / MODEL_DATA_FILE


def _instantiate(host, fmu: Unzipped) -> tuple[list[bool], list[str]]:
    run = host(start(fmu) + "free 0\n")
    return run.instantiated(), run.errors()


def _rewrite_checksum(data: bytearray) -> bytearray:
    checksum = 14695981039346656037
    for byte in data[:-8]:
        checksum = ((checksum ^ byte) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    data[-8:] = struct.pack("<Q", checksum)
    return data


def test_the_package_binary_runs_in_a_c_host_with_its_data(host, packaged_arm):
    run = host(start(packaged_arm) + f"set_real 0 {packaged_arm.vr['tau1']} 0.5\n"
               f"step 0 0 {H}\nget_real 0 {packaged_arm.vrs('theta1', 'omega1')}\n"
               "free 0\n", bare=True)
    assert run.instantiated() == [True] and run.statuses("step") == [OK]
    assert run.values()[0][1] > 0.0


@pytest.mark.parametrize("damage, message", [
    (lambda d: d[:-1], "bytes; this binary's model needs"),
    (lambda d: d + b"\0", "more than"),
    (lambda d: bytearray(b"XX") + d[2:], "not a flexcosim model data file"),
    (lambda d: d[:8] + bytearray(b"0123456789abcdef".ljust(32, b"\0")) + d[40:],
     "another structure"),
    (lambda d: d[:200] + bytearray([d[200] ^ 1]) + d[201:], "corrupt (checksum)"),
    (lambda d: _rewrite_checksum(d[:120] + bytearray(struct.pack("<d", float("nan")))
                                 + d[128:]), "is not finite"),
    (lambda d: _rewrite_checksum(d[:48] + bytearray(b"x" * 64) + d[112:]),
     "GUID field is not terminated"),
])
def test_a_damaged_data_file_is_refused_naming_what_is_wrong(host, packaged_arm, damage,
                                                             message):
    data = bytearray(_data(packaged_arm).read_bytes())
    _data(packaged_arm).write_bytes(bytes(damage(data)))
    instantiated, errors = _instantiate(host, packaged_arm)
    assert instantiated == [False]
    assert any(message in e for e in errors), errors


def test_a_missing_data_file_is_named(host, packaged_arm):
    _data(packaged_arm).unlink()
    instantiated, errors = _instantiate(host, packaged_arm)
    assert instantiated == [False]
    assert any("model_data.bin" in e and "cannot open" in e for e in errors), errors


def test_the_guid_comes_from_the_data_and_is_checked(host, packaged_arm):
    run = host(f"load {packaged_arm.binary}\ninstantiate 0 a {{not-the-guid}} "
               f"{packaged_arm.uri()} 0\n")
    assert run.instantiated() == [False]
    assert any(packaged_arm.guid in e for e in run.errors())
    assert ERROR in [int(s) for _, s, _, _ in run.logs]
