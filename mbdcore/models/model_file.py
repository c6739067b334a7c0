"""Model files with the ready-made models' engine elements: the spatial format of
:mod:`mbdcore.spatial.model_file` with DC motors, their supply voltages, diagonal screw
drives and latches (docs/ring_truss.md, "The truss as a model file").

The spatial files' keys and rules hold unchanged (``"dimension": 3``, SI units, markers
``"body.marker"``); this module adds

* the body type ``dc_motor`` (:class:`~mbdcore.models.drive.DCMotorBody`: coordinates
  rotor angle [rad] and armature charge [C]; keys ``angle``, ``speed``, ``current`` and
  every entry of :data:`~mbdcore.models.drive.MOTOR_PARAMETERS` with its unit and range);
* the force types ``motor_voltage`` (:class:`~mbdcore.models.drive.MotorVoltage`: the
  armature voltage [V] from a system input), ``screw_drive``
  (:class:`~mbdcore.models.ring_truss.DiagonalScrewDrive`: a motor's screw extending the
  line between two markers) and ``latch`` (:class:`~mbdcore.models.ring_truss.DiagonalLatch`:
  end stop and latch of that line at its deployed length);
* the top-level key ``removed_equations`` (the constraint
  equations ``"joint.equation"`` found dependent where the system judged them, applied
  instead of judging them again at the initial state)::

    {"format": "flexcosim-model", "version": 1, "dimension": 3, ...,
     "bodies": [..., {"type": "dc_motor", "name": "motor0", "angle": 0.0, "speed": 0.0,
                      "current": 0.0, "resistance": 3.07, "inductance": 0.00657, ...}],
     "forces": [{"type": "motor_voltage", "name": "supply0", "motor": "motor0",
                 "input": "voltage0"},
                {"type": "screw_drive", "name": "screw0", "motor": "motor0",
                 "a": "vertical0.top", "b": "vertical1.bottom", "lead": 0.002,
                 "ratio": 4.0, "stiffness": 200000.0, "damping": 2000.0},
                {"type": "latch", "name": "latch0", "a": "vertical0.top",
                 "b": "vertical1.bottom", "deployed_length": 1.5968,
                 "stiffness": 1e7, "damping": 1e4}],
     "inputs": {"voltage0": 0.0},
     "removed_equations": ["vertical0.frame.uu", "gear_top0.moment", ...]}

**Why a third reader, here.**  The motors and the truss's force elements live in
:mod:`mbdcore.models`, above :mod:`mbdcore.spatial` in the layers, so the spatial reader
cannot name them; this module is the spatial reader's tables extended
(:class:`~mbdcore.spatial.model_file.SpatialTables`, read and written by the spatial
module's :func:`~mbdcore.spatial.model_file.check_spatial`,
:func:`~mbdcore.spatial.model_file.build_spatial` and
:func:`~mbdcore.spatial.model_file.describe_spatial`), as the spatial reader is the
planar machinery with 3D tables.  Its :func:`load_model` reads every file: planar ones
go to the planar reader unchanged, spatial ones with or without these elements are
built here.  Callers above this layer (the command line, :class:`ModelSystemBlock
<mbdcore.models.model_block.ModelSystemBlock>`) use it.

**Why ``removed_equations``.**  A spatial system removes its dependent constraint
equations where it first judges them, by default at the initial state; the ring truss
judges them at full deployment, where the ungeared ring's closure is singular
(docs/ring_truss.md, "Folding pattern"), and the rows it keeps there differ from those a
check at the folded state keeps (17 of 27 names differ for 4 bays).  A file without the
record would load as a system with other rows: other multipliers, other round-off, and
near deployment rows that lose rank.  So :func:`model_to_dict` writes the judgement the
system has made (``System.redundancy_resolved``), and the loader applies it
(``System.set_redundant_equations``): the loaded system steps bit-identically.

**What a file does not hold.**  Controllers: the truss's
:class:`~mbdcore.models.ring_truss.DeploymentRateController` is a sampled law
(``feedback`` of :func:`~mbdcore.dae.simulate.simulate`), not an element of the
system; it reads the motor voltages' inputs ``voltage{k}`` and the latches by name and is
made on a :class:`~mbdcore.models.ring_truss.RingTruss`.  A loaded file is driven by
its inputs (a schedule, a feedback function, or as a block or FMU by whatever is
connected to ``voltage{k}``).  A latch's discrete state is not written: a file
describes the system at its initial state, where every latch is open (save before a
run, not after one).  Motors, screws and latches are 3D elements only (planar files
keep the planar reader's elements).
"""
from __future__ import annotations

from collections.abc import Mapping

from mbdcore.blocks import Parameter, ParameterError
from mbdcore.models.drive import MOTOR_PARAMETERS, DCMotorBody, MotorVoltage
from mbdcore.models.ring_truss import DiagonalLatch, DiagonalScrewDrive
from mbdcore.multibody.model_file import (
    Dimension,
    ElementType,
    Key,
    ModelFileError,
    ValueKind,
    is_finite_number,
    show_value,
)
from mbdcore.multibody.system import System
from mbdcore.spatial.model_file import (
    DIMENSION,
    KINDS_3D,
    PLANAR_KEY_HINTS,
    SPATIAL_FORMAT,
    SPATIAL_TABLES,
    TOP_KEYS,
    SpatialTables,
    build_spatial,
    check_spatial,
    describe_spatial,
    spatial_marker_out,
    spatial_reference,
    spatial_schema,
)
from mbdcore.spatial.system import SpatialSystem

__all__ = ["MODEL_BODY_TYPES", "MODEL_FORCE_TYPES", "MODEL_TABLES", "MODEL_TOP_KEYS", "MODEL_FORMAT",
           "parameter_kind", "validate_model", "model_from_dict", "load_model",
           "model_to_dict", "save_model", "format_reference", "MODEL_SCHEMA"]


# --- value kinds ------------------------------------------------------------------------------
def parameter_kind(parameter: Parameter) -> ValueKind:
    """The value kind of a block :class:`~mbdcore.blocks.Parameter` (a number in its
    range): the file accepts what the element's constructor accepts, in the same words."""
    def check(v, ctx) -> str | None:
        if not is_finite_number(v):
            return "invalid"
        try:
            parameter.validate(v)
        except ParameterError:
            return "invalid"
        return None

    schema: dict = {"type": "integer" if parameter.kind is int else "number"}
    if parameter.min is not None:
        schema["exclusiveMinimum" if parameter.exclusive_min else "minimum"] = parameter.min
    if parameter.max is not None:
        schema["maximum"] = parameter.max
    return ValueKind(parameter.accepted().removeprefix("a ").replace("finite number",
                                                                      "finite numbers"),
                     check, parameter.kind, schema)


def _check_motor(v, ctx) -> str | None:
    if not isinstance(v, str):
        return "invalid"
    if ctx.body_types.get(v) != "dc_motor":
        motors = [n for n, t in ctx.body_types.items() if t == "dc_motor"]
        what = f"is a {ctx.body_types[v]}" if v in ctx.body_types else "does not exist"
        return (f"body {v!r} {what}; accepted: the name of a dc_motor body: "
                f"{', '.join(motors) or '(none)'}")
    return None


_MOTOR = Key(ValueKind("names of dc_motor bodies", _check_motor, str, {"type": "string"}),
             doc="the motor (a dc_motor body)", required=True)


def _key(kind: str, unit: str = "", doc: str = "", required: bool = False) -> Key:
    return Key(KINDS_3D[kind], unit, doc, required)


# --- element tables ---------------------------------------------------------------------------
def _describe_motor(b: DCMotorBody) -> dict:
    return {"angle": b.angle0, "speed": b.speed0, "current": b.current0,
            **{p.name: b.params[p.name] for p in MOTOR_PARAMETERS}}


#: body types this module adds to the spatial ones
MODEL_BODY_TYPES: dict[str, ElementType] = {e.type: e for e in (
    ElementType(DCMotorBody, {
        "name": Key("body_name", doc="unique body name", required=True),
        "angle": _key("number", "rad", "initial rotor angle relative to the stator "
                      "(default 0)"),
        "speed": _key("number", "rad/s", "initial rotor rate (default 0)"),
        "current": _key("number", "A", "initial armature current (default 0)"),
        **{p.name: Key(parameter_kind(p), p.unit, f"{p.description} (default {p.default:g})")
           for p in MOTOR_PARAMETERS}},
        _describe_motor, type_name="dc_motor"),
)}


def _line_pair(e) -> dict:
    return {"a": spatial_marker_out(e.a_ref), "b": spatial_marker_out(e.b_ref)}


#: force types this module adds to the spatial ones
MODEL_FORCE_TYPES: dict[str, ElementType] = {e.type: e for e in (
    ElementType(MotorVoltage, {
        "motor": _MOTOR,
        "input": _key("name", doc="name of the system input giving the armature voltage "
                      "[V] (clipped to the motor's voltage_limit)", required=True)},
        lambda e: {"motor": e.motor_name, "input": e.input_names[0]}),
    ElementType(DiagonalScrewDrive, {
        "motor": _MOTOR,
        "a": _key("marker", doc="end of the line the reaction -F acts on", required=True),
        "b": _key("marker", doc="end of the line the push F acts on (along a -> b)",
                  required=True),
        "lead": _key("positive", "m/rad", "extension per screw radian", required=True),
        "ratio": _key("positive", doc="gearbox ratio N (motor turns per screw turn)",
                      required=True),
        "stiffness": _key("positive", "N/m", "axial stiffness of gearbox and screw",
                          required=True),
        "damping": _key("nonnegative", "N s/m", "axial damping of gearbox and screw",
                        required=True)},
        lambda e: {"motor": e.motor_name, **_line_pair(e), "lead": e.lead, "ratio": e.ratio,
                   "stiffness": e.k, "damping": e.c},
        distinct=("a", "b")),
    ElementType(DiagonalLatch, {
        "a": _key("marker", doc="one end of the latched line", required=True),
        "b": _key("marker", doc="the other end", required=True),
        "deployed_length": _key("positive", "m", "length l_d the line stops and latches at",
                                required=True),
        "stiffness": _key("positive", "N/m", "end stop and latch stiffness", required=True),
        "damping": _key("nonnegative", "N s/m", "end stop and latch damping",
                        required=True)},
        lambda e: {**_line_pair(e), "deployed_length": e.length, "stiffness": e.k,
                   "damping": e.c},
        distinct=("a", "b")),
)}

_BODY_TYPES = {**SPATIAL_TABLES.body_types, **MODEL_BODY_TYPES}

#: top-level keys of the files of this module (the spatial ones and two more)
MODEL_TOP_KEYS = {
    **TOP_KEYS,
    "bodies": "list of bodies, each with a \"type\": " + ", ".join(_BODY_TYPES),
    "inputs": "start values of the inputs declared by forces (motor voltages [V]; "
              "default 0)",
    "removed_equations": "constraint equations 'joint.equation' found dependent where the "
                         "system judged them (default: judged at the initial state)",
}

#: the tables of this module's files: the spatial ones with the motors, screw drives and
#: latches
MODEL_TABLES = SpatialTables(
    _BODY_TYPES, SPATIAL_TABLES.joint_types,
    {**SPATIAL_TABLES.force_types, **MODEL_FORCE_TYPES}, MODEL_TOP_KEYS,
    PLANAR_KEY_HINTS, "V, N m or N")


# --- validation -------------------------------------------------------------------------------
def _check_removed(d: Mapping, problems: list) -> None:
    if "removed_equations" not in d:
        return
    names = d["removed_equations"]
    if not isinstance(names, list):
        problems.append(f"removed_equations: {show_value(names)} is invalid: accepted values "
                        "are lists of 'joint.equation' names")
        return
    for i, name in enumerate(names):
        if not (isinstance(name, str) and "." in name.strip(".")):
            problems.append(f"removed_equations[{i}]: {show_value(name)} is invalid: accepted "
                            "values are 'joint.equation' names")


def _check(d: Mapping, problems: list) -> None:
    check_spatial(d, MODEL_TABLES, problems)
    _check_removed(d, problems)


def validate_model(d) -> list[str]:
    """All problems of a model dictionary of either dimension (empty list: valid); see
    :func:`mbdcore.spatial.model_file.validate_model`."""
    return MODEL_FORMAT.validate(d)


# --- building ---------------------------------------------------------------------------------
def _build(d: Mapping, source: str | None = None) -> SpatialSystem:
    s = build_spatial(d, MODEL_TABLES, source)
    try:
        if "removed_equations" in d:
            s.set_redundant_equations(d["removed_equations"])
    except ParameterError as exc:   # an equation name no constraint has
        raise ModelFileError([f"removed_equations: {exc}"], source) from exc
    return s


def model_from_dict(d: Mapping, source: str | None = None) -> System:
    """Build the system a model dictionary describes (a
    :class:`~mbdcore.spatial.system.SpatialSystem` for ``"dimension": 3``, with motors,
    screw drives and latches; the planar System otherwise).

    Raises
    ------
    ModelFileError
        With all problems of ``d`` in ``.problems``.
    """
    return MODEL_FORMAT.from_dict(d, source)


def load_model(path_or_dict) -> System:
    """Load a model file (``.json``, or ``.yaml``/``.yml`` with PyYAML) or dictionary of
    either dimension, with the elements of this module.  Not assembled.

    Raises
    ------
    ModelFileError
        With every problem of the file in ``.problems``.
    """
    return MODEL_FORMAT.load(path_or_dict)


# --- saving -----------------------------------------------------------------------------------
def _describe(system: SpatialSystem, description: str | None = None) -> dict:
    d = describe_spatial(system, MODEL_TABLES, description)
    if system.redundancy_resolved:
        d["removed_equations"] = list(system.redundant_equations)
    return d


def model_to_dict(system: System, description: str | None = None) -> dict:
    """Describe a system of either dimension as a model dictionary, every key explicit;
    a spatial one with its inputs' start values and, once the system has judged its
    dependent equations, their names (``removed_equations``).  Loading the result gives
    the same coordinates, initial state, constraint rows and forces.

    Raises
    ------
    ModelFileError
        If an element cannot be expressed (a Python function of time, a class no table
        holds, a cable through given nodes, a moved ground frame).
    """
    return MODEL_FORMAT.to_dict(system, description)


def save_model(system: System, path, description: str | None = None):
    """Write ``system`` (either dimension, with motors, screw drives and latches) to
    ``path`` (``.json``, or ``.yaml``/``.yml`` with PyYAML), floats in their shortest
    exact representation; returns the path.  The ring truss:
    ``save_model(truss.system, "truss.json")``."""
    return MODEL_FORMAT.save(system, path, description)


#: every model file: the spatial format with this module's tables for ``"dimension": 3``
#: (the one entry point of the command line)
MODEL_FORMAT = SPATIAL_FORMAT.extended({DIMENSION: Dimension(_check, _build, _describe)})


# --- reference and JSON Schema ------------------------------------------------------------------
def format_reference() -> str:
    """The spatial element types with this module's, and their keys, as text."""
    return spatial_reference(MODEL_TABLES)


#: JSON Schema (draft 2020-12) of the spatial files with motors, screw drives and latches
MODEL_SCHEMA: dict = spatial_schema(
    MODEL_TABLES, "https://flexcosim.invalid/schemas/flexcosim-model-1-3d-models.json",
    "flexcosim spatial multibody model with drives and latches",
    {"removed_equations": {"type": "array",
                           "items": {"type": "string", "pattern": r"^[^.]+\..+$"}}})
