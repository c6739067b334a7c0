"""The file side of every model file, either dimension (docs/model_files.md): the format's
name and version, :class:`ModelFileError`, reading and writing JSON/YAML, the top-level
keys every file shares for the block made of it (:data:`RUN_KEYS`: ``outputs`` and
``method``), and :class:`ModelFormat`, the one reader and writer over registered
dimensions (:class:`Dimension`: how one dimension's files are checked, built and
written).  :mod:`mbdcore.multibody.model_file` registers the planar files
(``PLANAR_FORMAT``); the layers above extend it (``mbdcore.spatial.model_file.
SPATIAL_FORMAT``, ``mbdcore.models.model_file.MODEL_FORMAT``).
"""
from __future__ import annotations

import json
import math
import os
import re
import reprlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

from mbdcore.dae.methods import METHODS, method_info
from mbdcore.multibody.system import System

__all__ = ["FORMAT", "VERSION", "FILE_TYPES", "ModelFileError", "show_value", "key_name",
           "is_number", "is_finite_number", "read_model_data", "write_model_data", "load_with",
           "RUN_KEYS", "SUBSTEPS_RANGE", "check_run_keys", "apply_run_keys",
           "describe_run_keys", "run_schema", "Dimension", "ModelFormat"]

FORMAT = "flexcosim-model"
VERSION = 1
FILE_TYPES = (".json", ".yaml", ".yml")


class ModelFileError(ValueError):
    """A model file or dictionary is invalid.

    Attributes
    ----------
    problems : list of str
        Every problem found, each naming its key path (``bodies[1].mass``) and the
        accepted values.
    """

    def __init__(self, problems, source: str | None = None):
        self.problems = [problems] if isinstance(problems, str) else list(problems)
        self.source = source
        head = f"{source}: " if source else ""
        if len(self.problems) == 1:
            msg = f"{head}invalid model: {self.problems[0]}"
        else:
            msg = (f"{head}invalid model, {len(self.problems)} problems:\n  "
                   + "\n  ".join(self.problems))
        super().__init__(msg)


#: repr of a value for a message: bounded in depth and length (a list nested 5000 deep
#: exceeds the recursion limit of plain repr)
_SHORT_REPR = reprlib.Repr()
for _name, _limit in (("maxlevel", 4), ("maxstring", 60), ("maxother", 60), ("maxlong", 40),
                      ("maxlist", 8), ("maxdict", 8)):   # keywords from Python 3.12 only
    setattr(_SHORT_REPR, _name, _limit)


def show_value(value) -> str:
    text = _SHORT_REPR.repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


_PLAIN_KEY = re.compile(r"[A-Za-z_][\w-]*")


def key_name(key) -> str:
    """A key as it reads in a key path: as it is when it is a plain name, else its repr
    (an empty key, one with a space, a dot or a newline would break the path)."""
    return key if isinstance(key, str) and _PLAIN_KEY.fullmatch(key) else show_value(key)


def is_number(value) -> bool:
    """A number of a model file: an int or float, not a bool."""
    # bool is an int subclass in Python, but `true` is not a number in a model file
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def is_finite_number(value) -> bool:
    try:
        return is_number(value) and math.isfinite(value)
    except OverflowError:  # an integer beyond the float range
        return False


#: the top-level keys every model file accepts, either dimension, for the block (and
#: FMU) made of it (docs/model_files.md, "Inputs, outputs and the method")
RUN_KEYS = {
    "outputs": "the signals of the block made of the model, by name (default: every "
               "coordinate); see mbdcore.multibody.system_block",
    "method": "the integration method of that block: a name of mbdcore.dae.methods.METHODS "
              "or {\"name\": ..., \"substeps\": n, option: value ...} with the method's "
              "options (default: chosen from the model, generalized-alpha for flexible or "
              "stiff models, rk4 otherwise)",
}
#: substeps per communication step a file may ask for (the block's parameter's range)
SUBSTEPS_RANGE = (1, 100000)
#: keys of a method object that are the block's, not the method's options
_BLOCK_METHOD_KEYS = ("name", "substeps", "baumgarte")


def _check_method(d: Mapping, problems: list) -> None:
    spec = d["method"]
    if isinstance(spec, str):
        spec = {"name": spec}
    if not isinstance(spec, Mapping):
        problems.append(f"method: {show_value(spec)} is invalid: accepted values are method "
                        "names or objects {\"name\": ..., \"substeps\": n, option: value}")
        return
    name = spec.get("name")
    if name not in METHODS:
        problems.append(f"method.name: {show_value(name)} is invalid: accepted values are "
                        f"{', '.join(METHODS)}")
        return
    lo, hi = SUBSTEPS_RANGE
    n = spec.get("substeps", lo)
    if not (isinstance(n, int) and not isinstance(n, bool) and lo <= n <= hi):
        problems.append(f"method.substeps: {show_value(n)} is invalid: accepted values are "
                        f"integers {lo}..{hi}")
    info = method_info(name)
    if "baumgarte" in spec:
        b = spec["baumgarte"]
        if info.kind != "ode":
            problems.append(f"method.baumgarte: the index-1 form's stabilisation; {name!r} is "
                            "an implicit (index-3) method: accepted only with an ODE method")
        elif not (is_finite_number(b) and 0.0 <= b <= 1e4):
            problems.append(f"method.baumgarte: {show_value(b)} is invalid: accepted values "
                            "are finite numbers 0..1e4 [1/s]")
    options = {k: v for k, v in spec.items() if k not in _BLOCK_METHOD_KEYS}
    for k, v in options.items():
        if k not in info.options:
            problems.append(f"method.{key_name(k)}: unknown key; accepted keys: "
                            f"{', '.join([*_BLOCK_METHOD_KEYS, *info.options])}")
            return
        if not (is_finite_number(v) or isinstance(v, (str, bool))):
            problems.append(f"method.{key_name(k)}: {show_value(v)} is invalid: accepted "
                            "values are finite numbers, strings and true/false")
            return
    try:    # the method's own checks of its options (the table's factory)
        info.make(**options)
    except (ValueError, TypeError) as exc:
        problems.append(f"method: {exc}")


def check_run_keys(d: Mapping, problems: list) -> None:
    """Check the top-level ``outputs`` (a list of distinct signal names; whether each
    exists is the block's check, which knows the signals) and ``method``
    (:data:`RUN_KEYS`) of a model dictionary of either dimension."""
    if "outputs" in d:
        outputs = d["outputs"]
        if not (isinstance(outputs, list) and outputs
                and all(isinstance(o, str) and o.strip() for o in outputs)):
            problems.append(f"outputs: {show_value(outputs)} is invalid: accepted values are "
                            "non-empty lists of signal names")
        elif len(set(outputs)) != len(outputs):
            dup = sorted({o for o in outputs if outputs.count(o) > 1})
            problems.append(f"outputs: {', '.join(dup)} listed twice; accepted: each name once")
    if "method" in d:
        _check_method(d, problems)


def apply_run_keys(system: System, d: Mapping) -> None:
    """Record a checked dictionary's ``outputs`` and ``method`` in
    ``system.block_settings`` (the method as {"name", "substeps", options})."""
    settings = {}
    if "outputs" in d:
        settings["outputs"] = [str(o) for o in d["outputs"]]
    if "method" in d:
        spec = d["method"]
        spec = {"name": spec} if isinstance(spec, str) else dict(spec)
        settings["method"] = {"name": spec.pop("name"), **spec}
    system.block_settings = settings


def describe_run_keys(system: System) -> dict:
    """The top-level ``outputs`` and ``method`` of a system's model dictionary (what
    :func:`apply_run_keys` recorded), in that order."""
    settings = system.block_settings
    out = {}
    if "outputs" in settings:
        out["outputs"] = list(settings["outputs"])
    if "method" in settings:
        out["method"] = dict(settings["method"])
    return out


def run_schema() -> dict:
    """JSON Schemas of the top-level keys of :data:`RUN_KEYS`."""
    return {
        "outputs": {"type": "array", "items": {"type": "string"}, "minItems": 1},
        "method": {"oneOf": [
            {"enum": list(METHODS)},
            {"type": "object", "required": ["name"],
             "properties": {"name": {"enum": list(METHODS)},
                            "substeps": {"type": "integer", "minimum": SUBSTEPS_RANGE[0],
                                         "maximum": SUBSTEPS_RANGE[1]},
                            "baumgarte": {"type": "number", "minimum": 0, "maximum": 1e4}},
             "additionalProperties": {"type": ["number", "string", "boolean"]}}]},
    }



# --- reading and writing -----------------------------------------------------------------
def read_model_data(path) -> Any:
    """The parsed content of a model file (``.json``, or ``.yaml``/``.yml`` with PyYAML),
    not yet validated; :class:`ModelFileError` if it cannot be read or parsed."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in FILE_TYPES:
        raise ModelFileError([f"(file): {path.name!r} is not a model file: accepted file "
                              f"types are {', '.join(FILE_TYPES)}"], str(path))
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ModelFileError([f"(file): cannot read it: {exc.strerror or exc}"],
                             str(path)) from None
    except UnicodeDecodeError as exc:
        raise ModelFileError([f"(file): not UTF-8 text ({exc.reason} at byte {exc.start})"],
                             str(path)) from None
    if suffix == ".json":
        def no_duplicates(pairs):
            obj = dict(pairs)
            if len(obj) != len(pairs):  # json would silently keep the last one
                seen: set = set()  # linear in the keys (no count per key)
                dup = sorted({k for k, _ in pairs if k in seen or seen.add(k)})
                raise ModelFileError([f"(file): duplicate key(s) {', '.join(dup)} in one "
                                      "object; accepted: each key once"], str(path))
            return obj
        try:
            return json.loads(text, object_pairs_hook=no_duplicates)
        except json.JSONDecodeError as exc:
            raise ModelFileError([f"(file): not valid JSON: {exc.msg} at line {exc.lineno} "
                                  f"column {exc.colno}"], str(path)) from None
        except RecursionError:
            raise ModelFileError(["(file): nested too deeply to be a model file"],
                                 str(path)) from None
        except ModelFileError:
            raise
        except ValueError as exc:  # an integer of more than 4300 digits
            raise ModelFileError([f"(file): not a valid model file: {exc}"], str(path)) from None
    yaml = _import_yaml(path)
    try:
        # Anchors and aliases are refused before anything is built: nested aliases expand
        # exponentially (a few hundred bytes can fill the memory, "billion laughs"), and a
        # model file has no use for them.  The event scan is linear in the text.
        for event in yaml.parse(text, Loader=yaml.SafeLoader):
            anchor = getattr(event, "anchor", None)
            if anchor is not None:
                what = "alias *" if isinstance(event, yaml.AliasEvent) else "anchor &"
                raise ModelFileError([f"(file): line {event.start_mark.line + 1}: YAML {what}"
                                      f"{anchor}: anchors and aliases are not accepted in model "
                                      "files; accepted: plain values (write each value out)"],
                                     str(path))
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ModelFileError([f"(file): not valid YAML: {exc}"], str(path)) from None
    except RecursionError:
        raise ModelFileError(["(file): nested too deeply to be a model file"],
                             str(path)) from None


def _import_yaml(path: Path):
    try:
        import yaml
    except ImportError:
        raise ModelFileError([f"(file): {path.suffix} files need the package PyYAML, which is "
                              "not installed (pip install \"flexcosim[yaml]\"); accepted without "
                              "it: .json"],
                             str(path)) from None
    return yaml


def load_with(build, path_or_dict):
    """``build(data, source=...)`` of a model file's data (:func:`read_model_data`) or
    of a dictionary: the reading step every reader (planar, spatial, with the models
    layer's elements) shares."""
    if isinstance(path_or_dict, Mapping):
        return build(path_or_dict)
    if not isinstance(path_or_dict, (str, os.PathLike)):
        raise ModelFileError([f"(top level): {show_value(path_or_dict)} is invalid: accepted "
                              "are a model dictionary or a file path"])
    path = Path(path_or_dict)
    return build(read_model_data(path), source=str(path))


def _depth(obj) -> int:
    if isinstance(obj, dict):
        return 1 + max(map(_depth, obj.values()), default=0)
    if isinstance(obj, list):
        return 1 + max(map(_depth, obj), default=0)
    return 0


def _dumps(obj, indent: int = 0, width: int = 92) -> str:
    """JSON for people: vectors, marker tables and simple elements on one line each."""
    pad, inner = "  " * indent, "  " * (indent + 1)
    flat = json.dumps(obj, allow_nan=False)
    if not isinstance(obj, (dict, list)) or _depth(obj) <= 2 and len(flat) + len(inner) <= width:
        return flat
    if isinstance(obj, list):
        return "[\n" + ",\n".join(inner + _dumps(v, indent + 1) for v in obj) + "\n" + pad + "]"
    return ("{\n" + ",\n".join(f"{inner}{json.dumps(k)}: {_dumps(v, indent + 1)}"
                               for k, v in obj.items()) + "\n" + pad + "}")


def write_model_data(d: Mapping, path) -> Path:
    """Write a model dictionary to ``path`` (``.json``, or ``.yaml``/``.yml`` with PyYAML):
    JSON with vectors and short elements on one line, floats in their shortest exact
    representation."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix == ".json":
        path.write_text(_dumps(d) + "\n", encoding="utf-8")
    elif suffix in (".yaml", ".yml"):
        yaml = _import_yaml(path)
        path.write_text(yaml.safe_dump(d, sort_keys=False, default_flow_style=None),
                        encoding="utf-8")
    else:
        raise ModelFileError([f"(file): {path.name!r}: accepted file types are "
                              f"{', '.join(FILE_TYPES)}"], str(path))
    return path


# --- the format: readers and writers of each dimension ----------------------------------------
@dataclass(frozen=True)
class Dimension:
    """How the files of one dimension are checked (``check(d, problems)``: appends every
    problem), built (``build(d, source)``: the system of a checked dictionary) and
    written (``describe(system, description)``: a dictionary, checked by the format
    before it is returned)."""

    check: Callable[[Mapping, list], None]
    build: Callable[..., System]
    describe: Callable[..., dict]


@dataclass(frozen=True)
class ModelFormat:
    """The one reader and writer of model files over registered dimensions
    (docs/model_files.md, "Which reader"): this layer registers the planar files
    (:data:`PLANAR_FORMAT`), the spatial layer extends it with ``"dimension": 3``
    (``mbdcore.spatial.model_file.SPATIAL_FORMAT``) and the models layer extends that
    with its elements (``mbdcore.models.model_file.MODEL_FORMAT``).  The extensions are
    values built from the one below, not a registry filled at import: what a format
    reads does not depend on what else was imported."""

    dimensions: Mapping[int, Dimension]

    def extended(self, dimensions: Mapping[int, Dimension]) -> "ModelFormat":
        """This format with ``dimensions`` added or replaced."""
        return ModelFormat({**self.dimensions, **dimensions})

    def _dimension(self, d) -> tuple[Dimension | None, list[str]]:
        if not isinstance(d, Mapping):
            return None, [f"(top level): {show_value(d)} is invalid: accepted values are "
                          f"objects {{\"format\": {FORMAT!r}, \"version\": {VERSION}, ...}}"]
        dim = d.get("dimension", 2)
        if is_number(dim) and dim in self.dimensions:
            return self.dimensions[int(dim)], []
        if is_number(dim) and dim == 3:
            return None, ["dimension: 3 is a spatial model, which this planar reader does not "
                          "build; accepted here: 2; read it with mbdcore.spatial.load_model "
                          "(which reads both)"]
        return None, [f"dimension: {show_value(dim)} is invalid: accepted values are 2 "
                      "(planar) and 3 (spatial, read by mbdcore.spatial.load_model)"]

    def validate(self, d) -> list[str]:
        """All problems of a model dictionary (empty: valid), each naming its key path
        and the accepted values."""
        dimension, problems = self._dimension(d)
        if dimension is not None:
            dimension.check(d, problems)
        return problems

    def from_dict(self, d, source: str | None = None) -> System:
        """The system of a model dictionary; :class:`ModelFileError` with every problem."""
        problems = self.validate(d)
        if problems:
            raise ModelFileError(problems, source)
        return self._dimension(d)[0].build(d, source)

    def load(self, path_or_dict) -> System:
        """The system of a model file (``.json``, ``.yaml``/``.yml``) or dictionary."""
        return load_with(self.from_dict, path_or_dict)

    def to_dict(self, system: System, description: str | None = None) -> dict:
        """A system as a model dictionary, every key explicit, checked to load again."""
        dimension = self.dimensions.get(system.dim)
        if dimension is None:
            raise ModelFileError([f"(system): a system of dimension {system.dim}; this "
                                  f"writer writes dimension {', '.join(map(str, self.dimensions))}"
                                  " (mbdcore.spatial.save_model writes both)"])
        d = dimension.describe(system, description)
        problems = self.validate(d)
        if problems:   # a file that would not load again is an error now, not later
            raise ModelFileError(problems, "model_to_dict")
        return d

    def save(self, system: System, path, description: str | None = None) -> Path:
        """Write a system to ``path``; floats in their shortest exact form."""
        return write_model_data(self.to_dict(system, description), path)


