"""The FMI 3.0 model description of a C-source FMU, made from its FMI 2.0 one (the
same variables, value references, units, ranges, start values and dependencies, as
:func:`fmu.fmi.export_c.export_c_fmu` writes them): Real becomes Float64, Integer Int32,
a String's start a ``<Start>`` element; the independent variable ``time`` is added with
value reference ``n_vars`` (``fmi3_cs.c``'s VR_TIME); the model structure names value
references instead of indices.  With Model Exchange (an FMI 2.0 description made with
:func:`fmu.fmi.me_description.add_model_exchange`) the continuous state is one array
variable ``state`` [n] (``n_vars + 1``) and its derivative ``der(state)`` (``n_vars + 2``),
where FMI 2.0 has a scalar per state.

**Arrays.**  A vector signal -- inputs or outputs named alike but for a running index,
``theta1``, ``theta2`` or ``theta1_ref``, ``theta2_ref``, with one unit and one range --
is one FMI 3.0 array variable (``theta`` [2], ``theta_ref`` [2]) in place of its scalars
(:func:`signal_arrays` finds them; ``arrays=False`` keeps the scalars, for a host or a
system file written for the FMI 2.0 FMU).  The arrays' value references follow the
Model Exchange ones, from :data:`ARRAY_VR_OFFSET` past ``n_vars``; ``fmi3_cs.c`` reads
and writes an array as its elements, in order, through their FMI 2.0 value
references."""
from __future__ import annotations

import re
from dataclasses import dataclass
from xml.etree.ElementTree import Element, SubElement

__all__ = ["fmi3_model_description", "FMI3_TYPES", "SignalArray", "signal_arrays",
           "ARRAY_VR_OFFSET"]

#: FMI 2.0 type element -> FMI 3.0 variable element
FMI3_TYPES = {"Real": "Float64", "Integer": "Int32", "String": "String", "Boolean": "Boolean"}

#: The first array's value reference is ``n_vars + ARRAY_VR_OFFSET`` (after ``time``,
#: ``state`` and ``der(state)``).
ARRAY_VR_OFFSET = 3

#: an input or output named as an element of a vector: base, running index, suffix
_ELEMENT_NAME = re.compile(r"^(?P<base>[A-Za-z_][A-Za-z_]*?[A-Za-z])(?P<index>[0-9]+)"
                           r"(?P<suffix>_[A-Za-z][A-Za-z0-9_]*)?$")
_RANGE_KEYS = ("unit", "min", "max", "nominal")


@dataclass(frozen=True)
class SignalArray:
    """A vector signal of an FMU: its name, causality and its elements' FMI 2.0 value
    references, in index order."""

    name: str
    causality: str
    elements: tuple[int, ...]
    element_names: tuple[str, ...]


def signal_arrays(variables: Element) -> list[SignalArray]:
    """The vector signals among the Real inputs and outputs of an FMI 2.0
    ``ModelVariables``: two or more of one causality named ``<base><k><suffix>`` for
    consecutive k from 0 or 1, of one unit, range and nominal, whose array name
    ``<base><suffix>`` is no other variable's name; in value-reference order of their
    first element."""
    names = {sv.get("name") for sv in variables}
    groups: dict[tuple, list[tuple[int, Element]]] = {}
    for sv in variables:
        match = _ELEMENT_NAME.match(sv.get("name"))
        if (match is None or sv.get("causality") not in ("input", "output")
                or sv[0].tag != "Real"):
            continue
        array = match["base"] + (match["suffix"] or "")
        key = (array, sv.get("causality"), *(sv[0].get(k) for k in _RANGE_KEYS))
        groups.setdefault(key, []).append((int(match["index"]), sv))
    arrays = []
    for key, members in groups.items():
        members.sort(key=lambda m: m[0])
        indices = [k for k, _ in members]
        if (len(members) < 2 or key[0] in names or indices[0] not in (0, 1)
                or indices != list(range(indices[0], indices[0] + len(indices)))):
            continue
        arrays.append(SignalArray(key[0], key[1],
                                  tuple(int(sv.get("valueReference")) for _, sv in members),
                                  tuple(sv.get("name") for _, sv in members)))
    taken = [a.name for a in arrays]
    # two groups of one name (an input and an output vector alike named): neither
    return sorted((a for a in arrays if taken.count(a.name) == 1), key=lambda a: a.elements[0])


_ROOT_KEPT = ("modelName", "description", "author", "version", "copyright", "license",
              "generationTool", "generationDateAndTime", "variableNamingConvention")


def fmi3_model_description(fmi2: Element, n_vars: int,
                           arrays: list[SignalArray] = ()) -> Element:
    """The FMI 3.0 ``fmiModelDescription`` of the C FMU whose FMI 2.0 one is ``fmi2``,
    with ``arrays`` (:func:`signal_arrays`) as array variables in place of their
    elements."""
    root = Element("fmiModelDescription", {"fmiVersion": "3.0"})
    for key in _ROOT_KEPT:
        if fmi2.get(key) is not None:
            root.set(key, fmi2.get(key))
    root.set("instantiationToken", fmi2.get("guid"))
    cs2 = fmi2.find("CoSimulation")
    me2 = fmi2.find("ModelExchange")
    n_states = len(fmi2.find("ModelStructure").find("Derivatives") or ()) if me2 is not None else 0
    if me2 is not None:
        SubElement(root, "ModelExchange", {
            "modelIdentifier": me2.get("modelIdentifier"), "needsExecutionTool": "false",
            "canBeInstantiatedOnlyOncePerProcess": "false", "canGetAndSetFMUState": "true",
            "canSerializeFMUState": "true", "needsCompletedIntegratorStep": "true"})
    SubElement(root, "CoSimulation", {
        "modelIdentifier": cs2.get("modelIdentifier"), "needsExecutionTool": "false",
        "canBeInstantiatedOnlyOncePerProcess": "false", "canGetAndSetFMUState": "true",
        "canSerializeFMUState": "true", "canHandleVariableCommunicationStepSize": "true",
        "hasEventMode": "false"})
    units = fmi2.find("UnitDefinitions")
    if units is None:
        units = Element("UnitDefinitions")
    if not any(u.get("name") == "s" for u in units):
        SubElement(SubElement(units, "Unit", {"name": "s"}), "BaseUnit", {"s": "1"})
    root.append(units)
    categories = fmi2.find("LogCategories")
    if categories is not None:
        for c in categories:
            if c.get("description"):
                c.set("description", c.get("description").replace("fmi2", "fmi3"))
        root.append(categories)
    if fmi2.find("DefaultExperiment") is not None:
        root.append(fmi2.find("DefaultExperiment"))
    variables = SubElement(root, "ModelVariables")
    by_index = {}
    array_vr = {e: str(n_vars + ARRAY_VR_OFFSET + a)
                for a, array in enumerate(arrays) for e in array.elements}
    scalars = fmi2.find("ModelVariables")
    for index, sv in enumerate(scalars, start=1):
        vr = sv.get("valueReference")
        by_index[str(index)] = array_vr.get(int(vr), vr)
        if int(vr) < n_vars and int(vr) not in array_vr:   # FMI 2.0's states: arrays here
            variables.append(_variable(sv))
    SubElement(variables, "Float64", {"name": "time", "valueReference": str(n_vars),
                                      "causality": "independent", "variability": "continuous",
                                      "description": "Simulation time", "unit": "s"})
    if n_states:
        for name, vr, extra in (("state", n_vars + 1, {}),
                                ("der(state)", n_vars + 2, {"derivative": str(n_vars + 1)})):
            var = SubElement(variables, "Float64", {
                "name": name, "valueReference": str(vr), "causality": "local",
                "variability": "continuous", "initial": "calculated",
                "description": ("the model's continuous state" if name == "state"
                                else "its time derivative"), **extra})
            SubElement(var, "Dimension", {"start": str(n_states)})
    for a, array in enumerate(arrays):
        variables.append(_array_variable(array, n_vars + ARRAY_VR_OFFSET + a,
                                         [sv for sv in scalars
                                          if int(sv.get("valueReference")) in array.elements]))
    structure = SubElement(root, "ModelStructure")
    structure2 = fmi2.find("ModelStructure")
    outputs: dict[str, list[str] | None] = {}     # an array: its elements' dependencies
    for unknown in structure2.find("Outputs") if structure2.find("Outputs") is not None else ():
        deps = unknown.get("dependencies")
        deps = None if deps is None else [by_index[i] for i in deps.split()]
        vr = by_index[unknown.get("index")]
        if vr in outputs and deps is not None and outputs[vr] is not None:
            deps = outputs[vr] + deps
        outputs[vr] = deps if vr not in outputs or outputs[vr] is not None else None
    for vr, deps in outputs.items():
        attrs = {"valueReference": vr}
        if deps is not None:
            attrs["dependencies"] = " ".join(dict.fromkeys(deps))
        SubElement(structure, "Output", attrs)
    if n_states:
        SubElement(structure, "ContinuousStateDerivative", {"valueReference": str(n_vars + 2)})
    initial = structure2.find("InitialUnknowns")
    for vr in dict.fromkeys(by_index[u.get("index")] for u in
                            (initial if initial is not None else ())
                            if int(scalars[int(u.get("index")) - 1].get("valueReference")) < n_vars):
        # (FMI 2.0's scalar states left out: the arrays below.)  Their dependencies on
        # parameters are not expressible as FMI 3.0 requires them (inputs and
        # independent only): none given means "depends on everything"
        SubElement(structure, "InitialUnknown", {"valueReference": vr})
    if n_states:
        for vr in (n_vars + 1, n_vars + 2):
            SubElement(structure, "InitialUnknown", {"valueReference": str(vr)})
    return root


def _variable(sv: Element) -> Element:
    """One FMI 2.0 ScalarVariable as its FMI 3.0 element."""
    typed = sv[0]
    var = Element(FMI3_TYPES[typed.tag])
    for key in ("name", "valueReference", "description", "causality", "variability", "initial"):
        if sv.get(key) is not None:
            var.set(key, sv.get(key))
    start = typed.get("start")
    for key, value in typed.attrib.items():
        if key != "start" or typed.tag != "String":
            var.set(key, value)
    if typed.tag == "String" and start is not None:
        SubElement(var, "Start", {"value": start})
    return var


def _array_variable(array: SignalArray, vr: int, elements: list[Element]) -> Element:
    """The FMI 3.0 array variable of ``array`` whose elements are the FMI 2.0
    ScalarVariables ``elements`` (in index order)."""
    var = _variable(elements[0])
    var.set("name", array.name)
    var.set("valueReference", str(vr))
    var.set("description", "; ".join(f"[{k}] {sv.get('description') or sv.get('name')}"
                                     for k, sv in enumerate(elements, start=1)))
    if var.get("start") is not None:
        var.set("start", " ".join(sv[0].get("start") for sv in elements))
    SubElement(var, "Dimension", {"start": str(len(elements))})
    return var
