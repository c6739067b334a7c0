"""The Model Exchange part of a C-source FMU's FMI 2.0 model description (``export_c_fmu
(..., kind="me")``): the ``ModelExchange`` element beside ``CoSimulation`` (the binary,
``fmi2_cs.c``, serves both), the continuous states as Real variables with value references
``n_vars + i`` and their derivatives ``der(...)`` with ``n_vars + n_states + i``, and the
model structure's ``Derivatives``; the outputs then depend on the states, so they name no
dependencies (FMI 2.0: on everything)."""
from __future__ import annotations

from xml.etree.ElementTree import Element, SubElement

__all__ = ["add_model_exchange"]


def add_model_exchange(root: Element, state_names, n_vars: int, source_files) -> None:
    """Add Model Exchange to the FMI 2.0 description ``root`` (in place)."""
    cs = root.find("CoSimulation")
    me = Element("ModelExchange", {
        "modelIdentifier": cs.get("modelIdentifier"), "needsExecutionTool": "false",
        "completedIntegratorStepNotNeeded": "false",
        "canBeInstantiatedOnlyOncePerProcess": "false",
        "canNotUseMemoryManagementFunctions": "false", "canGetAndSetFMUstate": "true",
        "canSerializeFMUstate": "true", "providesDirectionalDerivative": "false"})
    files = SubElement(me, "SourceFiles")
    for f in source_files:
        SubElement(files, "File", name=f)
    root.insert(list(root).index(cs), me)
    root.set("numberOfEventIndicators", "0")
    variables = root.find("ModelVariables")
    n_states = len(state_names)
    first_state = len(variables) + 1                  # 1-based indices of the model structure
    for i, name in enumerate(state_names):
        sv = SubElement(variables, "ScalarVariable", {
            "name": f"state.{name}", "valueReference": str(n_vars + i),
            "description": f"continuous state {i} of the model ({name})",
            "causality": "local", "variability": "continuous", "initial": "calculated"})
        SubElement(sv, "Real")
    for i, name in enumerate(state_names):
        sv = SubElement(variables, "ScalarVariable", {
            "name": f"der(state.{name})", "valueReference": str(n_vars + n_states + i),
            "description": f"time derivative of state.{name}",
            "causality": "local", "variability": "continuous", "initial": "calculated"})
        SubElement(sv, "Real", {"derivative": str(first_state + i)})
    structure = root.find("ModelStructure")
    outputs = structure.find("Outputs")
    for unknown in outputs if outputs is not None else ():
        unknown.attrib.pop("dependencies", None)
        unknown.attrib.pop("dependenciesKind", None)
    derivatives = Element("Derivatives")
    for i in range(n_states):
        SubElement(derivatives, "Unknown", {"index": str(first_state + n_states + i)})
    position = list(structure).index(outputs) + 1 if outputs is not None else 0
    structure.insert(position, derivatives)
    initial = structure.find("InitialUnknowns")
    if initial is None:
        initial = SubElement(structure, "InitialUnknowns")
    for unknown in initial:
        unknown.attrib.pop("dependencies", None)
        unknown.attrib.pop("dependenciesKind", None)
    listed = {int(u.get("index")) for u in initial}
    for index in range(first_state, first_state + 2 * n_states):
        if index not in listed:
            SubElement(initial, "Unknown", {"index": str(index)})
    initial[:] = sorted(initial, key=lambda u: int(u.get("index")))
