"""The FMI 3.0 model description of a C-source FMU, made from its FMI 2.0 one (the
same variables, value references, units, ranges, start values and dependencies, as
:func:`fmu.fmi.export_c.export_c_fmu` writes them): Real becomes Float64, Integer Int32,
a String's start a ``<Start>`` element; the independent variable ``time`` is added with
value reference ``n_vars`` (``fmi3_cs.c``'s VR_TIME); the model structure names value
references instead of indices.  With Model Exchange (an FMI 2.0 description made with
:func:`fmu.fmi.me_description.add_model_exchange`) the continuous state is one array
variable ``state`` [n] (``n_vars + 1``) and its derivative ``der(state)`` (``n_vars + 2``),
where FMI 2.0 has a scalar per state."""
from __future__ import annotations

from xml.etree.ElementTree import Element, SubElement

__all__ = ["fmi3_model_description", "FMI3_TYPES"]

#: FMI 2.0 type element -> FMI 3.0 variable element
FMI3_TYPES = {"Real": "Float64", "Integer": "Int32", "String": "String", "Boolean": "Boolean"}

_ROOT_KEPT = ("modelName", "description", "author", "version", "copyright", "license",
              "generationTool", "generationDateAndTime", "variableNamingConvention")


def fmi3_model_description(fmi2: Element, n_vars: int) -> Element:
    """The FMI 3.0 ``fmiModelDescription`` of the C FMU whose FMI 2.0 one is ``fmi2``."""
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
    for index, sv in enumerate(fmi2.find("ModelVariables"), start=1):
        by_index[str(index)] = sv.get("valueReference")
        if int(sv.get("valueReference")) < n_vars:     # FMI 2.0's scalar states: arrays here
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
    structure = SubElement(root, "ModelStructure")
    structure2 = fmi2.find("ModelStructure")
    for unknown in structure2.find("Outputs") if structure2.find("Outputs") is not None else ():
        attrs = {"valueReference": by_index[unknown.get("index")]}
        if unknown.get("dependencies") is not None:
            attrs["dependencies"] = " ".join(by_index[i] for i in unknown.get("dependencies").split())
        SubElement(structure, "Output", attrs)
    if n_states:
        SubElement(structure, "ContinuousStateDerivative", {"valueReference": str(n_vars + 2)})
    initial = structure2.find("InitialUnknowns")
    for unknown in initial if initial is not None else ():
        # their dependencies on parameters are not expressible as FMI 3.0 requires them
        # (inputs and independent only): none given means "depends on everything"
        vr = by_index[unknown.get("index")]
        if int(vr) < n_vars:
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
