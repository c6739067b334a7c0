"""The C-source FMUs compiled with the package: which, and writing their code.

Every model of ``flexcosim export-c`` (:data:`flexcosim.catalog.C_MODELS`) in its default
configuration has its code (``model_config.h`` and ``model.c``, which hold no number
that a parameter's value decides: ``fmu.fmi.export_c``) kept in
``fmu/fmi/native/prebuilt/<model name>/``; ``setup.py`` compiles each into a binary that
reads an export's numbers from the FMU's resources.  So on a machine without a C
compiler an export of the same structure (the default, or other values of its
parameters that keep it: ``--set l1=0.6``, not ``--set n_modes=3``) still gets a
binary, and ``flexcosim demo --c-fmus`` runs.

``python -m flexcosim.prebuilt`` rewrites the folders from the current code (after a
change to a model's C or to the wrapper); ``tests/test_flexcosim/test_prebuilt.py``
fails until it is run, naming the command.
"""
from __future__ import annotations

import shutil
import sys
import tempfile
import zipfile
from pathlib import Path

from flexcosim.catalog import C_MODELS, resolve
from fmu.fmi.export_c import PREBUILT_SOURCES, export_c_fmu

__all__ = ["PREBUILT_MODELS", "prebuilt_code", "write_prebuilt", "main"]

#: The models whose default export is compiled with the package (``statespace`` has no
#: default: its matrices come from a file).
PREBUILT_MODELS = tuple(name for name, m in C_MODELS.items() if m.block is not None)

#: What an export's code is made of (the rest of sources/ is the package's own files).
CODE_FILES = ("model_config.h", "model.c")


def prebuilt_code(model: str) -> tuple[str, dict[str, bytes]]:
    """(FMU model name, {file name: bytes}) of ``model``'s default export's code."""
    block, name, _ = C_MODELS[model]
    with tempfile.TemporaryDirectory(prefix="flexcosim_prebuilt_") as tmp:
        fmu = export_c_fmu(resolve(block), Path(tmp), model_name=name, compile=False)
        with zipfile.ZipFile(fmu) as z:
            return name, {f: z.read(f"sources/{f}") for f in CODE_FILES}


def write_prebuilt(folder: Path = PREBUILT_SOURCES) -> list[Path]:
    """Rewrite ``folder`` with the code of every :data:`PREBUILT_MODELS` export."""
    if folder.exists():
        shutil.rmtree(folder)
    written = []
    for model in PREBUILT_MODELS:
        name, code = prebuilt_code(model)
        (folder / name).mkdir(parents=True)
        for file, data in code.items():
            (folder / name / file).write_bytes(data)
        written.append(folder / name)
    return written


def main() -> int:
    for path in write_prebuilt():
        print(path)
    print("rebuild the package (pip install . or pip install -e .) to compile them",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
