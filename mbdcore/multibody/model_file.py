"""Planar multibody models as declarative files (JSON; YAML when PyYAML is installed).

A model file describes the same :class:`~mbdcore.multibody.System` as the Python API,
element for element: one ``type`` name per element class (the class's ``kind``) and,
for every element, keys named after the constructor's arguments.  SI units throughout
(m, rad, kg, s, N)::

    {"format": "flexcosim-model", "version": 1,
     "description": "optional free text",
     "gravity": [0, -9.80665],
     "ground": {"markers": {"O": [0, 0]}},
     "bodies": [{"name": "crank", "mass": 0.4, "inertia": 0.0013,
                 "position": [0.05, 0.087], "angle": 1.047, "velocity": [0, 0], "omega": 0,
                 "markers": {"O": [-0.1, 0], "A": [0.1, 0]}}],
     "joints": [{"type": "revolute", "name": "O", "a": "ground.O", "b": "crank.O"},
                {"type": "driver", "name": "drive", "a": "ground", "b": "crank",
                 "motion": {"type": "constant_rate", "angle0": 0.3, "rate": 6.0}}],
     "forces": [{"type": "torque", "name": "motor", "a": "ground", "b": "crank",
                 "input": "tau"}],
     "inputs": {"tau": 0.0}}

A body without ``type`` is a rigid body (``"rigid_body"``); ``"modal_beam"``,
``"finite_segment_beam"`` and ``"ancf_beam"`` are the planar beams of
:mod:`mbdcore.multibody.flexible` and :mod:`mbdcore.multibody.ancf`, whose markers are
arc lengths [m] from the root (``root`` and ``tip`` exist), see :data:`BODY_TYPES`.
Markers are referenced as ``"body.marker"`` or, for a point that has no marker, as
``{"body": "crank", "point": [x, y]}`` (body frame, from the centre of mass [m]) on a
rigid body and ``{"body": "beam", "arc_length": s}`` on a beam.  The top-level
``inputs``, ``outputs`` and ``method`` (the same in every file of either dimension,
:data:`~mbdcore.multibody.model_format.RUN_KEYS`) configure the block made of the file
(docs/model_files.md).

Public API: :func:`load_model`, :func:`model_from_dict`, :func:`validate_model`,
:func:`model_to_dict`, :func:`save_model`, :data:`MODEL_SCHEMA`, :class:`ModelFileError`;
:func:`format_reference` lists every element type with its keys and accepted values.

A file may say ``"dimension": 2``; ``"dimension": 3`` is a spatial model, which this
layer cannot build (:mod:`mbdcore.multibody` knows nothing of :mod:`mbdcore.spatial`):
it is refused with a message naming :func:`mbdcore.spatial.load_model`, which reads both
dimensions.  The file side (reading and writing, :class:`ModelFileError`, the run keys and
:class:`ModelFormat`) is :mod:`mbdcore.multibody.model_format`'s, re-exported here.  The
machinery below (value kinds :class:`ValueKind`, keys :class:`Key`,
typed element tables :class:`ElementType`, the references a file defines
:class:`ReferenceContext`, the ``check_*`` functions that report key paths, and
:func:`read_model_data`/:func:`write_model_data`) is public so that the spatial format
(:mod:`mbdcore.spatial.model_file`) is these tables and nothing else.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

import numpy as np

from mbdcore.blocks import ParameterError
from mbdcore.multibody.ancf import END_MARKERS as LINE_END_MARKERS
from mbdcore.multibody.ancf import ANCFBeam
from mbdcore.multibody.constraints import (
    AngleDriver,
    ConstantRate,
    PointOnLine,
    PolynomialMotion,
    Prismatic,
    Revolute,
    SpinUp,
    SynchronousGear,
    Weld,
    constant_rate,
    polynomial_motion,
)
from mbdcore.multibody.forces import (
    ConstantTorque,
    Contact,
    JointForce,
    JointTorque,
    PointForce,
    RotationalSpringDamper,
    TranslationalSpringDamper,
)
from mbdcore.multibody.flexible import FiniteSegmentBeam, ModalBeam
from mbdcore.multibody.model_format import (
    FILE_TYPES,
    FORMAT,
    RUN_KEYS,
    SUBSTEPS_RANGE,
    VERSION,
    Dimension,
    ModelFileError,
    ModelFormat,
    apply_run_keys,
    check_run_keys,
    describe_run_keys,
    is_finite_number,
    is_number,
    key_name,
    load_with,
    read_model_data,
    run_schema,
    show_value,
    write_model_data,
)
from mbdcore.multibody.system import Body, System

__all__ = ["FORMAT", "VERSION", "FILE_TYPES", "ModelFileError", "check_marker_name", "check_ground", "KINDS", "JOINT_TYPES",
           "FORCE_TYPES", "MOTION_TYPES", "BODY_KEYS", "BODY_TYPES", "RIGID_BODY", "TOP_KEYS", "choice_kind", "validate_model",
           "model_from_dict", "load_model", "model_to_dict", "save_model", "format_reference",
           "MODEL_SCHEMA",
           # the machinery, for the spatial format (mbdcore.spatial.model_file); the file
           # side (reading, writing, the format, the run keys) is model_format's, here too
           "ValueKind", "Key", "ElementType", "ReferenceContext", "Undescribable", "NAME_KEY",
           "show_value", "key_name", "is_number", "is_finite_number", "check_value", "check_keys", "check_header",
           "check_marker_table", "check_list", "check_element", "check_section", "check_inputs",
           "RUN_KEYS", "SUBSTEPS_RANGE", "check_run_keys", "apply_run_keys", "describe_run_keys",
           "run_schema",
           "element_names", "convert_values", "marker_out", "describe_motion",
           "Dimension", "ModelFormat", "PLANAR_FORMAT",
           "describe_elements", "read_model_data", "write_model_data", "load_with", "key_schema",
           "object_schema"]

# --- value kinds ----------------------------------------------------------------------------
# A kind checks one value (appending problems that name the path and the accepted values),
# converts it for the constructor and gives its JSON Schema; the element tables below refer
# to kinds by name so that validation, construction and MODEL_SCHEMA share one definition.


def _yaml_hint(value) -> str:
    # PyYAML (YAML 1.1) reads 1e-3 as a string: say so instead of a bare "invalid"
    if isinstance(value, str):
        try:
            float(value)
        except ValueError:
            return ""
        return " (this is a string; write numbers unquoted, and in YAML with a dot: 1.0e-3)"
    return ""


@dataclass
class ReferenceContext:
    """What references are checked against, filled while a file is checked: the marker
    names per body (ground included), each body's type (spatial files: a marker point is
    a 3-vector on a rigid body, an arc length on a bar or cable) and the joints checked
    so far with their types (spatial gears and drivers name a revolute joint)."""

    markers: dict[str, list[str]] = field(default_factory=dict)
    body_types: dict[str, str] = field(default_factory=dict)
    joint_types: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ValueKind:
    """How one kind of value is checked (``check(value, context)`` gives None or the
    reason, "invalid" for the standard message naming ``accepted``), converted for the
    constructor and described in the JSON Schema."""

    accepted: str                                     # "finite numbers > 0"
    check: Callable[[Any, ReferenceContext], str | None]      # None if fine, else the reason
    convert: Callable[[Any], Any]
    schema: dict


def _number_kind(accepted: str, test: Callable[[float], bool], schema_extra: dict) -> ValueKind:
    def check(v, ctx):
        return None if is_finite_number(v) and test(float(v)) else "invalid"
    return ValueKind(accepted, check, float, {"type": "number", **schema_extra})


def _vector_check(nonzero: bool):
    def check(v, ctx):
        if not (isinstance(v, (list, tuple)) and len(v) == 2
                and all(is_finite_number(x) for x in v)):
            return "invalid"
        if nonzero and v[0] == 0 and v[1] == 0:
            return "invalid"
        return None
    return check


_VECTOR_SCHEMA = {"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 2}


def _check_body(v, ctx: ReferenceContext) -> str | None:
    if not isinstance(v, str):
        return "invalid"
    if v not in ctx.markers:
        return f"body {v!r} does not exist; bodies: {', '.join(ctx.markers)}"
    return None


def check_marker_name(v: str, ctx: ReferenceContext) -> str | None:
    """A ``"body.marker"`` reference (either dimension): None if it names a marker of the
    file, else what is wrong with it."""
    if "." not in v:
        return "invalid"
    bname, mname = v.split(".", 1)
    if bname not in ctx.markers:
        return (f"marker {v!r} does not exist: no body {bname!r}; bodies: "
                f"{', '.join(ctx.markers)}")
    if mname not in ctx.markers[bname]:
        return (f"marker {v!r} does not exist; markers of {bname}: "
                f"{', '.join(ctx.markers[bname]) or '(none)'}")
    return None


def _check_marker(v, ctx: ReferenceContext) -> str | None:
    if isinstance(v, str):
        return check_marker_name(v, ctx)
    if not (isinstance(v, Mapping) and "body" in v):
        return "invalid"
    reason = _check_body(v["body"], ctx)
    if reason:
        return reason
    if ctx.body_types.get(v["body"], RIGID_BODY) in _FRAMED:
        if set(v) != {"body", "point"} or _vector_check(False)(v["point"], ctx):
            return "invalid"
    elif set(v) != {"body", "arc_length"} or not is_finite_number(v["arc_length"]):
        return (f"{show_value(v)} is invalid: a point on the {ctx.body_types[v['body']]} "
                f"{v['body']!r} is written {{\"body\": name, \"arc_length\": s}} [m]")
    return None


def _convert_marker(v):
    if isinstance(v, str):
        return v
    if "arc_length" in v:
        return (v["body"], float(v["arc_length"]))
    return (v["body"], tuple(float(x) for x in v["point"]))


def _check_body_pair(v, ctx) -> str | None:
    if not (isinstance(v, (list, tuple)) and len(v) == 2):
        return "invalid"
    for name in v:
        reason = _check_body(name, ctx)
        if reason:
            return reason
    return None


def _check_markers(v, ctx) -> str | None:
    # the markers of a body are checked one by one in _check_body_entry, with their paths
    return None if isinstance(v, Mapping) else "invalid"


def _check_coefficients(v, ctx) -> str | None:
    ok = (isinstance(v, (list, tuple)) and len(v) >= 1
          and all(is_finite_number(x) for x in v))
    return None if ok else "invalid"


def _check_name(v, ctx) -> str | None:
    return None if isinstance(v, str) and v.strip() and "." not in v else "invalid"


def _check_body_name(v, ctx) -> str | None:
    ok = isinstance(v, str) and v.isidentifier() and v != "ground"
    return None if ok else "invalid"


_MARKER_REF_SCHEMA = {"oneOf": [
    {"type": "string", "pattern": r"^[A-Za-z_]\w*\..+$"},
    {"type": "object", "additionalProperties": False, "required": ["body", "point"],
     "properties": {"body": {"type": "string"}, "point": _VECTOR_SCHEMA}},
    {"type": "object", "additionalProperties": False, "required": ["body", "arc_length"],
     "properties": {"body": {"type": "string"}, "arc_length": {"type": "number"}}}]}


def _check_count(minimum: int, maximum: int | None = None):
    def check(v, ctx):
        ok = (isinstance(v, int) and not isinstance(v, bool) and v >= minimum
              and (maximum is None or v <= maximum))
        return None if ok else "invalid"
    return check


def _check_table(v, ctx) -> str | None:
    # marker tables are checked entry by entry with their paths (check_marker_table)
    return None if isinstance(v, Mapping) else "invalid"


def choice_kind(choices) -> ValueKind:
    """The value kind of one of the strings ``choices``."""
    choices = tuple(choices)
    return ValueKind(" or ".join(repr(c) for c in choices),
                     lambda v, ctx: None if isinstance(v, str) and v in choices else "invalid",
                     str, {"enum": list(choices)})

KINDS: dict[str, ValueKind] = {
    "number": _number_kind("finite numbers", lambda x: True, {}),
    "positive": _number_kind("finite numbers > 0", lambda x: x > 0, {"exclusiveMinimum": 0}),
    "nonnegative": _number_kind("finite numbers >= 0", lambda x: x >= 0, {"minimum": 0}),
    "exponent": _number_kind("finite numbers >= 1", lambda x: x >= 1, {"minimum": 1}),
    "vector": ValueKind("lists of 2 finite numbers", _vector_check(False),
                    lambda v: tuple(float(x) for x in v), _VECTOR_SCHEMA),
    "direction": ValueKind("lists of 2 finite numbers, not both 0", _vector_check(True),
                       lambda v: tuple(float(x) for x in v), _VECTOR_SCHEMA),
    "coefficients": ValueKind("non-empty lists of finite numbers", _check_coefficients,
                          lambda v: [float(x) for x in v],
                          {"type": "array", "items": {"type": "number"}, "minItems": 1}),
    "body_name": ValueKind("identifiers (letters, digits, _) other than 'ground'", _check_body_name,
                       str, {"type": "string", "pattern": r"^[A-Za-z_]\w*$",
                             "not": {"const": "ground"}}),
    "name": ValueKind("non-empty strings without '.'", _check_name, str,
                  {"type": "string", "pattern": r"^[^.]*\S[^.]*$"}),
    "body": ValueKind("body names ('ground' or a name from 'bodies')", _check_body, str,
                  {"type": "string"}),
    "body_pair": ValueKind("lists of 2 body names", _check_body_pair, tuple,
                       {"type": "array", "items": {"type": "string"},
                        "minItems": 2, "maxItems": 2}),
    "marker": ValueKind("marker references 'body.marker' or {\"body\": name, \"point\": [x, y]}",
                    _check_marker, _convert_marker, _MARKER_REF_SCHEMA),
    "markers": ValueKind("objects of marker name: [x, y]", _check_markers, dict,
                     {"type": "object", "additionalProperties": _VECTOR_SCHEMA}),
    "arc_lengths": ValueKind("objects of marker name: arc length", _check_table, dict,
                             {"type": "object", "additionalProperties": {"type": "number",
                                                                         "minimum": 0}}),
    "elements": ValueKind("integers >= 1", _check_count(1), int,
                          {"type": "integer", "minimum": 1}),
    "gauss": ValueKind("integers >= 3", _check_count(3), int,
                       {"type": "integer", "minimum": 3}),
    "flag": ValueKind("true or false", lambda v, ctx: None if isinstance(v, bool) else "invalid",
                      bool, {"type": "boolean"}),
}


@dataclass(frozen=True)
class Key:
    """One key of an element: its value kind (a name in :data:`KINDS`, or a
    :class:`ValueKind` of another format's own, e.g. the spatial files' 3-vectors), unit,
    meaning and whether it is required."""

    kind: "str | ValueKind"
    unit: str = ""
    doc: str = ""
    required: bool = False

    @property
    def value_kind(self) -> ValueKind:
        return self.kind if isinstance(self.kind, ValueKind) else KINDS[self.kind]

    def accepted(self) -> str:
        return self.value_kind.accepted + (f" [{self.unit}]" if self.unit else "")


def check_value(path: str, value, key: Key, ctx: ReferenceContext, problems: list) -> bool:
    """Check one value against its key; append a problem naming ``path`` and the accepted
    values if it is wrong.  Returns whether it is fine."""
    reason = key.value_kind.check(value, ctx)
    if reason is None:
        return True
    if reason == "invalid":
        problems.append(f"{path}: {show_value(value)} is invalid: accepted values are "
                        f"{key.accepted()}{_yaml_hint(value)}")
    else:
        problems.append(f"{path}: {reason}")
    return False


def check_keys(path: str, obj: Mapping, keys: Mapping[str, Key], ctx: ReferenceContext,
               problems: list, checked_elsewhere: tuple = (),
               hints: Mapping[str, str] | None = None) -> dict:
    """Check an object's keys and values; return the valid values by key.  An unknown
    key is reported with the accepted ones, and with ``hints[key]`` when given (what to
    write instead, e.g. for a planar key in a spatial file)."""
    good = {}
    for k in obj:
        if k not in keys and k not in checked_elsewhere:
            hint = (hints or {}).get(k) if isinstance(k, str) else None
            problems.append(f"{path}.{key_name(k)}: unknown key"
                            f"{f' ({hint})' if hint else ''}; "
                            f"accepted keys: {', '.join([*checked_elsewhere, *keys])}")
    for k, spec in keys.items():
        if k not in obj:
            if spec.required:
                problems.append(f"{path}.{k}: missing required key ({spec.accepted()})")
        elif check_value(f"{path}.{k}", obj[k], spec, ctx, problems):
            good[k] = obj[k]
    return good


# --- element tables ------------------------------------------------------------------------
NAME_KEY = Key("name", doc="unique name within its list (default: type and position)")


@dataclass(frozen=True)
class ElementType:
    """A describable element class: its keys (= constructor arguments) and how to read
    them back from a built element."""

    cls: type
    keys: dict
    describe: Callable[[Any], dict]
    distinct: tuple[str, ...] = ()     # marker keys that must lie on different bodies
    exactly_one: tuple[str, ...] = ()  # alternatives of which exactly one must be given
    type_name: str = ""                # the file's "type" (default: the class's kind)

    @property
    def type(self) -> str:
        return self.type_name or self.cls.kind


def marker_out(ref):
    """A marker reference as written in a file: ``"body.marker"`` or
    ``{"body": name, "point": [...]}``."""
    if isinstance(ref, str):
        return ref
    body, local = ref
    return {"body": body, "point": [float(x) for x in local]}


def _direction(u) -> list[float]:
    # + 0.0 turns -0.0 into 0.0 for tidy files
    return [float(x) + 0.0 for x in u]


_MOTION_NAMES = ("constant_rate", "polynomial", "spin_up")


def describe_motion(motion) -> dict:
    """A driver's motion as a file's ``motion`` object; :class:`Undescribable` for a
    Python callable."""
    if isinstance(motion, ConstantRate):
        return {"type": "constant_rate", "angle0": motion.angle0, "rate": motion.rate}
    if isinstance(motion, PolynomialMotion):
        return {"type": "polynomial", "coefficients": [float(x) for x in motion.coefficients]}
    if isinstance(motion, SpinUp):
        return {"type": "spin_up", "final_rate": motion.final_rate,
                "spin_up_time": motion.spin_up_time}
    raise Undescribable(f"the motion {motion!r} is a Python callable; accepted motions are "
                        f"made by constant_rate(), polynomial_motion() or SpinUp "
                        f"(types {', '.join(_MOTION_NAMES)})")


def _describe_point_force(e) -> dict:
    if e.value is None:
        raise Undescribable(f"the force of {e.name!r} is a function of time; accepted values "
                            "are constant forces [Fx, Fy] [N]")
    return {"at": marker_out(e.at_ref), "force": [float(x) for x in e.value]}


class Undescribable(Exception):
    """An element of a System that the file format cannot express."""


_ANGLE_OPT = "(default: the initial relative angle)"

JOINT_TYPES: dict[str, ElementType] = {e.type: e for e in (
    ElementType(Revolute, {
        "a": Key("marker", doc="marker on the first body", required=True),
        "b": Key("marker", doc="marker on the second body, coincident with a", required=True)},
        lambda e: {"a": marker_out(e.a_ref), "b": marker_out(e.b_ref)},
        distinct=("a", "b")),
    ElementType(Prismatic, {
        "a": Key("marker", doc="point of the sliding line, on body a", required=True),
        "b": Key("marker", doc="marker of body b that stays on the line", required=True),
        "direction": Key("direction", doc="line direction in body a's frame (default [1, 0])"),
        "angle": Key("number", "rad", "relative angle phi_b - phi_a " + _ANGLE_OPT)},
        lambda e: {"a": marker_out(e.line.line_ref), "b": marker_out(e.line.point_ref),
                   "direction": _direction(e.line.direction),
                   "angle": float(e.angle)},
        distinct=("a", "b")),
    ElementType(Weld, {
        "a": Key("marker", doc="marker on the first body", required=True),
        "b": Key("marker", doc="marker on the second body", required=True),
        "angle": Key("number", "rad", "relative angle phi_b - phi_a " + _ANGLE_OPT)},
        lambda e: {"a": marker_out(e.pin.a_ref), "b": marker_out(e.pin.b_ref),
                   "angle": float(e.angle)},
        distinct=("a", "b")),
    ElementType(PointOnLine, {
        "line": Key("marker", doc="point of the line", required=True),
        "point": Key("marker", doc="marker that stays on the line", required=True),
        "direction": Key("direction", doc="line direction in the line body's frame "
                         "(default [1, 0])")},
        lambda e: {"line": marker_out(e.line_ref), "point": marker_out(e.point_ref),
                   "direction": _direction(e.direction)},
        distinct=("line", "point")),
    ElementType(SynchronousGear, {
        "joint1": Key("body_pair", doc="bodies [a, b] of the driving joint", required=True),
        "joint2": Key("body_pair", doc="bodies [c, d] of the driven joint", required=True),
        "ratio": Key("number", doc="(phi_d - phi_c) / (phi_b - phi_a) (default 1)"),
        "offset": Key("number", "rad", "angle offset (default: the initial one)")},
        lambda e: {"joint1": list(e.joint1), "joint2": list(e.joint2),
                   "ratio": float(e.ratio), "offset": float(e.offset_angle)}),
    ElementType(AngleDriver, {
        "a": Key("body", doc="reference body", required=True),
        "b": Key("body", doc="driven body", required=True),
        "motion": Key("motion", doc="prescribed relative angle phi_b - phi_a [rad] of time",
                      required=True)},
        lambda e: {"a": e.a_name, "b": e.b_name, "motion": describe_motion(e.motion)}),
)}

FORCE_TYPES: dict[str, ElementType] = {e.type: e for e in (
    ElementType(TranslationalSpringDamper, {
        "a": Key("marker", required=True), "b": Key("marker", required=True),
        "stiffness": Key("nonnegative", "N/m", required=True),
        "damping": Key("nonnegative", "N s/m", "default 0"),
        "rest_length": Key("nonnegative", "m", "default: the initial distance")},
        lambda e: {"a": marker_out(e.a_ref), "b": marker_out(e.b_ref), "stiffness": e.k,
                   "damping": e.c, "rest_length": float(e.l0)}),
    ElementType(RotationalSpringDamper, {
        "a": Key("body", required=True), "b": Key("body", required=True),
        "stiffness": Key("nonnegative", "N m/rad", required=True),
        "damping": Key("nonnegative", "N m s/rad", "default 0"),
        "rest_angle": Key("number", "rad", "default: the initial relative angle")},
        lambda e: {"a": e.a_name, "b": e.b_name, "stiffness": e.k, "damping": e.c,
                   "rest_angle": float(e.theta0)}),
    ElementType(JointTorque, {
        "a": Key("body", doc="stator body (gets -tau)", required=True),
        "b": Key("body", doc="rotor body (gets +tau)", required=True),
        "input": Key("name", doc="name of the system input giving tau [N m]", required=True)},
        lambda e: {"a": e.a_name, "b": e.b_name, "input": e.input_names[0]}),
    ElementType(ConstantTorque, {
        "a": Key("body", required=True), "b": Key("body", required=True),
        "torque": Key("number", "N m", "torque on b (-torque on a)", required=True)},
        lambda e: {"a": e.a_name, "b": e.b_name, "torque": e.torque}),
    ElementType(JointForce, {
        "a": Key("marker", doc="reaction point", required=True),
        "b": Key("marker", doc="point the force acts on", required=True),
        "input": Key("name", doc="name of the system input giving the force [N]",
                     required=True),
        "direction": Key("direction", doc="force direction in body a's frame (default [1, 0])")},
        lambda e: {"a": marker_out(e.a_ref), "b": marker_out(e.b_ref),
                   "input": e.input_names[0], "direction": _direction(e.direction)}),
    ElementType(PointForce, {
        "at": Key("marker", required=True),
        "force": Key("vector", "N", "constant force in the ground frame", required=True)},
        _describe_point_force),
    ElementType(Contact, {
        "a": Key("marker", doc="centre of circle a", required=True),
        "b": Key("marker", doc="centre of circle b, or a point of line b", required=True),
        "radius_a": Key("positive", "m", required=True),
        "stiffness": Key("positive", "N/m^n", required=True),
        "exponent": Key("exponent", doc="n (default 1.5)"),
        "damping": Key("nonnegative", "N s/m^(n+1)", "Hunt-Crossley C (default 0)"),
        "radius_b": Key("positive", "m", "circle b (give this or line_direction)"),
        "line_direction": Key("direction", doc="line b's direction in b's frame")},
        lambda e: {"a": marker_out(e.a_ref), "b": marker_out(e.b_ref), "radius_a": e.ra,
                   "stiffness": e.k, "exponent": e.n_exp, "damping": e.c,
                   **({"radius_b": e.rb} if e.rb is not None else
                      {"line_direction": _direction(e.line_direction)})},
        exactly_one=("radius_b", "line_direction")),
)}

# motions of AngleDriver: a "type" and the arguments of the function that makes them
MOTION_TYPES: dict[str, tuple[Callable, dict]] = {
    "constant_rate": (lambda d: constant_rate(float(d["angle0"]), float(d["rate"])), {
        "angle0": Key("number", "rad", "angle at t = 0", required=True),
        "rate": Key("number", "rad/s", required=True)}),
    "polynomial": (lambda d: polynomial_motion(*(float(c) for c in d["coefficients"])), {
        "coefficients": Key("coefficients", "rad/s^k",
                            "c_k of angle(t) = sum c_k t^k", required=True)}),
    "spin_up": (lambda d: SpinUp(float(d["final_rate"]), float(d["spin_up_time"])), {
        "final_rate": Key("number", "rad/s", "rate W reached at spin_up_time", required=True),
        "spin_up_time": Key("positive", "s", "T: the rate rises as W (t/T - sin(2 pi t/T)/2 pi)",
                            required=True)}),
}


def _check_motion(v, ctx) -> str | None:
    # motion objects are checked key by key in check_element; here only the container
    return None if isinstance(v, Mapping) else "invalid"


KINDS["motion"] = ValueKind(
    "objects {\"type\": " + " or ".join(repr(m) for m in MOTION_TYPES) + ", ...}",
    _check_motion, lambda d: MOTION_TYPES[d["type"]][0](d), {"$ref": "#/$defs/motion"})

BODY_KEYS = {
    "name": Key("body_name", doc="unique body name", required=True),
    "mass": Key("positive", "kg", required=True),
    "inertia": Key("positive", "kg m^2", "about the centre of mass", required=True),
    "position": Key("vector", "m", "initial centre of mass (default [0, 0])"),
    "angle": Key("number", "rad", "initial angle (default 0)"),
    "velocity": Key("vector", "m/s", "initial centre-of-mass velocity (default [0, 0])"),
    "omega": Key("number", "rad/s", "initial angular rate (default 0)"),
    "markers": Key("markers", "m", "named points in the body frame from the centre of mass"),
}
_MARKER_KEY = Key("vector", "m")
_ARC_KEY = Key("nonnegative", "m")

#: the file's body type of a rigid body, the default when a body has no "type"
RIGID_BODY = "rigid_body"
#: body types whose markers are points of a frame (the others: arc lengths)
_FRAMED = (RIGID_BODY, "ground")


def _arc_markers(b) -> dict:
    """A beam's markers as a file writes them: arc lengths [m] from the root, the ends
    (the body's own) left out."""
    out = {}
    for name, loc in b.markers.items():
        if name in ("root", "tip") or isinstance(b, ANCFBeam) and name in LINE_END_MARKERS:
            continue
        if isinstance(b, ModalBeam):
            s = loc[0]
        elif isinstance(b, FiniteSegmentBeam):
            s = b.piece_start[loc[0]] + loc[1]
        else:
            s = loc
        out[name] = float(s)
    return out


def _root_frame(b) -> dict:
    return {"position": _vec(b.position), "angle": b.angle0, "velocity": _vec(b.velocity),
            "omega": b.omega, "markers": _arc_markers(b)}


def _describe_modal(b: ModalBeam) -> dict:
    return {"length": b.length, "rho_a": b.rho_a, "ei": b.ei, "n_modes": b.n_modes,
            "mode_shapes": b.mode_shapes, "tip_mass": b.tip_mass, "tip_inertia": b.tip_inertia,
            "geometric_stiffening": b.fs == 1.0, "kinematics": b.kinematics,
            "damping": b.damping, "n_quad": b.n_quad, **_root_frame(b)}


def _describe_segments(b: FiniteSegmentBeam) -> dict:
    return {"length": b.length, "rho_a": b.rho_a, "ei": b.ei, "n_segments": b.n_segments,
            "damping": b.rot_damping, "tip_mass": b.tip_mass, "tip_inertia": b.tip_inertia,
            **_root_frame(b)}


def _describe_ancf(b: ANCFBeam) -> dict:
    return {"start": _vec(b.start), "end": _vec(b.end), "n_elements": b.n_elements,
            "rho_a": b.rho_a, "ei": b.ei, "ea": b.ea, "damping": b.damping,
            "velocity": _vec(b.velocity), "omega": b.omega,
            "n_gauss": int(len(b.gauss_weights)), "markers": _arc_markers(b)}


_BEAM_MARKERS = Key("arc_lengths", "m", "named points by distance from the root along the "
                    "undeformed beam (it has 'root' and 'tip' itself)")
_ROOT_KEYS = {
    "position": Key("vector", "m", "initial root position (default [0, 0])"),
    "angle": Key("number", "rad", "initial root angle (default 0)"),
    "velocity": Key("vector", "m/s", "initial root velocity (default [0, 0])"),
    "omega": Key("number", "rad/s", "initial angular rate (default 0)"),
    "markers": _BEAM_MARKERS,
}
_BEAM_COMMON = {
    "name": Key("body_name", doc="unique body name", required=True),
    "length": Key("positive", "m", required=True),
    "rho_a": Key("positive", "kg/m", "mass per unit length", required=True),
    "ei": Key("positive", "N m^2", "flexural stiffness", required=True),
}
_TIP = {
    "tip_mass": Key("nonnegative", "kg", "rigid body at the tip (default 0)"),
    "tip_inertia": Key("nonnegative", "kg m^2", "of the tip body (default 0)"),
}

#: body types of the planar files: the file's ``type`` -> class, keys (= constructor
#: arguments) and how to read them back; a body without ``type`` is a rigid body
BODY_TYPES: dict[str, ElementType] = {e.type: e for e in (
    ElementType(Body, BODY_KEYS, lambda b: {
        "mass": b.mass, "inertia": b.inertia, "position": _vec(b.position), "angle": b.angle,
        "velocity": _vec(b.velocity), "omega": b.omega,
        "markers": {k: _vec(v) for k, v in b.markers.items()}}, type_name=RIGID_BODY),
    ElementType(ModalBeam, {
        **_BEAM_COMMON,
        "n_modes": Key(ValueKind("integers 1..10", _check_count(1, 10), int,
                                 {"type": "integer", "minimum": 1, "maximum": 10}),
                       doc="assumed modes (default 3)"),
        "mode_shapes": Key(choice_kind(("clamped-free", "clamped-mass")),
                           doc="clamped-mass: shapes with the tip body (default clamped-free)"),
        **_TIP,
        "geometric_stiffening": Key("flag", doc="centrifugal stiffening (default true)"),
        "kinematics": Key(choice_kind(("exact", "second-order")),
                          doc="default exact (second-order without stiffening)"),
        "damping": Key("nonnegative", "s", "stiffness-proportional modal damping (default 0)"),
        "n_quad": Key("elements", doc="Gauss points along the beam (default 24)"),
        **_ROOT_KEYS}, _describe_modal, type_name="modal_beam"),
    ElementType(FiniteSegmentBeam, {
        **_BEAM_COMMON,
        "n_segments": Key("elements", doc="rigid segments (default 10)"),
        "damping": Key("nonnegative", "N m s/rad", "of each hinge (default 0)"),
        **_TIP, **_ROOT_KEYS}, _describe_segments, type_name="finite_segment_beam"),
    ElementType(ANCFBeam, {
        "name": Key("body_name", doc="unique body name", required=True),
        "start": Key("vector", "m", "first end ('root'), straight unstressed shape",
                     required=True),
        "end": Key("vector", "m", "second end ('tip')", required=True),
        "n_elements": Key("elements", required=True),
        "rho_a": Key("positive", "kg/m", "mass per unit length", required=True),
        "ei": Key("positive", "N m^2", "flexural stiffness", required=True),
        "ea": Key("positive", "N", "axial stiffness", required=True),
        "damping": Key("nonnegative", "s", "Kelvin-Voigt time beta (default 0)"),
        "velocity": Key("vector", "m/s", "initial velocity of start (default [0, 0])"),
        "omega": Key("number", "rad/s", "initial rigid rotation rate about start "
                     "(default 0)"),
        "n_gauss": Key("gauss", doc="Gauss points per element (default 5)"),
        "markers": _BEAM_MARKERS}, _describe_ancf, type_name="ancf_beam"),
)}

# top-level keys and what they hold (for messages and MODEL_SCHEMA)
TOP_KEYS = {
    "format": f"always {FORMAT!r}",
    "version": f"format version, {VERSION}",
    "description": "free text",
    "gravity": "gravitational acceleration [m/s^2] in the ground frame (default [0, 0])",
    "ground": "{\"markers\": {name: [x, y]}}: points fixed to the ground [m]",
    "bodies": "list of moving bodies, each with a \"type\" (default rigid_body): "
              + ", ".join(BODY_TYPES),
    "joints": "list of joints, gears and drivers",
    "forces": "list of force elements",
    "inputs": "start values of the inputs declared by forces [N m or N] (default 0)",
    "dimension": "2 (default): a planar model; 3-dimensional models are read by "
                 "mbdcore.spatial.load_model",
    **RUN_KEYS,
}
_GRAVITY = Key("vector", "m/s^2")
_INPUT = Key("number", "N m or N")

# --- validation --------------------------------------------------------------------------------
def check_header(d: Mapping, problems: list, top_keys: Mapping[str, str] = TOP_KEYS,
                 gravity: Key = _GRAVITY, hints: Mapping[str, str] | None = None) -> None:
    """Check the top-level keys of a model (``top_keys``: name -> meaning; ``hints`` as in
    :func:`check_keys`) and the common ones: format, version, description, gravity."""
    for k in d:
        if k not in top_keys:
            hint = (hints or {}).get(k) if isinstance(k, str) else None
            problems.append(f"{key_name(k)}: unknown key{f' ({hint})' if hint else ''}; "
                            "accepted keys: "
                            f"{', '.join(top_keys)}")
    if "format" not in d:
        problems.append(f"format: missing required key (accepted: {FORMAT!r})")
    elif d["format"] != FORMAT:
        problems.append(f"format: {show_value(d['format'])} is invalid: accepted values are "
                        f"{FORMAT!r}")
    if "version" not in d:
        problems.append(f"version: missing required key (accepted: {VERSION})")
    elif not (is_number(d["version"]) and d["version"] == VERSION):
        problems.append(f"version: {show_value(d['version'])} is invalid: accepted values are "
                        f"{VERSION} (this module reads version {VERSION} only)")
    if "description" in d and not isinstance(d["description"], str):
        problems.append(f"description: {show_value(d['description'])} is invalid: accepted values "
                        "are strings")
    if "gravity" in d:
        check_value("gravity", d["gravity"], gravity, ReferenceContext(), problems)


def check_marker_table(path: str, markers, problems: list,
                       location: Key = _MARKER_KEY) -> list[str]:
    """Check {name: location} (``location``: the key of one location, [x, y] in the
    planar files); return the names."""
    if not isinstance(markers, Mapping):
        problems.append(f"{path}: {show_value(markers)} is invalid: accepted values are "
                        f"objects of marker name: {location.accepted()}")
        return []
    for name, loc in markers.items():
        if not (isinstance(name, str) and name):
            problems.append(f"{path}: marker name {show_value(name)} is invalid: accepted values "
                            "are non-empty strings")
        check_value(f"{path}.{key_name(name)}", loc, location, ReferenceContext(), problems)
    return [str(n) for n in markers]


def check_list(d: Mapping, key: str, problems: list) -> list:
    """``d[key]`` (default []) if it is a list; a problem and [] otherwise."""
    value = d.get(key, [])
    if not isinstance(value, list):
        problems.append(f"{key}: {show_value(value)} is invalid: accepted values are lists of "
                        "objects")
        return []
    return value


def check_ground(d: Mapping, ctx: ReferenceContext, problems: list, kind=None,
                 example: str = "[x, y]") -> None:
    """The ``ground`` object of a file (only its ``markers``, points of ``kind``, written
    ``example`` in messages), its markers recorded in ``ctx``."""
    ground = d.get("ground", {})
    if not isinstance(ground, Mapping):
        problems.append(f"ground: {show_value(ground)} is invalid: accepted values are objects "
                        f"{{\"markers\": {{name: {example}}}}}")
        ground = {}
    for k in ground:
        if k != "markers":
            problems.append(f"ground.{key_name(k)}: unknown key; accepted keys: markers (the "
                            "ground "
                            "frame is the reference frame)")
    args = () if kind is None else (kind,)
    ctx.markers["ground"] = check_marker_table("ground.markers", ground.get("markers", {}),
                                               problems, *args)


def _beam_length(good: Mapping) -> float | None:
    """The length [m] a beam's markers are checked against (None if not known)."""
    if "length" in good:
        return float(good["length"])
    if "start" in good and "end" in good:
        return float(np.hypot(*np.subtract(good["end"], good["start"], dtype=float)))
    return None


def _check_bodies(d: Mapping, ctx: ReferenceContext, problems: list) -> None:
    check_ground(d, ctx, problems)
    ctx.body_types["ground"] = "ground"
    for i, body in enumerate(check_list(d, "bodies", problems)):
        path = f"bodies[{i}]"
        if not isinstance(body, Mapping):
            problems.append(f"{path}: {show_value(body)} is invalid: accepted values are objects "
                            f"with keys {', '.join(BODY_KEYS)}")
            continue
        if "type" in body:      # a rigid body needs none (the files before beams)
            good = check_element(path, body, BODY_TYPES, ctx, problems)
            if good is None:
                continue
        else:
            good = {"type": RIGID_BODY, **check_keys(path, body, BODY_KEYS, ctx, problems)}
        markers = []
        if "markers" in good and good["type"] == RIGID_BODY:
            markers = check_marker_table(f"{path}.markers", body["markers"], problems)
        elif "markers" in good:
            markers = check_marker_table(f"{path}.markers", body["markers"], problems, _ARC_KEY)
            length = _beam_length(good)
            for mname, s in good["markers"].items():
                if length is not None and is_finite_number(s) and s > length * (1 + 1e-12):
                    problems.append(f"{path}.markers.{key_name(mname)}: {show_value(s)} is "
                                    f"invalid: accepted values are arc lengths in "
                                    f"[0, {length:g}] m")
        if good["type"] != RIGID_BODY:
            ends = LINE_END_MARKERS if good["type"] == "ancf_beam" else ("root", "tip")
            markers = list(dict.fromkeys([*ends, *markers]))
        name = good.get("name")
        if name is None:
            continue
        if name in ctx.markers:
            problems.append(f"{path}.name: {name!r} is a duplicate: body names must be unique "
                            f"(taken: {', '.join(ctx.markers)})")
            continue
        ctx.markers[name] = markers
        ctx.body_types[name] = good["type"]


def _body_of(ref) -> str:
    return ref.split(".", 1)[0] if isinstance(ref, str) else ref["body"]


def check_element(path: str, obj, registry: Mapping[str, Any], ctx: ReferenceContext,
                  problems: list, hints: Mapping[str, str] | None = None) -> dict | None:
    """Check a typed object (joint, force or motion); return its valid values.
    ``hints``: see :func:`check_keys`."""
    if not isinstance(obj, Mapping):
        problems.append(f"{path}: {show_value(obj)} is invalid: accepted values are objects with a "
                        f"\"type\" ({', '.join(registry)})")
        return None
    if "type" not in obj:
        problems.append(f"{path}.type: missing required key (accepted {', '.join(registry)})")
        return None
    kind = obj["type"]
    if not isinstance(kind, str) or kind not in registry:
        problems.append(f"{path}.type: {show_value(kind)} is unknown: accepted "
                        f"{', '.join(registry)}")
        return None
    entry = registry[kind]
    keys = entry[1] if isinstance(entry, tuple) else {"name": NAME_KEY, **entry.keys}
    good = check_keys(path, obj, keys, ctx, problems, checked_elsewhere=("type",),
                      hints=hints)
    if "motion" in good:  # the one nested typed object
        if check_element(f"{path}.motion", good["motion"], MOTION_TYPES, ctx, problems) is None:
            del good["motion"]
    if isinstance(entry, ElementType):
        if entry.distinct and all(k in good for k in entry.distinct):
            bodies = [_body_of(good[k]) for k in entry.distinct]
            if bodies[0] == bodies[1]:
                problems.append(f"{path}: {' and '.join(entry.distinct)} are both on body "
                                f"{bodies[0]!r}; accepted: markers on two different bodies")
        if entry.exactly_one:
            given = [k for k in entry.exactly_one if k in obj]
            if len(given) != 1:
                problems.append(f"{path}: give exactly one of {', '.join(entry.exactly_one)} "
                                f"(given: {', '.join(given) or 'none'})")
    return {"type": kind, **good}


def element_names(section: str, items: list) -> list[str]:
    """The names of checked elements ``[(index, values)]``: an element without a name gets
    its type and 1-based position (joints[2] -> revolute3)."""
    return [it.get("name") if isinstance(it.get("name"), str)
            else f"{it['type']}{i + 1}" for i, it in items]


def check_section(d: Mapping, section: str, registry, ctx: ReferenceContext, problems: list,
                  types_by_name: dict | None = None,
                  hints: Mapping[str, str] | None = None) -> list:
    """Check the typed list ``d[section]``; return [(index, valid values)].  With
    ``types_by_name``, each element's name and type are recorded there as soon as it is
    checked, so that later elements may refer to earlier ones (a gear to its joints)."""
    checked = []
    for i, obj in enumerate(check_list(d, section, problems)):
        good = check_element(f"{section}[{i}]", obj, registry, ctx, problems, hints)
        if good is not None:
            checked.append((i, good))
            if types_by_name is not None:
                types_by_name.setdefault(element_names(section, [(i, good)])[0], good["type"])
    seen: dict[str, int] = {}
    for (i, _), name in zip(checked, element_names(section, checked)):
        if name in seen:
            problems.append(f"{section}[{i}].name: {name!r} is a duplicate of "
                            f"{section}[{seen[name]}]: names must be unique within {section}")
        else:
            seen[name] = i
    return checked


def _check_planar(d: Mapping, problems: list) -> None:
    """The problems of a planar model dictionary, appended to ``problems``."""
    check_header(d, problems)
    ctx = ReferenceContext()
    _check_bodies(d, ctx, problems)
    check_section(d, "joints", JOINT_TYPES, ctx, problems)
    forces = check_section(d, "forces", FORCE_TYPES, ctx, problems)
    check_inputs(d, forces, problems)
    check_run_keys(d, problems)


def validate_model(d) -> list[str]:
    """All problems of a model dictionary (empty list: valid).

    Parameters
    ----------
    d : mapping
        The parsed model file.

    Returns
    -------
    list of str
        One message per problem, each starting with the key path (``joints[2].a``) and
        naming the accepted values.
    """
    return PLANAR_FORMAT.validate(d)


def check_inputs(d: Mapping, forces: list, problems: list, value: Key = _INPUT) -> None:
    """The inputs the checked ``forces`` [(index, values)] declare (their ``input`` key:
    each drives one element) and the file's ``inputs`` {name: start value} (each a
    declared input, its value of ``value``)."""
    declared: dict[str, int] = {}
    for i, good in forces:
        name = good.get("input")
        if name is None:
            continue
        if name in declared:
            problems.append(f"forces[{i}].input: {name!r} is declared by forces[{declared[name]}] "
                            "already: every input drives one element")
        declared.setdefault(name, i)
    inputs = d.get("inputs", {})
    if not isinstance(inputs, Mapping):
        problems.append(f"inputs: {show_value(inputs)} is invalid: accepted values are objects "
                        "{input name: start value}")
        inputs = {}
    for name, start in inputs.items():
        if name not in declared:
            problems.append(f"inputs.{key_name(name)}: unknown input; accepted: inputs declared by "
                            f"forces: {', '.join(declared) or '(none)'}")
        check_value(f"inputs.{name}", start, value, ReferenceContext(), problems)


# --- building ------------------------------------------------------------------------------
def convert_values(keys: Mapping[str, Key], obj: Mapping) -> dict:
    return {k: keys[k].value_kind.convert(v) for k, v in obj.items() if k in keys}


def model_from_dict(d: Mapping, source: str | None = None) -> System:
    """Build a :class:`~mbdcore.multibody.System` from a model dictionary.

    Parameters
    ----------
    d : mapping
        The model (see the module docstring for the keys).
    source : str, optional
        Where ``d`` came from, for error messages (a file name).

    Raises
    ------
    ModelFileError
        With all problems of ``d`` in ``.problems``.
    """
    return PLANAR_FORMAT.from_dict(d, source)


def _build_planar(d: Mapping, source: str | None = None) -> System:
    """The System of a planar model dictionary :func:`_check_planar` found valid."""
    path = "(model)"
    try:
        s = System(gravity=d.get("gravity", (0.0, 0.0)))
        for name, loc in d.get("ground", {}).get("markers", {}).items():
            path = f"ground.markers.{name}"
            s.ground.add_marker(name, loc)
        for i, body in enumerate(d.get("bodies", [])):
            path = f"bodies[{i}]"
            entry = BODY_TYPES[body.get("type", RIGID_BODY)]
            kwargs = convert_values(entry.keys, body)
            s.add(entry.cls(kwargs.pop("name"), **kwargs))
        for section, registry, add in (("joints", JOINT_TYPES, s.add_joint),
                                       ("forces", FORCE_TYPES, s.add_force)):
            items = list(enumerate(d.get(section, [])))
            for (i, obj), name in zip(items, element_names(section, items)):
                path = f"{section}[{i}]"
                entry = registry[obj["type"]]
                kwargs = convert_values(entry.keys, obj)
                add(entry.cls(**kwargs, name=name))
        for name, value in d.get("inputs", {}).items():
            path = f"inputs.{name}"
            s.set_input(name, value)
    except ParameterError as exc:  # a check the engine makes and validate_model does not
        raise ModelFileError([f"{path}: {exc}"], source) from exc
    apply_run_keys(s, d)
    return s


def load_model(path_or_dict) -> System:
    """Load a model file (``.json``, or ``.yaml``/``.yml`` with PyYAML) or dictionary.

    Parameters
    ----------
    path_or_dict : str, os.PathLike or mapping

    Returns
    -------
    System
        Not assembled: pass it to :func:`mbdcore.dae.simulate`, which assembles.

    Raises
    ------
    ModelFileError
        With every problem of the file in ``.problems``.
    """
    return PLANAR_FORMAT.load(path_or_dict)


# --- saving ------------------------------------------------------------------------------
def describe_elements(section: str, elements, registry: Mapping[str, ElementType]) -> list:
    by_class = {e.cls: e for e in registry.values()}
    out = []
    for i, element in enumerate(elements):
        # exact class: ConstantTorque is a JointTorque, an unknown subclass is neither
        entry = by_class.get(type(element))
        if entry is None:
            raise ModelFileError([f"{section}[{i}] ({element.name}): class "
                                  f"{type(element).__name__} cannot be described; accepted: "
                                  + ", ".join(e.cls.__name__ for e in registry.values())])
        try:
            values = entry.describe(element)
        except Undescribable as exc:
            raise ModelFileError([f"{section}[{i}] ({element.name}): {exc}"]) from None
        out.append({"type": entry.type, "name": element.name,
                    **{k: float(v) if isinstance(v, (float, np.floating)) else v
                       for k, v in values.items()}})
    return out


def _vec(v) -> list[float]:
    return [float(x) for x in v]


def model_to_dict(system: System, description: str | None = None) -> dict:
    """Describe a System as a model dictionary (every key explicit, defaults resolved).

    Loading the result with :func:`model_from_dict` gives the same equations: same
    coordinates, initial state, forces, constraints and their derivatives.

    Raises
    ------
    ModelFileError
        If an element cannot be expressed in the format (a Python-function motion or a
        time-dependent point force, an unknown element class).
    """
    return PLANAR_FORMAT.to_dict(system, description)


def _describe_planar(system: System, description: str | None = None) -> dict:
    """A planar System as a model dictionary (not validated: the format checks that it
    would load again)."""
    ground = system.ground
    if np.any(ground.position != 0.0) or ground.angle != 0.0:
        raise ModelFileError(["ground: the ground frame is moved; accepted: position [0, 0] "
                              "and angle 0 (markers carry the offsets)"])
    d: dict[str, Any] = {"format": FORMAT, "version": VERSION}
    if description:
        d["description"] = description
    d["gravity"] = _vec(system.gravity)
    d["ground"] = {"markers": {k: _vec(v) for k, v in ground.markers.items()}}
    # a rigid body is written without its type, as in the files before beams
    d["bodies"] = [{k: v for k, v in body.items() if body["type"] != RIGID_BODY or k != "type"}
                   for body in describe_elements("bodies", system.bodies, BODY_TYPES)]
    d["joints"] = describe_elements("joints", system.joints, JOINT_TYPES)
    d["forces"] = describe_elements("forces", system.forces_list, FORCE_TYPES)
    if system.inputs:
        d["inputs"] = {k: float(v) for k, v in system.inputs.items()}
    d.update(describe_run_keys(system))
    return d


def save_model(system: System, path, description: str | None = None) -> Path:
    """Write ``system`` to ``path`` (``.json``, or ``.yaml``/``.yml`` with PyYAML).

    Floats are written with their shortest exact representation, so the loaded system
    has bit-identical parameters.
    """
    return PLANAR_FORMAT.save(system, path, description)


#: the planar files (the format the layers above extend)
PLANAR_FORMAT = ModelFormat({2: Dimension(_check_planar, _build_planar, _describe_planar)})


# --- JSON Schema ---------------------------------------------------------------------------
def key_schema(key: Key) -> dict:
    schema = dict(key.value_kind.schema)
    text = " ".join(p for p in (key.doc, f"[{key.unit}]" if key.unit else "") if p)
    if text:
        schema["description"] = text
    return schema


def object_schema(keys: Mapping[str, Key], type_name: str | None = None,
                  doc: str | None = None) -> dict:
    props = {k: key_schema(v) for k, v in keys.items()}
    required = [k for k, v in keys.items() if v.required]
    if type_name is not None:
        props = {"type": {"const": type_name}, **props}
        required = ["type", *required]
    out = {"type": "object", "additionalProperties": False, "required": required,
           "properties": props}
    if doc:
        out["description"] = doc.strip().splitlines()[0]
    return out


def _untyped_rigid_schema() -> dict:
    """A rigid body as the files before beams write it: without ``type``."""
    return object_schema(BODY_KEYS)


def _build_schema() -> dict:
    def typed(registry):
        return {"oneOf": [object_schema({"name": NAME_KEY, **e.keys}, t, e.cls.__doc__)
                          for t, e in registry.items()]}

    top = {
        "format": {"const": FORMAT},
        "version": {"const": VERSION},
        "description": {"type": "string"},
        "gravity": key_schema(_GRAVITY),
        "ground": {"type": "object", "additionalProperties": False,
                   "properties": {"markers": KINDS["markers"].schema}},
        "bodies": {"type": "array", "items": {"$ref": "#/$defs/body"}},
        "joints": {"type": "array", "items": {"$ref": "#/$defs/joint"}},
        "forces": {"type": "array", "items": {"$ref": "#/$defs/force"}},
        "inputs": {"type": "object", "additionalProperties": {"type": "number"}},
        "dimension": {"const": 2},
        **run_schema(),
    }
    for k, doc in TOP_KEYS.items():
        top[k]["description"] = doc
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://flexcosim.invalid/schemas/flexcosim-model-1.json",
        "title": "flexcosim planar multibody model",
        "description": "Bodies, joints and forces of mbdcore.multibody.System; SI units.",
        "type": "object", "additionalProperties": False, "required": ["format", "version"],
        "properties": top,
        "$defs": {
            "body": {"oneOf": [
                _untyped_rigid_schema(),
                *(object_schema({"name": NAME_KEY, **e.keys}, t, e.cls.__doc__)
                  for t, e in BODY_TYPES.items())]},
            "joint": typed(JOINT_TYPES),
            "force": typed(FORCE_TYPES),
            "motion": {"oneOf": [object_schema(keys, t) for t, (_, keys)
                                 in MOTION_TYPES.items()]},
        },
    }


def format_reference() -> str:
    """The element types and their keys as text (from the tables the validator uses)."""
    def keys(table):
        return "\n".join(f"    {k:15s}{'(required) ' if v.required else ''}{v.doc}"
                         f"{'; ' if v.doc else ''}{v.accepted()}" for k, v in table.items())

    parts = [f"bodies[] (no type, or type {RIGID_BODY!r})\n{keys(BODY_KEYS)}"]
    for t, e in BODY_TYPES.items():
        if t != RIGID_BODY:
            parts.append(f"bodies[] type {t!r} ({e.cls.__name__})\n{keys(e.keys)}")
    for section, registry in (("joints", JOINT_TYPES), ("forces", FORCE_TYPES)):
        for t, e in registry.items():
            table = {"name": NAME_KEY, **e.keys}
            parts.append(f"{section}[] type {t!r} ({e.cls.__name__})\n{keys(table)}")
    for t, (_, table) in MOTION_TYPES.items():
        parts.append(f"driver motion type {t!r}\n{keys(table)}")
    return "\n".join(parts)


#: JSON Schema (draft 2020-12) of the model format, built from the same tables as
#: :func:`validate_model` (which checks references and gives the clearer messages).
MODEL_SCHEMA: dict = _build_schema()
