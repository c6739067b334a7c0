"""Build the Modelica Reference FMUs kept in ``support/c/reference_fmus`` (Stair,
Feedthrough, Resource; see its README) as their CMake build does: the model's
``model.c``, the shared ``src/fmi<V>Functions.c`` and ``src/cosimulation.c`` with
``FMI_VERSION`` and ``DISABLE_PREFIX`` defined, ``FMI<V>.xml`` as the model
description, Resource's ``y.txt`` in its resources."""
from __future__ import annotations

import shutil
import subprocess
import tempfile
import zipfile
from pathlib import Path

from fmu.fmi.export_c import FMI2_HEADERS, FMI3_HEADERS

SOURCES = Path(__file__).resolve().parent / "c" / "reference_fmus"
#: the FMI headers: the project's copies of the standard's (kept once, fmu/fmi/native)
FMI_HEADERS = {2: FMI2_HEADERS, 3: FMI3_HEADERS}
MODELS = ("Stair", "Feedthrough", "Resource")
#: the binaries folder of each FMI version on this machine
PLATFORM = {2: "linux64", 3: "x86_64-linux"}


def reference_result(model: str) -> Path:
    """The model's reference result shipped with its sources (``<model>_out.csv``)."""
    return SOURCES / model / f"{model}_out.csv"


def build_reference_fmu(model: str, out_dir: str | Path, fmi_version: int = 2,
                        cc: str = "gcc") -> Path:
    """Compile ``model`` into ``out_dir/<model>.fmu`` (FMI ``fmi_version``) and return it."""
    if model not in MODELS or fmi_version not in PLATFORM:
        raise ValueError(f"{model!r}, FMI {fmi_version}: accepted {MODELS}, FMI 2 or 3")
    out = Path(out_dir) / f"{model}.fmu"
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        binary = root / "binaries" / PLATFORM[fmi_version] / f"{model}.so"
        binary.parent.mkdir(parents=True)
        # their build's C dialect (gnu: strdup), not -std=c99
        subprocess.run([cc, "-O2", "-shared", "-fPIC", "-fvisibility=hidden",
                        f"-DFMI_VERSION={fmi_version}", "-DDISABLE_PREFIX",
                        f"-I{SOURCES / 'include'}", f"-I{FMI_HEADERS[fmi_version]}",
                        f"-I{SOURCES / model}",
                        str(SOURCES / model / "model.c"),
                        str(SOURCES / "src" / f"fmi{fmi_version}Functions.c"),
                        str(SOURCES / "src" / "cosimulation.c"), "-o", str(binary), "-lm"],
                       check=True, capture_output=True)
        shutil.copy(SOURCES / model / f"FMI{fmi_version}.xml", root / "modelDescription.xml")
        if (SOURCES / model / "y.txt").exists():
            (root / "resources").mkdir()
            shutil.copy(SOURCES / model / "y.txt", root / "resources" / "y.txt")
        with zipfile.ZipFile(out, "w") as z:
            for path in sorted(root.rglob("*")):
                if path.is_file():
                    z.write(path, path.relative_to(root).as_posix())
    return out
