"""C-source FMUs: a block's equations in C (:mod:`mbdcore.codegen`) inside a plain C
FMI 2.0 co-simulation wrapper, for hosts without Python (real-time targets, HIL benches).

:func:`export_c_fmu` writes an FMU with

* ``sources/``: the wrapper ``fmi2_cs.c`` and ``flexcosim_model.h`` (the same for every
  model, ``fmu/fmi/native/cfmu``), the fixed-step methods ``fixed_step.h``
  (:data:`mbdcore.integrators.runge_kutta.C_FIXED_STEP_HEADER`), the macros of the
  kernels' table layouts ``table_layout.h`` (:data:`mbdcore.cbuild.TABLE_LAYOUT_HEADER`), the generated ``model_config.h`` (sizes, variable
  macros) and ``model.c`` (the variable table and the block's equations), the FMI 2.0
  headers, and ``buildDescription.xml``; they compile alone with the one line of
  :data:`GCC_COMMAND` (C99, libm only, no allocation after instantiation);
* ``binaries/linux64/<id>.so`` compiled here with that line where this machine has a C
  compiler (:func:`mbdcore.cbuild.compile_shared`, the project's one build path);
  without one the FMU is written with its sources only and :class:`SourceOnlyWarning`
  says so (``compile=False`` skips the binary, ``compile=True`` requires it);
  ``binaries/win64/<id>.dll`` besides, cross-compiled from the same sources with
  MinGW-w64 where it is installed (:data:`BUILD_COMMANDS`; it imports only KERNEL32.dll
  and msvcrt.dll);
* ``modelDescription.xml`` made from the block's declarations by the same code as the
  Python FMU's (:class:`fmu.fmi.slave.BlockSlave`): the same names, value references,
  units, ranges and defaults.  Of the integration methods only "rk4" and "gill" exist in
  C; the ``method`` parameter accepts those, except for a model that takes its own steps
  (``CModel.own_step``, ``model_step``), whose method is fixed at export.

The GUID is derived from the content, so an export is reproducible.
"""
from __future__ import annotations

import hashlib
import logging
import struct
import shutil
import tempfile
import uuid
import warnings
import zipfile
from pathlib import Path
from xml.etree.ElementTree import SubElement, indent, tostring

import numpy as np


from fmu.fmi.fmi3_description import SignalArray, fmi3_model_description, signal_arrays
from fmu.fmi.me_description import add_model_exchange
from fmu.fmi.slave import BlockSlave
from mbdcore.blocks import Block, Parameter
from mbdcore.cbuild import (C99_FLAGS, PLATFORMS, TABLE_LAYOUT_HEADER, CompileError, code_files,
                            compile_shared, find_compiler, skeleton_digest)
from mbdcore.codegen import CModel, c_identifier, include_c, signal_macro
from mbdcore.integrators.runge_kutta import C_FIXED_STEP_HEADER

__all__ = ["export_c_fmu", "GCC_COMMAND", "BUILD_COMMANDS", "build_command", "c_units",
           "FRONT_ENDS", "BINARY_FOLDERS", "binary_platforms", "C_METHODS", "C_UNITS",
           "CExportError", "SourceOnlyWarning", "c_sources_dir", "FMI2_HEADERS", "FMI3_HEADERS",
           "PREBUILT_SOURCES", "MODEL_DATA_FILE", "prebuilt_binary",
           "model_data_bytes"]

#: What an export did beyond writing the FMU (a binary compiled with the package used).
logger = logging.getLogger(__name__)

#: The fixed-step methods of the C wrapper.
C_METHODS = ("rk4", "gill")
#: The front end of the wrapper for each FMI version (``native/cfmu``; the rest of the
#: wrapper, ``cfmu_core.h``, is the same for both).
FRONT_ENDS = {2: "fmi2_cs.c", 3: "fmi3_cs.c"}
#: The binaries folder of each platform (:data:`mbdcore.cbuild.PLATFORMS`) per FMI version.
BINARY_FOLDERS = {2: {"linux64": "linux64", "win64": "win64"},
                  3: {"linux64": "x86_64-linux", "win64": "x86_64-windows"}}
_COMPILERS = {"linux64": "gcc", "win64": "x86_64-w64-mingw32-gcc"}


def c_units(fmi_version: int = 2) -> tuple[str, str, str]:
    """The C files of an FMU's build, in ``sources/``: the wrapper's front end, the
    model's code, its numbers."""
    return (FRONT_ENDS[fmi_version], "model.c", "model_data.c")


def build_command(platform: str, fmi_version: int = 2) -> str:
    """The one-line build of ``platform``'s binary, run in the FMU's folder (``{id}`` the
    model identifier): the same sources and flags for every platform."""
    flags = " ".join(PLATFORMS[platform].shared_flags)
    return (f"{_COMPILERS[platform]} -std=c99 -O2 -Wall -Wextra {flags} -Isources "
            + " ".join(f"sources/{u}" for u in c_units(fmi_version))
            + f" -o binaries/{BINARY_FOLDERS[fmi_version][platform]}/{{id}}"
            + f"{PLATFORMS[platform].suffix} -lm")


#: The C files of an FMI 2.0 FMU's build.
C_UNITS = c_units(2)

#: The one-line build of the linux64 binary of an FMI 2.0 FMU.
GCC_COMMAND = build_command("linux64")

#: The build of each platform's binary of an FMI 2.0 FMU, run in the FMU's folder.
BUILD_COMMANDS = {platform: build_command(platform) for platform in BINARY_FOLDERS[2]}

_HEADERS = {2: ("fmi2Functions.h", "fmi2FunctionTypes.h", "fmi2TypesPlatform.h"),
            3: ("fmi3Functions.h", "fmi3FunctionTypes.h", "fmi3PlatformTypes.h")}

#: Where the code of the exports built with the package is kept (one folder each, with
#: its model_config.h and model.c; setup.py compiles them with the shared files).
PREBUILT_SOURCES = Path(__file__).resolve().parent / "native" / "prebuilt"

#: The data file a binary built with the package reads (fmi2_cs.c, load_model_data).
MODEL_DATA_FILE = "resources/model_data.bin"


#: The FMI 2.0 headers (the Modelica Association's, BSD licence) that the wrappers
#: compile against and every C-source FMU carries.
FMI2_HEADERS = Path(__file__).resolve().parent / "native" / "fmi2"
#: The FMI 3.0 headers (the Modelica Association's, BSD licence), for FMI 3.0 exports.
FMI3_HEADERS = Path(__file__).resolve().parent / "native" / "fmi3"


class CExportError(ValueError):
    """The block cannot be exported as a C FMU (the message says why)."""


class SourceOnlyWarning(UserWarning):
    """A C FMU was written with its sources only: no C compiler here to build its binary
    (the message gives the one-line build for the target)."""


def c_sources_dir() -> Path:
    """The wrapper sources shipped with the package."""
    return Path(__file__).resolve().parent / "native" / "cfmu"


def _c_string(text: str) -> str:
    """``text`` as a C string literal (UTF-8 bytes; quotes, backslashes and control
    characters escaped: a JSON text with newlines is one literal)."""
    out = []
    for byte in text.encode("utf-8"):
        ch = chr(byte)
        if ch in '"\\?':           # '?' too: C99 reads "??=" as a trigraph
            out.append("\\" + ch)
        elif 32 <= byte < 127:
            out.append(ch)
        else:
            out.append(f"\\{byte:03o}")
    return '"' + "".join(out) + '"'


def _num(x) -> str:
    return f"{float(x):.17g}"


def prebuilt_binary(digest: str) -> Path | None:
    """The binary compiled with the package for the code of ``digest``, or None."""
    found = sorted(Path(__file__).resolve().parent.glob(f"_cfmu_{digest}.*"))
    return next((p for p in found if p.suffix in (".so", ".pyd", ".dylib")), None)


def model_data_bytes(digest: str, guid: str, numbers, tables) -> bytes:
    """``resources/model_data.bin``: the numbers of an export for a binary built with
    the package (the layout is fmi2_cs.c's, load_model_data)."""
    numbers = np.ascontiguousarray(numbers, dtype="<f8")
    tables = np.ascontiguousarray(tables, dtype="<f8")
    head = (b"FCMDATA1" + digest.encode().ljust(32, b"\0")
            + struct.pack("<II", 0x01020304, 0) + guid.encode().ljust(64, b"\0")
            + struct.pack("<II", numbers.shape[0], tables.size))
    body = head + numbers.tobytes() + tables.tobytes()
    checksum = 14695981039346656037
    for byte in body:
        checksum = ((checksum ^ byte) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return body + struct.pack("<Q", checksum)


def _var_entry(name, fmi_type, causality, spec, value) -> tuple[str, tuple]:
    """A variable's VARS entry (its structure) and its numbers (start, min, max)."""
    kind = {"Real": "VAR_REAL", "Integer": "VAR_INTEGER", "String": "VAR_STRING"}[fmi_type]
    caus = {"parameter": "VAR_PARAMETER", "input": "VAR_INPUT", "output": "VAR_OUTPUT"}[causality]
    lo = getattr(spec, "min", None)
    hi = getattr(spec, "max", None)
    choices = "{0}"
    n_choices = 0
    start = value
    if fmi_type == "String":
        choices = "{" + ", ".join(_c_string(c) for c in spec.choices) + "}"
        n_choices = len(spec.choices)
        start = spec.choices.index(value)
        lo = hi = None
    excl = int(bool(getattr(spec, "exclusive_min", False)))
    unit = getattr(spec, "unit", "") or ""
    entry = (f"    {{{_c_string(name)}, {kind}, {caus}, "
             f"{int(lo is not None)}, {int(hi is not None)}, {excl}, {_c_string(unit)}, "
             f"{n_choices}, {choices}}}")
    return entry, (float(start), float(lo if lo is not None else 0.0),
                   float(hi if hi is not None else 0.0))


def _specs(block_class) -> dict:
    specs = {p.name: ("parameter", p) for p in block_class.PARAMETERS}
    specs.update({s.name: ("input", s) for s in block_class.INPUTS})
    specs.update({s.name: ("output", s) for s in block_class.OUTPUTS})
    return specs


def export_c_fmu(block_class: type[Block], dest, model_name: str | None = None,
                 parameters: dict | None = None, compile: bool | str | None = None,
                 fmi_version: int = 2, kind: str = "cs", arrays: bool = True,
                 platforms: tuple[str, ...] | None = None) -> Path:
    """Write a C-source FMI 2.0 (or 3.0) co-simulation FMU of ``block_class`` (module
    docstring).

    Parameters
    ----------
    block_class : type
        A Block subclass with a ``c_model()`` method.
    dest : str or Path
        Directory to write ``<model_name>.fmu`` into, or the ``.fmu`` path.
    model_name : str, optional
        Model name and ``modelIdentifier`` (a C identifier); default the class name.
    parameters : dict, optional
        Parameter values, checked by the block; they become the FMU's start values.
    compile : bool or None
        None (default): compile the linux64 binary with this machine's C compiler if it
        has one, else write the sources only with a :class:`SourceOnlyWarning`; True:
        compile (:class:`CExportError` without a compiler); False: sources only;
        ``"prebuilt"``: the linux64 binary compiled with the package for this model's
        code where there is one (an FMI 2.0 export of the same structure as the
        default of a model of ``flexcosim export-c``: :mod:`flexcosim.prebuilt`), no
        compiler run, else as None (the demo's FMUs, built in a second instead of
        compiled).
    fmi_version : {2, 3}
        The FMI version of the FMU: the same model, variables, value references and
        behaviour, through ``fmi2_cs.c`` or ``fmi3_cs.c``.
    kind : {"cs", "me"}
        "cs": co-simulation; "me": Model Exchange too (a model whose only state is
        continuous): the host's solver integrates the model's derivatives, its states and
        derivatives declared as variables (:mod:`fmu.fmi.me_description`; FMI 3.0: one
        array each); the same FMU still co-simulates.
    arrays : bool
        FMI 3.0: each vector signal (inputs or outputs named alike but for a running
        index, ``tau1``, ``tau2``) as one array variable (``tau`` [2]),
        :func:`fmu.fmi.fmi3_description.signal_arrays`; False keeps the FMI 2.0 FMU's
        scalars (for a host or system file written for those names).  FMI 2.0 has no
        arrays.
    platforms : tuple of str, optional
        The binaries to compile (:data:`mbdcore.cbuild.PLATFORMS`: "linux64", "win64"),
        each one's compiler required; None (default): linux64 and every other platform
        whose compiler is installed here.  Ignored with ``compile=False``.

    Returns
    -------
    Path of the FMU written.
    """
    if not (isinstance(block_class, type) and issubclass(block_class, Block)):
        raise TypeError(f"export_c_fmu needs a Block subclass, not {block_class!r}")
    if not callable(getattr(block_class, "c_model", None)):
        raise CExportError(f"{block_class.__name__} has no C equations (no c_model()); "
                           "it can be exported as a Python FMU only")
    if fmi_version not in FRONT_ENDS:
        raise ValueError(f"fmi_version = {fmi_version!r}: accepted 2 or 3")
    if not (compile is None or isinstance(compile, bool) or compile == "prebuilt"):
        raise ValueError(f"compile = {compile!r}: accepted None, True, False or 'prebuilt'")
    if platforms is not None and (isinstance(platforms, str) or not platforms
                                  or any(p not in PLATFORMS for p in platforms)):
        raise ValueError(f"platforms = {platforms!r}: accepted a non-empty tuple of "
                         f"{', '.join(map(repr, PLATFORMS))}")
    if kind not in ("cs", "me"):
        raise ValueError(f"kind = {kind!r}: accepted 'cs' (co-simulation) or 'me' (Model "
                         "Exchange, and co-simulation)")
    model_name = c_identifier(model_name or block_class.__name__)
    block = block_class(**(parameters or {}))
    model: CModel = block.c_model()
    values = dict(block.params)
    if "method" in values and values["method"] not in C_METHODS and not model.own_step:
        raise CExportError(f"method {values['method']!r} has no C implementation; accepted "
                           f"in a C FMU: {', '.join(C_METHODS)}")

    slave_class = type(model_name, (BlockSlave,), {"BLOCK": block_class,
                                                   "__module__": __name__})
    root = slave_class(instance_name="export").to_xml(
        {"canHandleVariableCommunicationStepSize": True})
    entries, macros, numbers = _variables(root.find("ModelVariables"), _specs(block_class),
                                          model, values)
    tables = np.concatenate([np.zeros(0), *model.tables.values()])
    guid = _identify(root, model_name, model, tables)
    config_h = _model_config(root.find("ModelVariables"), entries, macros, model, tables)
    model_c = "\n".join([
        f"/* generated by flexcosim export-c from {block_class.__module__}."
        f"{block_class.__qualname__} */",
        "#include <math.h>", "#include <string.h>", "#include <stdio.h>", "",
        '#include "flexcosim_model.h"', "",
        "const VarInfo VARS[N_VARS] = {", ",\n".join(entries), "};", "",
        include_c(model), model.source])
    if kind == "me":
        if not model.n_states or model.n_discrete or model.sample_time:
            raise CExportError(f"{block_class.__name__} has a discrete state or a sample time "
                               "(or no continuous state): it can be co-simulated only")
        add_model_exchange(root, model.state_names[:model.n_states] or
                           [f"x{i}" for i in range(model.n_states)], len(entries), C_UNITS)
    vectors = signal_arrays(root.find("ModelVariables")) if fmi_version == 3 and arrays else []
    if vectors:
        end = config_h.rindex("#endif")
        config_h = config_h[:end] + _array_macros(vectors) + config_h[end:]
    description = (root if fmi_version == 2 else
                   fmi3_model_description(root, len(entries), vectors))

    dest = Path(dest)
    fmu_path = dest if dest.suffix == ".fmu" else dest / f"{model_name}.fmu"
    fmu_path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="flexcosim_cfmu_") as tmp:
        tmp = Path(tmp)
        src = tmp / "sources"
        _write_sources(src, model, fmi_version, model_name, {
            "model_config.h": config_h, "model.c": model_c,
            "model_data.c": _model_data_c(guid, numbers, tables)})
        indent(description)
        (tmp / "modelDescription.xml").write_bytes(
            b'<?xml version="1.0" encoding="UTF-8"?>\n' + tostring(description, encoding="utf-8"))
        if compile == "prebuilt":   # the package's binary where it has one: no compiler run
            compile = (False if _prebuilt(tmp, fmu_path, model_name, fmi_version, guid,
                                          numbers, tables) else None)
        if compile is None and find_compiler() is None:
            _prebuilt_or_sources(tmp, fmu_path, model_name, fmi_version, guid, numbers, tables)
            compile = False
        if compile is not False:
            built = _compile(tmp, model_name, fmi_version, platforms)
            logger.info("%s: binaries for %s", fmu_path.name, ", ".join(built))
        with zipfile.ZipFile(fmu_path, "w", zipfile.ZIP_DEFLATED) as z:
            for path in sorted(tmp.rglob("*")):
                if path.is_file():
                    z.write(path, path.relative_to(tmp).as_posix())
    return fmu_path


def _variables(variables, specs: dict, model: CModel, values: dict):
    """The C variable table's entries, the variables' macros and their numbers (start,
    min, max), in value-reference order; the FMI 2.0 description of the parameters fixed
    at export, of ``method`` and of the start values adjusted as the C FMU has them."""
    entries, macros, numbers, used = [], [], [], {}
    for expected_vr, sv in enumerate(variables):
        name, vr = sv.get("name"), int(sv.get("valueReference"))
        if vr != expected_vr:
            raise CExportError(f"value references are not 0..n-1 ({name!r} has {vr})")
        causality, spec = specs[name]
        fmi_type = sv[0].tag
        macro = signal_macro(name)
        if macro in used:
            raise CExportError(f"{name!r} and {used[macro]!r} have the same C name {macro!r}")
        used[macro] = name
        if name == "method" and causality == "parameter" and not model.own_step:
            spec = Parameter(spec.name, spec.default, spec.unit,
                             "integration method (C FMU)", choices=C_METHODS)
            sv.set("description", f"integration method (one of {', '.join(map(repr, C_METHODS))})")
        if name in model.fixed_parameters and causality == "parameter":
            value = values[name]
            hint = f"fixed when exported: export again with --set {name}=VALUE to change it"
            if fmi_type == "String":
                spec = Parameter(name, value, spec.unit, spec.description, choices=(value,))
            else:
                spec = Parameter(name, value, spec.unit, spec.description, min=value, max=value)
                sv[0].set("min", repr(value))
                sv[0].set("max", repr(value))
            sv.set("description", f"{sv.get('description') or name} ({hint})")
        if fmi_type == "String" and not getattr(spec, "choices", None):
            raise CExportError(f"string parameter {name!r} has no fixed choices; a C FMU "
                               "needs them")
        value = values.get(name, getattr(spec, "start", 0.0)) if causality != "output" else 0.0
        if causality == "parameter":
            sv[0].set("start", repr(value) if fmi_type == "Real" else str(value))
        entry, numbers_of_var = _var_entry(name, fmi_type, causality, spec, value)
        entries.append(entry)
        numbers.append(numbers_of_var)
        field = {"Real": "r", "Integer": "i", "String": "s"}[fmi_type]
        prefix = {"parameter": "PAR", "input": "IN", "output": "OUT"}[causality]
        macros.append(f"#define {prefix}_{macro} (d->{field}[{vr}])")
    return entries, macros, numbers


def _identify(root, model_name: str, model: CModel, tables) -> str:
    """The GUID (from the content: an export is reproducible) and the C FMU's
    capabilities, set in the FMI 2.0 description ``root``; returns the GUID."""
    code = "".join(s.read_text() for s in model.c_sources) + model.source
    digest = hashlib.sha256((tostring(root.find("ModelVariables")).decode() + code).encode()
                            + tables.tobytes()).hexdigest()
    guid = "{" + str(uuid.uuid5(uuid.NAMESPACE_URL, f"flexcosim:{model_name}:{digest}")) + "}"
    root.set("guid", guid)
    root.set("generationTool", "flexcosim export-c")
    root.attrib.pop("generationDateAndTime", None)
    cs = root.find("CoSimulation")
    cs.set("modelIdentifier", model_name)
    for key, val in (("needsExecutionTool", "false"), ("canBeInstantiatedOnlyOncePerProcess", "false"),
                     ("canNotUseMemoryManagementFunctions", "false"),
                     ("canGetAndSetFMUstate", "true"), ("canSerializeFMUstate", "true"),
                     ("canHandleVariableCommunicationStepSize", "true")):
        cs.set(key, val)
    files = SubElement(cs, "SourceFiles")
    for f in C_UNITS:
        SubElement(files, "File", name=f)
    return guid


def _model_config(variables, entries, macros, model: CModel, tables) -> str:
    """``model_config.h``: the sizes and variable names of this model."""
    names = {v.get("name"): int(v.get("valueReference")) for v in variables}
    continuous = model.n_states > 0

    def vr_of(name):
        return names[name] if continuous and name in names else -1

    return "\n".join([
        "/* generated by flexcosim export-c: sizes and variable names of this model */",
        "#ifndef MODEL_CONFIG_H", "#define MODEL_CONFIG_H",
        f"#define N_VARS {len(entries)}",
        f"#define N_TABLE {tables.size}",
        f"#define N_X {model.n_states}",
        f"#define N_Z {model.n_discrete}",
        f"#define N_W {model.n_work}",
        f"#define VR_METHOD {vr_of('method')}",
        f"#define VR_SUBSTEPS {vr_of('substeps')}",
        f"#define VR_RTOL {vr_of('rtol')}",
        f"#define VR_ATOL {vr_of('atol')}",
        "#define X(k) (d->x[k])", "#define Z(k) (d->z[k])", "#define W(k) (d->w[k])",
        *macros,
        *_table_macros(model.tables),
        *([f"#define SAMPLE_TIME ({model.sample_time})"] if model.sample_time else []),
        *(["#define MODEL_OWN_STEP 1"] if model.own_step else []),
        "#endif", ""])


def _array_macros(arrays: list[SignalArray]) -> str:
    """``model_config.h``'s array variables for ``fmi3_cs.c``: how many, and each one's
    elements' value references (ARRAY_ELEMENTS from ARRAY_FIRST[a] to ARRAY_FIRST[a+1])."""
    first = [0]
    for a in arrays:
        first.append(first[-1] + len(a.elements))
    return "\n".join([
        "/* FMI 3.0 array variables (value references N_VARS + 3 + a): their elements */",
        f"#define N_ARRAYS {len(arrays)}",
        "#define ARRAY_FIRST {" + ", ".join(map(str, first)) + "}",
        "#define ARRAY_ELEMENTS {" + ", ".join(str(e) for a in arrays for e in a.elements)
        + "}   /* " + ", ".join(f"{a.name}: {', '.join(a.element_names)}" for a in arrays)
        + " */", ""])


def _write_sources(src: Path, model: CModel, fmi_version: int, model_name: str,
                   generated: dict) -> None:
    """The FMU's ``sources/``: the wrapper (its front end for ``fmi_version`` and the
    shared core), the fixed-step methods, the model's kernels, the FMI headers, the
    generated files and the build description."""
    src.mkdir()
    for f in (FRONT_ENDS[fmi_version], "cfmu_core.h", "cfmu_state.h", "flexcosim_model.h"):
        shutil.copy(c_sources_dir() / f, src / f)
    shutil.copy(c_sources_dir().parent / "fmi_resources.h", src / "fmi_resources.h")
    shutil.copy(C_FIXED_STEP_HEADER, src / C_FIXED_STEP_HEADER.name)
    shutil.copy(TABLE_LAYOUT_HEADER, src / TABLE_LAYOUT_HEADER.name)
    for source in model.c_sources:          # the kernel's own files, included by model.c
        shutil.copy(source, src / source.name)
    headers = FMI2_HEADERS if fmi_version == 2 else FMI3_HEADERS
    for h in _HEADERS[fmi_version]:
        shutil.copy(headers / h, src / h)
    for name, text in generated.items():
        (src / name).write_text(text)
    (src / "buildDescription.xml").write_text(_build_description(model_name, fmi_version))


def _prebuilt(tmp: Path, fmu_path: Path, model_name: str, fmi_version: int, guid: str,
              numbers, tables) -> bool:
    """The binary compiled with the package for this model's code, with the export's
    numbers beside it, put in the FMU where there is one (FMI 2.0, linux64): whether
    there was."""
    digest = skeleton_digest(code_files(tmp / "sources"))
    prebuilt = prebuilt_binary(digest) if fmi_version == 2 else None
    if prebuilt is None:
        return False
    (tmp / "binaries" / "linux64").mkdir(parents=True)
    shutil.copy(prebuilt, tmp / "binaries" / "linux64" / f"{model_name}.so")
    (tmp / MODEL_DATA_FILE).parent.mkdir(parents=True, exist_ok=True)
    (tmp / MODEL_DATA_FILE).write_bytes(model_data_bytes(digest, guid, numbers, tables))
    logger.info("%s: its binary is the one compiled with the package for this model's "
                "code (numbers in %s)", fmu_path.name, MODEL_DATA_FILE)
    return True


def _prebuilt_or_sources(tmp: Path, fmu_path: Path, model_name: str, fmi_version: int,
                         guid: str, numbers, tables) -> None:
    """No C compiler here: the binary compiled with the package (:func:`_prebuilt`);
    else the sources only, with a :class:`SourceOnlyWarning` giving the build command."""
    if _prebuilt(tmp, fmu_path, model_name, fmi_version, guid, numbers, tables):
        return
    warnings.warn(SourceOnlyWarning(
        f"{fmu_path.name}: no C compiler here and no binary built with the package "
        f"for this model's code, so the FMU has its sources only and no binary; "
        f"build it on the target with: "
        f"{build_command('linux64', fmi_version).format(id=model_name)}"), stacklevel=3)


def _table_macros(tables: dict) -> list[str]:
    """Each table's name as a pointer into MODEL_TABLES (row-major, in order)."""
    macros, offset = [], 0
    for name, values in tables.items():
        macros.append(f"#define {name} (MODEL_TABLES + {offset})   /* {values.size} numbers */")
        offset += values.size
    return macros


def _model_data_c(guid: str, numbers, tables) -> str:
    """``model_data.c``: the numbers of this export, to 17 significant digits (read back
    bit for bit)."""
    def rows(values, per_line=4):
        flat = [f"{float(v):.17g}" for v in np.ravel(values)] or ["0.0"]
        return ",\n    ".join(", ".join(flat[i:i + per_line])
                               for i in range(0, len(flat), per_line))
    return "\n".join([
        "/* generated by flexcosim export-c: the numbers of this export (the code is model.c) */",
        '#include "flexcosim_model.h"', "",
        f"const char MODEL_GUID[GUID_SIZE] = {_c_string(guid)};", "",
        "/* per variable (value reference order): start, min, max */",
        "const double MODEL_NUMBERS[N_VARS][3] = {",
        "    " + ",\n    ".join("{" + ", ".join(f"{v:.17g}" for v in row) + "}" for row in numbers),
        "};", "",
        "const double MODEL_TABLES[SIZE_OR_1(N_TABLE)] = {", "    " + rows(tables), "};", ""])


def _build_description(model_name: str, fmi_version: int = 2) -> str:
    builds = "\n".join(f"     {platform}: {build_command(platform, fmi_version).format(id=model_name)}"
                       for platform in BINARY_FOLDERS[fmi_version])
    units = "\n".join(f'      <SourceFile name="{u}"/>' for u in c_units(fmi_version))
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<!-- Build, in the FMU's folder:
{builds} -->
<fmiBuildDescription fmiVersion="3.0">
  <BuildConfiguration modelIdentifier="{model_name}">
    <SourceFileSet language="C99">
{units}
    </SourceFileSet>
    <Library name="m"/>
  </BuildConfiguration>
</fmiBuildDescription>
"""


def _compile(folder: Path, model_name: str, fmi_version: int = 2,
             platforms: tuple[str, ...] | None = None) -> list[str]:
    """The binaries from the FMU's sources: those of ``platforms``, each required; by
    default linux64 with this machine's compiler (:func:`build_command`), required, then
    every other platform whose compiler is installed here; any warning fails the export
    (the sources must build clean).  Returns the binaries folders built."""
    built = []
    for platform, folder_name in BINARY_FOLDERS[fmi_version].items():
        if platforms is not None and platform not in platforms:
            continue
        if platforms is None and platform != "linux64" and find_compiler(platform) is None:
            continue
        suffix = PLATFORMS[platform].suffix
        try:
            compile_shared([Path("sources") / u for u in c_units(fmi_version)],
                           folder / "binaries" / folder_name / f"{model_name}{suffix}",
                           include_dirs=["sources"], flags=C99_FLAGS, cwd=folder,
                           warnings_are_errors=True, platform=platform)
        except CompileError as e:
            raise CExportError(f"{e}\nor export with compile=False (--no-compile) and build "
                               f"on the target with: "
                               f"{build_command(platform, fmi_version).format(id=model_name)}") from None
        built.append(folder_name)
    return built


def binary_platforms(fmu_path) -> list[str]:
    """The platforms an FMU has a binary for (its ``binaries/<platform>/`` folders)."""
    with zipfile.ZipFile(fmu_path) as z:
        return sorted({n.split("/")[1] for n in z.namelist()
                       if n.startswith("binaries/") and n.count("/") >= 2 and not n.endswith("/")})
