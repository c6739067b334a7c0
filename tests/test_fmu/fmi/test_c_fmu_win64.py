"""Windows binaries of the C-source FMUs (issue 25, item 1).

Every C-source FMU carries ``binaries/win64/<id>.dll`` beside ``binaries/linux64`` when
MinGW-w64 is installed: cross-compiled from the FMU's own sources with the same flags,
without a warning, exporting exactly the FMI 2.0 co-simulation functions and importing
only what every Windows has (KERNEL32.dll, msvcrt.dll).  Where wine is installed, the
DLL runs in the C host (support/c/host.c) cross-compiled the same way, and its results
equal the Linux binary's in the same host on Linux.  Without MinGW-w64 (or wine) the
tests are skipped and say so.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import zipfile
from pathlib import Path

import numpy as np
import pytest

from flexcosim.catalog import C_MODELS, resolve
from fmu.fmi.export_c import BUILD_COMMANDS, binary_platforms, export_c_fmu
from mbdcore.cbuild import find_compiler

from support.fmi import HOST_SOURCE, Unzipped, start
from support.fmi import FMI2_HEADERS

pytestmark = pytest.mark.skipif(find_compiler("win64") is None,
                                reason="MinGW-w64 (x86_64-w64-mingw32-gcc) is not installed")

#: The functions an FMI 2.0 binary exports (fmi2Functions.h): the common ones, the
#: co-simulation ones and those of Model Exchange.
FMI2_CS_FUNCTIONS = {
    "fmi2GetTypesPlatform", "fmi2GetVersion", "fmi2SetDebugLogging", "fmi2Instantiate",
    "fmi2FreeInstance", "fmi2SetupExperiment", "fmi2EnterInitializationMode",
    "fmi2ExitInitializationMode", "fmi2Terminate", "fmi2Reset", "fmi2GetReal",
    "fmi2GetInteger", "fmi2GetBoolean", "fmi2GetString", "fmi2SetReal", "fmi2SetInteger",
    "fmi2SetBoolean", "fmi2SetString", "fmi2GetFMUstate", "fmi2SetFMUstate",
    "fmi2FreeFMUstate", "fmi2SerializedFMUstateSize", "fmi2SerializeFMUstate",
    "fmi2DeSerializeFMUstate", "fmi2GetDirectionalDerivative",
    "fmi2SetRealInputDerivatives", "fmi2GetRealOutputDerivatives", "fmi2DoStep",
    "fmi2CancelStep", "fmi2GetStatus", "fmi2GetRealStatus", "fmi2GetIntegerStatus",
    "fmi2GetBooleanStatus", "fmi2GetStringStatus",
    # Model Exchange: the same binary serves it (fmi2_cs.c)
    "fmi2EnterEventMode", "fmi2NewDiscreteStates", "fmi2EnterContinuousTimeMode",
    "fmi2CompletedIntegratorStep", "fmi2SetTime", "fmi2SetContinuousStates",
    "fmi2GetDerivatives", "fmi2GetEventIndicators", "fmi2GetContinuousStates",
    "fmi2GetNominalsOfContinuousStates"}

#: The models whose export needs no file (statespace needs --from)
MODELS = sorted(name for name, entry in C_MODELS.items() if entry.block is not None)


def pe_exports_and_imports(dll: Path) -> tuple[set[str], set[str]]:
    """The names a PE file exports and the DLLs it imports, read by MinGW's objdump."""
    objdump = shutil.which("x86_64-w64-mingw32-objdump")
    if objdump is None:
        pytest.skip("x86_64-w64-mingw32-objdump (binutils-mingw-w64) is not installed")
    text = subprocess.run([objdump, "-p", str(dll)], capture_output=True, text=True,
                          check=True).stdout
    imports = set(re.findall(r"DLL Name: (\S+)", text))
    table = text.split("[Ordinal/Name Pointer] Table", 1)[1].split("\n\n", 1)[0]
    exports = set(re.findall(r"\]\s+(\w+)\s*$", table, flags=re.M))
    return exports, imports


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """Every C model exported once with its default parameters."""
    out = tmp_path_factory.mktemp("win64")
    return {name: export_c_fmu(resolve(C_MODELS[name].block), out,
                               model_name=C_MODELS[name].model_name)
            for name in MODELS}


@pytest.mark.parametrize("name", MODELS)
def test_every_c_fmu_has_a_windows_dll_that_exports_only_fmi(exported, name, tmp_path):
    fmu = exported[name]
    assert binary_platforms(fmu) == ["linux64", "win64"]
    identifier = C_MODELS[name].model_name
    with zipfile.ZipFile(fmu) as z:
        dll = tmp_path / f"{identifier}.dll"
        dll.write_bytes(z.read(f"binaries/win64/{identifier}.dll"))
        build = z.read("sources/buildDescription.xml").decode()
    exports, imports = pe_exports_and_imports(dll)
    assert exports == FMI2_CS_FUNCTIONS
    assert {i.lower() for i in imports} == {"kernel32.dll", "msvcrt.dll"}
    assert BUILD_COMMANDS["win64"].format(id=identifier) in build


def test_the_sources_cross_compile_without_a_warning_even_pedantic(exported, tmp_path):
    """The build line of sources/buildDescription.xml, with -pedantic added: nothing on
    stderr (before: 7 warnings about the visibility attribute, which PE files ignore)."""
    fmu = Unzipped(exported["manipulator"], tmp_path / "arm")
    (fmu.dir / "binaries" / "win64").mkdir(parents=True, exist_ok=True)
    command = BUILD_COMMANDS["win64"].format(id="again").split() + ["-pedantic"]
    done = subprocess.run(command, cwd=fmu.dir, capture_output=True, text=True)
    assert done.returncode == 0 and done.stderr == "", done.stderr


# ---------------------------------------------------------------------------------
# under wine
# ---------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def wine_host(tmp_path_factory):
    """The C host cross-compiled for win64 and run under wine (its own prefix, made once):
    ``wine_host(script) -> stdout``."""
    wine = shutil.which("wine")
    if wine is None:
        pytest.skip("wine is not installed")
    folder = tmp_path_factory.mktemp("wine_host")
    exe = folder / "host.exe"
    subprocess.run([find_compiler("win64"), "-O2", "-Wall", f"-I{FMI2_HEADERS}",
                    str(HOST_SOURCE), "-o", str(exe), "-static", "-lpthread"],
                   check=True, capture_output=True)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(folder),
           "WINEPREFIX": str(folder / "prefix"), "WINEDEBUG": "-all"}

    def run(script: str) -> str:
        done = subprocess.run([wine, str(exe)], input=script, capture_output=True, text=True,
                              env=env, cwd=folder, timeout=300)
        assert done.returncode == 0 and done.stdout.endswith("host done\n"), \
            f"exit {done.returncode}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
        return done.stdout

    return run


def _run_script(fmu: Unzipped, binary: Path, h: float, inputs: list[str], outputs: list[str],
                u_file: Path, y_file: Path) -> str:
    script = start(fmu).replace(f"load {fmu.binary}", f"load {binary}")
    return (script + f"run 0 {h} {len(inputs)} {fmu.vrs(*inputs)} {len(outputs)} "
            f"{fmu.vrs(*outputs)} {u_file} {y_file}\nterminate 0\nfree 0\n")


@pytest.mark.parametrize("name, inputs, outputs, n", [
    ("manipulator", ["tau1", "tau2"], ["theta1", "theta2", "w1", "w2", "x_tip", "y_tip"], 2000),
    ("joint-pd", ["theta1_ref", "theta2_ref", "omega1_ref", "omega2_ref", "theta1", "theta2",
                  "omega1", "omega2"], ["tau1", "tau2"], 500),
])
def test_the_dll_under_wine_equals_the_linux_binary(exported, host, wine_host, tmp_path, name,
                                                    inputs, outputs, n):
    """The same inputs through both binaries, each in the C host of its platform: the
    results agree to 1e-12 relative (the same C, two compilers and C libraries: their
    libm's sin/cos/sqrt may differ in the last bit, which the arm's 2000 steps carry)."""
    fmu = Unzipped(exported[name], tmp_path / name)
    t = np.arange(n) * 1e-3
    u = np.column_stack([0.3 * np.sin((k + 1) * 2.0 * t) for k in range(len(inputs))])
    u_file = tmp_path / "u.txt"
    np.savetxt(u_file, u, fmt="%.17g")
    linux = "\n".join(host(_run_script(fmu, fmu.binary, 1e-3, inputs, outputs, u_file,
                                       tmp_path / "linux.csv")).lines)
    dll = fmu.dir / "binaries" / "win64" / f"{fmu.identifier}.dll"
    windows = wine_host(_run_script(fmu, dll, 1e-3, inputs, outputs, u_file,
                                    tmp_path / "windows.csv"))
    for out in (linux, windows):
        assert f"run steps {n}\n" in out and "run status 0\n" in out
    y_linux = np.loadtxt(tmp_path / "linux.csv", delimiter=",", ndmin=2)
    y_windows = np.loadtxt(tmp_path / "windows.csv", delimiter=",", ndmin=2)
    assert y_linux.shape == (n, len(outputs)) and np.all(np.isfinite(y_linux))
    scale = np.abs(y_linux).max(axis=0)
    assert np.all(scale > 0)
    np.testing.assert_array_less(np.abs(y_windows - y_linux).max(axis=0), 1e-12 * scale)


def test_the_platforms_built_are_those_asked_for(tmp_path, capsys):
    """``platforms`` / ``--platform``: only the binaries asked for (the DLL alone, or the
    Linux library alone); an unknown platform is refused naming the accepted ones."""
    from flexcosim.cli import main
    trajectory = resolve(C_MODELS["trajectory"].block)
    dll_only = export_c_fmu(trajectory, tmp_path / "w", platforms=("win64",))
    assert binary_platforms(dll_only) == ["win64"]
    so_only = export_c_fmu(trajectory, tmp_path / "l", platforms=("linux64",))
    assert binary_platforms(so_only) == ["linux64"]
    with pytest.raises(ValueError, match="platforms = .*'linux64', 'win64'"):
        export_c_fmu(trajectory, tmp_path / "x", platforms=("mac",))
    assert main(["export-c", "trajectory", "--platform", "win64", "-o", str(tmp_path / "c")]) == 0
    assert "binaries for win64" in capsys.readouterr().err
