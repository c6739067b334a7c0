"""Systems in SSP files: SSP 1.0 (.ssp archive, .ssd description); the JSON form and the
one reader of every system file are :mod:`fmu.cosim.system_file`.

SSP (System Structure and Parameterization, Modelica Association, version 1.0) is
the standard way to hand a system of FMUs to another tool:

* ``.ssp``: a zip archive with ``SystemStructure.ssd`` at its root and the FMUs in
  ``resources/``;
* ``.ssd``: the XML description alone, its components' ``source`` relative to it.

What is written and read
------------------------
``ssd:System`` with ``ssd:Elements`` of ``ssd:Component`` (``source`` = the FMU,
``ssd:Connectors`` with ``name`` and ``kind`` = input/output/parameter and the type
``ssc:Real``/``Integer``/``Boolean``/``String``: every output and bound parameter, the
inputs that are connected), ``ssd:ParameterBindings`` with
inline ``ssv:ParameterSet`` values (or an ``.ssv`` file named by ``source``) for the
parameters and input start values a component is given, ``ssd:Connections``
(``startElement``/``startConnector``/``endElement``/``endConnector``) and
``ssd:DefaultExperiment`` (``startTime``/``stopTime``).  Values bound at the system
level (as OMSimulator writes them) are read too, named ``component.variable``; they
override the component's own bindings.  The communication step,
method and extrapolation have no place in SSP 1.0; they are in an annotation
``org.flexcosim.master`` of the DefaultExperiment, and a component's feedthrough
override (see :class:`~fmu.cosim.fmu_component.FMUComponent`) in an annotation
``org.flexcosim.feedthrough`` (one ``fc:FeedthroughOverride`` holding an
``fc:Feedthrough`` per output: an SSP 1.0 annotation holds one element).  Other tools
ignore both.  What is written validates against the SSP 1.0 schemas (tested with the
schema files fmpy ships).

SSP 2.0 files (``version="2.0"``, what OMSimulator 3 writes) are read as far as SSP 1.0
can express them: same namespaces and elements; parameter values typed with the SSP 2.0
names (``ssv:Float64``, ``ssv:Int32``, ...) are read as Real and Integer.  Geometry and
annotations of other tools are ignored.

Other tools
-----------
An exported system carries OMSimulator's system annotation (``ssc:Annotation
type="org.openmodelica"`` with ``oms:Annotations/oms:SimulationInformation/
oms:FixedStepMaster``, the communication step of the experiment, 1 ms if none):
OMSimulator refuses a system without it.  Its DefaultExperiment carries the Open Simulation
Platform's algorithm annotation (``ssc:Annotation type="com.opensimulationplatform"`` with
``osp:Algorithm/osp:FixedStepAlgorithm baseStepSize``, the same step): libcosim takes its
co-simulation algorithm from nothing else, and without it (the libcosim of libcosimpy
0.0.6) ``cosim_ssp_execution_create`` runs a null algorithm and the process crashes.
Both tools match the prefixes ``ssd:``, ``ssc:``, ``ssv:``, ``oms:``, ``osp:`` literally
(pugixml, boost.property_tree) rather than by namespace, so these are the prefixes
written.  fmpy's SSP runner validates the file against the SSP 1.0 schemas, which
everything written here passes.

Not supported (refused with a message naming the element, never silently
ignored): nested systems, connectors of the system itself, connections with a
linear transformation, unit conversion or mapping, components that are neither
FMUs nor Python blocks.

Python blocks
-------------
A Python block cannot live inside an SSP archive.  It is *referenced*: a component
of type ``application/x-flexcosim-python-block`` whose ``source`` is
``python:package.module:ClassName``; its parameters are bound like an FMU's.  On
import the class is imported by that path (it must be installed or on
``sys.path``) and must be a :class:`mbdcore.blocks.Block`.  **A Python block runs code**:
importing its module executes it, before it is known to hold a Block.  So a file is safe
by default: ``allow_python_blocks`` (of :func:`load_system`, :func:`import_ssp`,
:func:`system_from_dict`, :func:`fmu.cosim.simulate.cosimulate`) is

* ``"project"`` (the default): the project's own blocks only, modules of the installed
  packages ``mbdcore``, ``controllers`` and ``fmu`` (:data:`PROJECT_PACKAGES`; a package
  of that name elsewhere on ``sys.path``, a folder ``controllers/`` in the working
  directory, is not the project's);
* ``True`` (``flexcosim cosim --allow-python-blocks``): any module, for files you wrote
  or trust;
* ``False`` (``flexcosim cosim --no-python-blocks``): none, not even the project's own.

A block that is not allowed is refused naming it and saying how to allow it, before
anything of the file is imported or loaded.  Other SSP tools see a component they cannot
load.

Archives are unpacked with :func:`fmu.cosim.archive.safe_extract`: member names with
``..``, absolute names, links and members whose sizes or CRC lie are refused, and every
file an archive refers to (an FMU ``source``, a parameter binding's ``.ssv`` ``source``)
must lie inside the archive.
"""
from __future__ import annotations

import math
import os
import re
import struct
import tempfile
import xml.etree.ElementTree as ET
import zipfile
import zlib
from pathlib import Path
from typing import Any, Mapping

from fmu.cosim.archive import check_archive, safe_extract
from fmu.cosim.components import BlockComponent, Component
from fmu.cosim.file_rules import (BLOCK_SCHEME, PROJECT_BLOCKS, SSPError, block_component,
                                  check_allow, check_component_name, check_name, refuse_block,
                                  short_repr)
from fmu.cosim.fmu_component import FMUComponent
from fmu.cosim.system import System

__all__ = ["export_ssp", "import_ssp", "bound_values", "SSD", "SSC", "SSV", "BLOCK_TYPE"]

SSD = "http://ssp-standard.org/SSP1/SystemStructureDescription"
SSC = "http://ssp-standard.org/SSP1/SystemStructureCommon"
SSV = "http://ssp-standard.org/SSP1/SystemStructureParameterValues"
FC = "http://flexcosim.org/ssp-annotations/1.0"
#: OMSimulator's annotation namespace (it matches element names with this prefix: "oms:")
OMS = "https://raw.githubusercontent.com/OpenModelica/OMSimulator/master/schema/oms.xsd"
#: the Open Simulation Platform's annotation namespace (libcosim matches the prefix "osp:")
OSP = "http://opensimulationplatform.com/SSP/OSPAnnotations"
for _prefix, _uri in (("ssd", SSD), ("ssc", SSC), ("ssv", SSV), ("fc", FC), ("oms", OMS),
                      ("osp", OSP)):
    ET.register_namespace(_prefix, _uri)

FMU_TYPE = "application/x-fmu-sharedlibrary"
BLOCK_TYPE = "application/x-flexcosim-python-block"
MASTER_ANNOTATION = "org.flexcosim.master"
FEEDTHROUGH_ANNOTATION = "org.flexcosim.feedthrough"
OMS_ANNOTATION = "org.openmodelica"
OSP_ANNOTATION = "com.opensimulationplatform"
#: communication step written for OMSimulator and libcosim when the experiment gives none [s]
OMS_DEFAULT_STEP = 1e-3
#: SSD versions read: SSP 1.x, and SSP 2.x as far as SSP 1.0 can express it
SSD_VERSIONS = ("1.", "2.")
CONNECTOR_KINDS = ("input", "output", "parameter", "calculatedParameter", "inout", "unspecified")
_TYPES = ("Real", "Integer", "Boolean", "String", "Enumeration")
#: SSP 2.0 (FMI 3.0) names of the value types, read as their SSP 1.0 kind
_TYPES_2 = {"Float32": "Real", "Float64": "Real", **{f"{u}Int{n}": "Integer"
            for u in ("", "U") for n in (8, 16, 32, 64)}}
#: The range of each integer type: SSP 1.0's Integer and Enumeration are xs:int (32 bits)
INTEGER_RANGES = {"Integer": (-2**31, 2**31 - 1), "Enumeration": (-2**31, 2**31 - 1),
                  **{f"Int{n}": (-2**(n - 1), 2**(n - 1) - 1) for n in (8, 16, 32, 64)},
                  **{f"UInt{n}": (0, 2**n - 1) for n in (8, 16, 32, 64)}}
#: The lexical forms of XML Schema (Part 2: Datatypes), after whitespace is collapsed:
#: xs:double/xs:float (its special values INF, -INF, NaN are refused as not finite) and
#: the integer types.  Python's float() and int() accept more ("1_0.5", "infinity",
#: non-ASCII digits), which no other tool reads alike.
_XS_FLOAT = re.compile(r"[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?|[+-]?INF|NaN")
_XS_INTEGER = re.compile(r"[+-]?[0-9]+")
_XS_BOOLEAN = ("true", "false", "1", "0")
#: XML Schema's whitespace (collapsed around a number or boolean)
_XS_SPACE = " \t\n\r"


#: The largest finite Float32
_FLOAT32_MAX = struct.unpack("<f", b"\xff\xff\x7f\x7f")[0]


















def _q(ns: str, tag: str) -> str:
    return f"{{{ns}}}{tag}"


# ---------------------------------------------------------------------------------
# export
# ---------------------------------------------------------------------------------
def export_ssp(system: System, path: str | Path, *, name: str | None = None,
               start_time: float | None = None, stop_time: float | None = None,
               step: float | None = None, method: str | None = None,
               extrapolation: int | None = None) -> Path:
    """Write ``system`` as an SSP 1.0 archive (``.ssp``) or description (``.ssd``).

    Parameters
    ----------
    system : System
        FMU components and Python blocks (referenced by import path, see the module
        docstring).
    path : str or Path
        ``.ssp``: the FMUs are copied into ``resources/``.  ``.ssd``: components
        refer to the FMU files where they are, by relative path.
    name : str, optional
        System name (default: the file name without suffix).
    start_time, stop_time, step, method, extrapolation : optional
        Default experiment; each defaults to ``system.experiment``.

    Returns
    -------
    Path
        The file written.
    """
    path = Path(path)
    if path.suffix not in (".ssp", ".ssd"):
        raise ValueError(f"{path}: the file name must end in .ssp or .ssd")
    experiment = dict(system.experiment)
    for key, value in (("start_time", start_time), ("stop_time", stop_time), ("step", step),
                       ("method", method), ("extrapolation", extrapolation)):
        if value is not None:
            experiment[key] = value
    archive = path.suffix == ".ssp"
    resources: dict[Path, str] = {}  # FMU file -> name inside the archive
    sources = {}
    for c in system.components:
        if isinstance(c, FMUComponent):
            fmu = c.fmu_path.resolve()
            if archive:
                if fmu not in resources:
                    stem, n = fmu.stem, 1
                    res = f"resources/{fmu.name}"
                    while res in resources.values():
                        n += 1
                        res = f"resources/{stem}_{n}.fmu"
                    resources[fmu] = res
                sources[c.name] = resources[fmu]
            else:
                try:
                    sources[c.name] = Path(os.path.relpath(fmu, path.resolve().parent)).as_posix()
                except ValueError:  # another drive
                    sources[c.name] = fmu.as_uri()
        elif isinstance(c, BlockComponent):
            cls = type(c.block)
            sources[c.name] = f"{BLOCK_SCHEME}{cls.__module__}:{cls.__qualname__}"
        else:
            raise TypeError(f"component {c.name!r}: a {type(c).__name__} cannot be written to SSP "
                            "(only FMUComponent and BlockComponent)")

    root = _ssd_tree(system, name or path.stem, sources, experiment)
    ET.indent(root)
    xml = ET.tostring(root, encoding="utf-8", xml_declaration=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    if archive:
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
            z.writestr("SystemStructure.ssd", xml)
            for fmu, res in resources.items():
                z.write(fmu, res)
    else:
        path.write_bytes(xml)
    return path


def _ssd_tree(system: System, name: str, sources: Mapping[str, str],
              experiment: Mapping[str, Any]) -> ET.Element:
    root = ET.Element(_q(SSD, "SystemStructureDescription"),
                      {"version": "1.0", "name": name, "generationTool": "flexcosim"})
    sysel = ET.SubElement(root, _q(SSD, "System"), {"name": name})
    elements = ET.SubElement(sysel, _q(SSD, "Elements"))
    for c in system.components:
        is_fmu = isinstance(c, FMUComponent)
        comp = ET.SubElement(elements, _q(SSD, "Component"), {
            "name": c.name, "type": FMU_TYPE if is_fmu else BLOCK_TYPE, "source": sources[c.name]})
        values, kinds = bound_values(c)
        # SSP asks only for the connectors that connections use; an unconnected input
        # connector makes fmpy's SSP runner fail, so inputs are listed when connected
        connected = [v for v in c.inputs if f"{c.name}.{v}" in system.connections]
        # a value given to an input (a String input of an FMU too) is bound, but the
        # variable is no parameter
        strings = getattr(c, "string_variables", {})
        listed = [(v, "input") for v in connected] + [(v, "output") for v in c.outputs] + \
            [(v, "parameter") for v in values if v not in c.inputs and strings.get(v) != "input"]
        if listed:  # SSP 1.0: <ssd:Connectors> holds one <ssd:Connector> or more
            conns = ET.SubElement(comp, _q(SSD, "Connectors"))
        for var, kind in listed:
            conn = ET.SubElement(conns, _q(SSD, "Connector"), {"name": var, "kind": kind})
            ET.SubElement(conn, _q(SSC, kinds.get(var, "Real")))
        if values:
            bindings = ET.SubElement(comp, _q(SSD, "ParameterBindings"))
            binding = ET.SubElement(bindings, _q(SSD, "ParameterBinding"))
            pv = ET.SubElement(binding, _q(SSD, "ParameterValues"))
            pset = ET.SubElement(pv, _q(SSV, "ParameterSet"), {"version": "1.0", "name": c.name})
            params = ET.SubElement(pset, _q(SSV, "Parameters"))
            for var, value in values.items():
                p = ET.SubElement(params, _q(SSV, "Parameter"), {"name": var})
                ET.SubElement(p, _q(SSV, kinds.get(var, "Real")), {"value": _xml_value(value)})
        override = getattr(c, "feedthrough_override", None)
        if override is not None:
            ann = ET.SubElement(ET.SubElement(comp, _q(SSD, "Annotations")), _q(SSC, "Annotation"),
                                {"type": FEEDTHROUGH_ANNOTATION})
            # SSP 1.0: an annotation holds at most one element; the entries go inside it
            table = ET.SubElement(ann, _q(FC, "FeedthroughOverride"))
            for out, ins in override.items():
                ET.SubElement(table, _q(FC, "Feedthrough"),
                              {"output": out, "inputs": " ".join(ins)})
    if system.connections:  # SSP 1.0: <ssd:Connections> holds one <ssd:Connection> or more
        connections = ET.SubElement(sysel, _q(SSD, "Connections"))
    for dst, src in system.connections.items():
        se, sc = src.split(".", 1)
        de, dc = dst.split(".", 1)
        ET.SubElement(connections, _q(SSD, "Connection"), {
            "startElement": se, "startConnector": sc, "endElement": de, "endConnector": dc})
    _oms_annotation(sysel, experiment)
    exp_attrs = {k: repr(float(experiment[key])) for k, key in
                 (("startTime", "start_time"), ("stopTime", "stop_time")) if key in experiment}
    master = {k: str(experiment[k]) for k in ("step", "method", "extrapolation") if k in experiment}
    # always written: libcosim needs its algorithm annotation (see the module docstring)
    de = ET.SubElement(root, _q(SSD, "DefaultExperiment"), exp_attrs)
    annotations = ET.SubElement(de, _q(SSD, "Annotations"))
    if master:
        ann = ET.SubElement(annotations, _q(SSC, "Annotation"), {"type": MASTER_ANNOTATION})
        if "step" in master:
            master["step"] = repr(float(experiment["step"]))
        ET.SubElement(ann, _q(FC, "Master"), master)
    _osp_annotation(annotations, experiment)
    return root


def _oms_annotation(sysel: ET.Element, experiment: Mapping[str, Any]) -> None:
    """OMSimulator's system annotation: it takes the kind of system (here a weakly coupled
    co-simulation, its "oms-ma" fixed-step master) from it and refuses a system without.
    Last child of ``ssd:System``, where SSP 1.0 puts annotations."""
    step = float(experiment.get("step", OMS_DEFAULT_STEP))
    ann = ET.SubElement(ET.SubElement(sysel, _q(SSD, "Annotations")), _q(SSC, "Annotation"),
                        {"type": OMS_ANNOTATION})
    info = ET.SubElement(ET.SubElement(ann, _q(OMS, "Annotations")),
                         _q(OMS, "SimulationInformation"))
    ET.SubElement(info, _q(OMS, "FixedStepMaster"), {
        "description": "oms-ma", "stepSize": repr(step), "absoluteTolerance": "0.0001",
        "relativeTolerance": "0.0001"})


def _osp_annotation(annotations: ET.Element, experiment: Mapping[str, Any]) -> None:
    """The Open Simulation Platform's algorithm annotation of the DefaultExperiment:
    libcosim's fixed-step algorithm at the experiment's communication step (1 ms if none),
    the only place libcosim reads its algorithm and step from."""
    step = float(experiment.get("step", OMS_DEFAULT_STEP))
    ann = ET.SubElement(annotations, _q(SSC, "Annotation"), {"type": OSP_ANNOTATION})
    ET.SubElement(ET.SubElement(ann, _q(OSP, "Algorithm")), _q(OSP, "FixedStepAlgorithm"),
                  {"baseStepSize": repr(step)})


def bound_values(c: Component) -> tuple[dict[str, Any], dict[str, str]]:
    """Values to bind (parameters, input start values) and the SSP type of each variable."""
    if isinstance(c, FMUComponent):
        # SSP 1.0 kinds, FMI 3.0's types read as theirs (Float64 -> Real, Int32 -> Integer)
        kinds = {v.name: ("Integer" if v.type == "Enumeration" else _TYPES_2.get(v.type, v.type))
                 for v in c.model_description.modelVariables}
        return dict(c.parameters), kinds
    block = c.block
    values: dict[str, Any] = dict(block.params)
    kinds = {n: _kind_of(v) for n, v in values.items()}
    for s in block.INPUTS:
        if block.inputs[s.name] != s.start:
            values[s.name] = block.inputs[s.name]
    return values, kinds


def _kind_of(value: Any) -> str:
    if isinstance(value, bool):
        return "Boolean"
    if isinstance(value, int):
        return "Integer"
    if isinstance(value, str):
        return "String"
    return "Real"


def _xml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)  # shortest repr: reads back bit for bit
    return str(value)


# ---------------------------------------------------------------------------------
# import
# ---------------------------------------------------------------------------------
def import_ssp(path: str | Path, *, allow_python_blocks: bool | str = PROJECT_BLOCKS) -> System:
    """Read an ``.ssp`` archive or an ``.ssd`` file into a :class:`System`.

    The default experiment goes to ``system.experiment``.  For an archive the
    resources are unpacked (safely) into a temporary folder that lives as long as
    the returned system.

    Raises
    ------
    SSPError
        Malformed XML, a missing required attribute or element, an unknown
        component, connector or parameter, an unsafe archive, or a feature not
        supported (see the module docstring); the message names the element.
    """
    check_allow(allow_python_blocks)
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file")
    keep = None
    if path.suffix == ".ssd":
        ssd, base, inside = path, path.resolve().parent, False
    else:
        try:
            names = check_archive(path)
        except ValueError as e:
            raise SSPError(str(e)) from None
        if "SystemStructure.ssd" not in names:
            raise SSPError(f"{path}: an SSP archive must hold SystemStructure.ssd at its root; "
                           f"found {', '.join(names[:10]) or 'nothing'}")
        keep = tempfile.TemporaryDirectory(prefix="flexcosim-ssp-")
        try:
            base = safe_extract(path, keep.name).resolve()
        except (ValueError, OSError, EOFError, NotImplementedError, zipfile.BadZipFile,
                zlib.error) as e:   # a member whose sizes or CRC lie, a truncated stream, ...
            keep.cleanup()
            raise SSPError(f"{path}: cannot unpack the archive: {e}") from None
        ssd, inside = base / "SystemStructure.ssd", True
    system = _read_ssd(ssd, base, inside, allow_python_blocks, label=str(path))
    system.unpacked = keep  # removed with the system
    return system


def _read_ssd(ssd: Path, base: Path, inside: bool, allow_blocks: bool | str,
              label: str) -> System:
    try:
        root = ET.parse(ssd).getroot()
    except ET.ParseError as e:
        raise SSPError(f"{label}: SystemStructure.ssd is not well-formed XML: {e}") from None
    if root.tag != _q(SSD, "SystemStructureDescription"):
        raise SSPError(f"{label}: root element is <{_local(root.tag)}>, expected "
                       f"<ssd:SystemStructureDescription> in namespace {SSD}")
    where = "<ssd:SystemStructureDescription>"
    version = _attr(root, "version", where, label)
    if not version.startswith(SSD_VERSIONS):
        raise SSPError(f"{label}: {where} version {version!r} is not supported; accepted: "
                       "1.x (SSP 1.0) and 2.x (SSP 2.0, what SSP 1.0 can express)")
    _attr(root, "name", where, label)
    sysel = _child(root, SSD, "System", where, label, required=True)
    sname = _attr(sysel, "name", "<ssd:System>", label)
    swhere = f"<ssd:System name={sname!r}>"
    if sysel.find(_q(SSD, "Connectors")) is not None and len(sysel.find(_q(SSD, "Connectors"))):
        raise SSPError(f"{label}: {swhere} has connectors of its own: system-level connectors "
                       "are not supported")
    elements = _child(sysel, SSD, "Elements", swhere, label, required=True)
    for el in elements:  # before any component is loaded or any module imported
        source = el.get("source") or ""
        if el.get("type") == BLOCK_TYPE or source.startswith(BLOCK_SCHEME):
            refuse_block(source, allow_blocks, f"<ssd:Component name={el.get('name')!r}>",
                          label)
    components: list[Component] = []
    for n, el in enumerate(elements, 1):
        tag = _local(el.tag)
        ewhere = f"<ssd:{tag}> #{n} of {swhere}/<ssd:Elements>"
        if el.tag == _q(SSD, "System"):
            raise SSPError(f"{label}: {ewhere} (name={el.get('name')!r}): nested systems are "
                           "not supported")
        if el.tag != _q(SSD, "Component"):
            raise SSPError(f"{label}: {ewhere}: unexpected element; expected <ssd:Component>")
    outer = _system_bindings(sysel, [el.get("name") for el in elements], swhere, base, inside,
                             label)
    for n, el in enumerate(elements, 1):
        ewhere = f"<ssd:Component> #{n} of {swhere}/<ssd:Elements>"
        components.append(_read_component(el, ewhere, base, inside, allow_blocks, label,
                                          outer.get(el.get("name"), {})))

    pairs = []
    conns = sysel.find(_q(SSD, "Connections"))
    for n, el in enumerate(conns if conns is not None else [], 1):
        cwhere = f"<ssd:Connection> #{n} of {swhere}/<ssd:Connections>"
        if el.tag != _q(SSD, "Connection"):
            raise SSPError(f"{label}: {cwhere}: unexpected element <{_local(el.tag)}>")
        for a in ("startElement", "endElement"):
            if el.get(a) is None:
                raise SSPError(f"{label}: {cwhere}: no {a!r}: connections to the system's own "
                               "connectors are not supported")
        start = f"{el.get('startElement')}.{_attr(el, 'startConnector', cwhere, label)}"
        end = f"{el.get('endElement')}.{_attr(el, 'endConnector', cwhere, label)}"
        for ref in (start, end):
            check_name(ref, f"{label}: {cwhere}")
        for child in el:
            if child.tag in (_q(SSD, "ConnectionGeometry"), _q(SSD, "Annotations")):
                continue  # drawing and tool data (OMSimulator writes geometry)
            raise SSPError(f"{label}: {cwhere} ({start} -> {end}): <{_local(child.tag)}> "
                           "(transformation or unit conversion) is not supported")
        pairs.append((start, end, cwhere))
    try:
        system = System(components, [(s, e) for s, e, _ in pairs])
    except ValueError as e:
        bad = next((w for s, e_, w in pairs if s in str(e) or e_ in str(e)), swhere)
        raise SSPError(f"{label}: {bad}: {e}") from None
    system.experiment = _read_experiment(root, label)
    # our own exports write a step for those tools even where the system has none
    if "step" not in system.experiment and root.get("generationTool") != "flexcosim":
        step = _tool_step(root, label)
        if step is not None:
            system.experiment["step"] = step
    return system


def _system_bindings(sysel, names: list[str], swhere: str, base: Path, inside: bool,
                     label: str) -> dict[str, dict[str, Any]]:
    """Values bound at the system level (OMSimulator puts its components' parameters
    there), by component: their names read ``component.variable``."""
    out: dict[str, dict[str, Any]] = {}
    for pname, value in _read_bindings(sysel, swhere, base, inside, label).items():
        comp, dot, var = pname.partition(".")
        if not dot or not var or comp not in names:
            raise SSPError(f"{label}: {swhere}/<ssd:ParameterBindings>: parameter {pname!r} is "
                           "not 'component.variable' of a component of the system "
                           "(parameters of the system itself are not supported); components: "
                           f"{', '.join(n for n in names if n)}")
        out.setdefault(comp, {})[var] = value
    return out


def _read_component(el, where: str, base: Path, inside: bool, allow_blocks: bool | str,
                    label: str, outer: Mapping[str, Any] | None = None) -> Component:
    """A component; ``outer``: values bound to it at the system level, which override its
    own bindings (the enclosing level has the last word)."""
    name = _attr(el, "name", where, label)
    check_component_name(name, f"{label}: {where}")
    where = f"<ssd:Component name={name!r}>"
    source = _attr(el, "source", where, label)
    kind = el.get("type", FMU_TYPE)
    values = {**_read_bindings(el, where, base, inside, label), **(outer or {})}
    connectors = _read_connectors(el, where, label)
    feedthrough = None
    for ann in el.iterfind(f"{_q(SSD, 'Annotations')}/{_q(SSC, 'Annotation')}"):
        if ann.get("type") == FEEDTHROUGH_ANNOTATION:
            # inside <fc:FeedthroughOverride>; files written before it had the entries
            # directly in the annotation (not valid SSP 1.0, still read)
            feedthrough = {f.get("output"): tuple((f.get("inputs") or "").split())
                           for f in ann.iter(_q(FC, "Feedthrough"))}
    if kind == BLOCK_TYPE or source.startswith(BLOCK_SCHEME):
        refuse_block(source, allow_blocks, where, label)
        comp = block_component(name, source, values, where, label)
    elif kind == FMU_TYPE:
        fmu = _resolve_source(source, base, inside, where, label)
        try:
            comp = FMUComponent(name, fmu, parameters=values, feedthrough=feedthrough)
        except (ValueError, OSError) as e:
            raise SSPError(f"{label}: {where} (source={source!r}): {e}") from None
    else:
        raise SSPError(f"{label}: {where}: type {kind!r} is not supported; accepted: "
                       f"{FMU_TYPE!r}, {BLOCK_TYPE!r}")
    for cname, ckind in connectors:
        ok = {"input": comp.inputs, "output": comp.outputs}.get(ckind)
        if ok is not None and cname not in ok:
            raise SSPError(f"{label}: {where}/<ssd:Connector name={cname!r}>: {name!r} has no "
                           f"{ckind} {cname!r}; {ckind}s: {', '.join(ok) or '(none)'}")
    return comp




def _resolve_source(source: str, base: Path, inside: bool, where: str, label: str) -> Path:
    if source.startswith("file:"):
        if inside:
            raise SSPError(f"{label}: {where}: source {source!r} points outside the archive")
        from urllib.parse import unquote, urlparse

        target = Path(unquote(urlparse(source).path))
    else:
        rel = Path(source)
        if inside and (rel.is_absolute() or ".." in rel.parts):
            raise SSPError(f"{label}: {where}: source {source!r} points outside the archive")
        target = (base / rel).resolve()
        if inside and base not in target.parents:
            raise SSPError(f"{label}: {where}: source {source!r} points outside the archive")
    if not target.is_file():
        raise SSPError(f"{label}: {where}: source {source!r} not found")
    return target


def _read_connectors(el, where: str, label: str) -> list[tuple[str, str]]:
    out = []
    conns = el.find(_q(SSD, "Connectors"))
    for n, c in enumerate(conns if conns is not None else [], 1):
        cwhere = f"{where}/<ssd:Connector> #{n}"
        cname = _attr(c, "name", cwhere, label)
        check_name(cname, f"{label}: {cwhere}")
        kind = _attr(c, "kind", f"{where}/<ssd:Connector name={cname!r}>", label)
        if kind not in CONNECTOR_KINDS:
            raise SSPError(f"{label}: {where}/<ssd:Connector name={cname!r}>: kind {kind!r}; "
                           f"accepted: {', '.join(CONNECTOR_KINDS)}")
        out.append((cname, kind))
    return out


def _read_bindings(el, where: str, base: Path, inside: bool, label: str) -> dict[str, Any]:
    """Parameter values bound to a component; a bound ``.ssv`` file of an archive must lie
    inside the archive (as FMU sources must): no absolute path, ``..`` or ``file:`` URI."""
    values: dict[str, Any] = {}
    pbs = el.find(_q(SSD, "ParameterBindings"))
    for n, pb in enumerate(pbs if pbs is not None else [], 1):
        bwhere = f"{where}/<ssd:ParameterBinding> #{n}"
        prefix = pb.get("prefix", "")
        if pb.get("source"):
            src = _resolve_source(pb.get("source"), base, inside, bwhere, label)
            try:
                pset = ET.parse(src).getroot()
            except ET.ParseError as e:
                raise SSPError(f"{label}: {bwhere}: {src.name} is not well-formed XML: {e}") from None
        else:
            pv = pb.find(_q(SSD, "ParameterValues"))
            pset = pv.find(_q(SSV, "ParameterSet")) if pv is not None else None
            if pset is None:
                raise SSPError(f"{label}: {bwhere}: neither a 'source' attribute nor an inline "
                               "<ssd:ParameterValues>/<ssv:ParameterSet>")
        if pset.tag != _q(SSV, "ParameterSet"):
            raise SSPError(f"{label}: {bwhere}: expected <ssv:ParameterSet>, found "
                           f"<{_local(pset.tag)}>")
        params = pset.find(_q(SSV, "Parameters"))
        seen: set[str] = set()
        for m, p in enumerate(params if params is not None else [], 1):
            pname = _attr(p, "name", f"{bwhere}/<ssv:Parameter> #{m}", label)
            pwhere = f"{bwhere}/<ssv:Parameter name={pname!r}>"
            check_name(pname, f"{label}: {pwhere}")
            if pname in seen:
                raise SSPError(f"{label}: {pwhere}: given twice in one <ssv:ParameterSet>: "
                               "accepted: each parameter once")
            seen.add(pname)
            typed = [c for c in p if _local(c.tag) in _TYPES or _local(c.tag) in _TYPES_2]
            if len(typed) != 1:
                raise SSPError(f"{label}: {pwhere}: needs exactly one of "
                               f"{', '.join('<ssv:' + t + '>' for t in _TYPES)}")
            values[pname[len(prefix):] if prefix and pname.startswith(prefix) else pname] = \
                _typed_value(typed[0], pwhere, label)
    return values


def _typed_value(el, where: str, label: str) -> Any:
    """The value of ``<ssv:Real value=...>`` (or Float32, Int8, ...): read with XML Schema's
    grammar for its type and checked against the type's range."""
    name = _local(el.tag)
    kind = _TYPES_2.get(name, name)
    text = _attr(el, "value", f"{where}/<ssv:{name}>", label)
    word = text.strip(_XS_SPACE)

    def bad(reason: str) -> SSPError:
        return SSPError(f"{label}: {where}/<ssv:{name}>: value {short_repr(text)} is invalid: "
                        f"{reason}")

    if kind == "Real":
        if not _XS_FLOAT.fullmatch(word):
            raise bad("not an XML Schema number (accepted: e.g. 1, -0.5, 1.5e-3)")
        value = float(word)
        if not math.isfinite(value):
            raise bad(f"accepted: a finite number ({name})")
        if name == "Float32":
            try:
                struct.pack("<f", value)
            except OverflowError:
                raise bad(f"out of range: accepted: Float32 numbers in "
                          f"[-{_FLOAT32_MAX!r}, {_FLOAT32_MAX!r}]") from None
        return value
    if kind in ("Integer", "Enumeration"):
        if not _XS_INTEGER.fullmatch(word) or len(word) > 40:
            raise bad(f"not an integer (accepted: {name} integers, e.g. 3, -12)")
        value = int(word)
        lo, hi = INTEGER_RANGES.get(name, INTEGER_RANGES["Integer"])
        if not lo <= value <= hi:
            raise bad(f"out of range: accepted: {name} integers in [{lo}, {hi}]")
        return value
    if kind == "Boolean":
        if word not in _XS_BOOLEAN:
            raise bad("accepted: true, false, 1, 0")
        return word in ("true", "1")
    return text


def _xs_time(text: str) -> float | None:
    """A finite xs:double, None if ``text`` is not one (XML Schema's grammar)."""
    word = text.strip(_XS_SPACE)
    if not _XS_FLOAT.fullmatch(word):
        return None
    value = float(word)
    return value if math.isfinite(value) else None


def _read_experiment(root, label: str) -> dict[str, Any]:
    de = root.find(_q(SSD, "DefaultExperiment"))
    out: dict[str, Any] = {}
    if de is None:
        return out
    for attr, key in (("startTime", "start_time"), ("stopTime", "stop_time")):
        if de.get(attr) is not None:
            out[key] = _xs_time(de.get(attr))
            if out[key] is None:
                raise SSPError(f"{label}: <ssd:DefaultExperiment>: {attr}={short_repr(de.get(attr))} "
                               "is not a number: accepted: a finite XML Schema number [s]")
    for ann in de.iterfind(f"{_q(SSD, 'Annotations')}/{_q(SSC, 'Annotation')}"):
        if ann.get("type") == MASTER_ANNOTATION:
            m = ann.find(_q(FC, "Master"))
            if m is not None:
                try:
                    if m.get("step") is not None:
                        out["step"] = _xs_time(m.get("step"))
                        if out["step"] is None:
                            raise ValueError(f"step={short_repr(m.get('step'))} is not a finite "
                                             "XML Schema number [s]")
                    if m.get("extrapolation") is not None:
                        out["extrapolation"] = int(m.get("extrapolation"))
                except ValueError as e:
                    raise SSPError(f"{label}: <fc:Master> annotation: {e}") from None
                if m.get("method") is not None:
                    out["method"] = m.get("method")
    return out


#: Where other tools keep the communication step [s], as (path from ssd:SystemStructure-
#: Description, attribute): OMSimulator's fixed-step master (its exports; ours write it
#: too) and the Open Simulation Platform's fixed-step algorithm (libcosim)
_TOOL_STEPS = (
    (f"{_q(SSD, 'System')}/{_q(SSD, 'Annotations')}/{_q(SSC, 'Annotation')}"
     f"[@type='{OMS_ANNOTATION}']/{_q(OMS, 'Annotations')}/{_q(OMS, 'SimulationInformation')}"
     f"/{_q(OMS, 'FixedStepMaster')}", "stepSize"),
    (f"{_q(SSD, 'DefaultExperiment')}/{_q(SSD, 'Annotations')}/{_q(SSC, 'Annotation')}"
     f"[@type='{OSP_ANNOTATION}']/{_q(OSP, 'Algorithm')}/{_q(OSP, 'FixedStepAlgorithm')}",
     "baseStepSize"),
)


def _tool_step(root, label: str) -> float | None:
    """The communication step [s] another tool wrote (``_TOOL_STEPS``), where the file
    has no ``fc:Master`` step of ours: OMSimulator keeps it in nothing else."""
    for path, attr in _TOOL_STEPS:
        el = root.find(path)
        if el is None or el.get(attr) is None:
            continue
        step = _xs_time(el.get(attr))
        if step is None or not step > 0.0:
            raise SSPError(f"{label}: <{_local(el.tag)}> {attr}={short_repr(el.get(attr))}: "
                           "accepted: a finite XML Schema number > 0 [s]")
        return step
    return None


def _attr(el, name: str, where: str, label: str) -> str:
    value = el.get(name)
    if value is None or value == "":
        raise SSPError(f"{label}: {where}: missing required attribute {name!r}")
    return value


def _child(el, ns: str, tag: str, where: str, label: str, required: bool = False):
    found = el.find(_q(ns, tag))
    if found is None and required:
        raise SSPError(f"{label}: {where}: missing required element <ssd:{tag}>")
    return found


def _local(tag: str) -> str:
    return tag.rpartition("}")[2]