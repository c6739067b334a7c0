"""A block's equations as plain C99: what a model must say so that it runs without Python.

A block that can be compiled returns a :class:`CModel` from ``c_model()``: the sizes of
its continuous state ``x`` (integrated by the fixed-step RK4 or Gill of the C wrapper,
the block's ``method`` and ``substeps`` parameters), of its discrete state ``z`` and of a
work array ``w`` (quantities derived from the parameters once, at start), and the C text
of six functions (their contract is in ``fmu/fmi/native/cfmu/flexcosim_model.h``)::

    int  model_setup(ModelData *d, char *msg, size_t n);    /* check parameters, fill w */
    void model_initial(ModelData *d);                        /* x, z at the start time */
    void model_derivatives(const ModelData *d, const double *x, double *dx);
    void model_update(ModelData *d, double h);               /* z over one step h [s] */
    void model_outputs(ModelData *d);                        /* outputs from x, z, inputs */
    int  model_validity(const ModelData *d, char *msg, size_t n); /* 1: left its range, 2: beyond its hard limit */

A model that integrates itself (``CModel.own_step``: an implicit method over its own
state, such as a multibody system's generalized-alpha step in C) defines a seventh,
called by the wrapper once per communication step instead of the fixed-step methods::

    int  model_step(ModelData *d, double t, double h, char *msg, size_t n);
                 /* z from t to t + h [s], inputs held; 0, or not 0 with why in msg */

its state lives in z (``n_discrete``; ``n_states`` is 0), and a step it refuses is
discarded by the wrapper with that message, the state put back.

The text names the block's variables by macros the exporter defines from the block's own
declarations (so the C FMU has the Python FMU's names, units, ranges and defaults):
``IN_<input>``, ``PAR_<parameter>`` and ``OUT_<output>`` (lvalues; a name that is no C
identifier by :func:`signal_macro`), ``X(i)``, ``Z(i)``,
``W(i)``.  Numbers come in as tables (``CModel.tables``: name -> array of float64, which
the source reads as ``const double *`` by that name): the equations are written once,
here over the block's numeric data; nothing in C repeats a formula of the Python model
that the data could carry, and the source text holds no number that a parameter's value
decides, so the same source serves every export of a model with the same structure
(what lets a binary built with the package serve them all: ``fmu.fmi.export_c``).  No
allocation, no library beyond libm.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

__all__ = ["CModel", "CModelError", "c_identifier", "signal_macro", "include_c", "stateless_functions", "table_check",
           "table_setup", "C_FUNCTIONS"]

#: The functions a CModel's source defines.
C_FUNCTIONS = ("model_setup", "model_initial", "model_derivatives", "model_update",
               "model_outputs", "model_validity")

class CModelError(ValueError):
    """A block that cannot be compiled (a part without a compiled form, an output C
    does not compute, ...): the message names what and why."""


_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def signal_macro(name: str) -> str:
    """The C identifier of a signal or parameter in its macro (``IN_<it>``,
    ``OUT_<it>``, ``PAR_<it>``): the name itself where it is one, else every character
    but letters, digits and '_' made '_' (``"der(hub.phi)"`` -> ``"der_hub_phi_"``;
    a model file's signals are named by their bodies and joints)."""
    macro = re.sub(r"[^A-Za-z0-9_]", "_", name)
    return c_identifier("_" + macro if macro[:1].isdigit() else macro)


def c_identifier(name: str) -> str:
    """``name`` if it is a C identifier, else ValueError naming it."""
    if not _IDENTIFIER.match(name):
        raise ValueError(f"{name!r} is not a C identifier: a compiled block's signals and "
                         "parameters need names of letters, digits and '_'")
    return name


def include_c(model: "CModel") -> str:
    """The lines that put a model's C files (``CModel.c_sources``, which Python loads as
    extension modules with their functions exported under the ``api`` macros, e.g.
    ``ARM_API``) into its FMU's ``model.c``: by ``#include``, the files travelling beside
    it in ``sources/`` (so the C exists once, in the package and in every FMU), each
    macro made ``static`` (private to the FMU; unused functions draw no warning)."""
    head = "".join(f"#define {m} static __attribute__((unused))\n" for m in model.api)
    return head + "".join(f'#include "{Path(s).name}"\n' for s in model.c_sources)


def table_check(length_function: str, table: str, size: str, what: str) -> str:
    """C statements for ``model_setup`` that refuse a table (``CModel.tables``) whose
    layout its kernel does not read as ``size`` numbers (a C expression) by
    ``length_function(table)``, the kernel's own reading of it: the numbers of an export
    come from a separate file (``model_data.c``, or the FMU's resources for a binary built
    with the package), so the code must not trust them.  ``what`` names the table in the
    message."""
    return (f"    if ({length_function}({table}) != {size}) {{\n"
            f'        snprintf(msg, n, "{what} is corrupt");\n'
            "        return 1;\n"
            "    }\n")


def table_setup(length_function: str, table: str, size: str, what: str) -> str:
    """``model_setup`` of a model whose only parameters to check are its table's
    (:func:`table_check`)."""
    return ("int model_setup(ModelData *d, char *msg, size_t n) {\n"
            "    (void)d;\n"
            f"{table_check(length_function, table, size, what)}"
            "    return 0;\n"
            "}\n")


def stateless_functions(outputs_body: str) -> str:
    """The six functions of a law without state: nothing to set up, start, integrate or
    update; ``model_outputs`` runs ``outputs_body`` (C statements over ``d``)."""
    return ("int model_setup(ModelData *d, char *msg, size_t n) "
            "{ (void)d; (void)msg; (void)n; return 0; }\n"
            "void model_initial(ModelData *d) { (void)d; }\n"
            "void model_derivatives(const ModelData *d, const double *x, double *dx) "
            "{ (void)d; (void)x; (void)dx; }\n"
            "void model_update(ModelData *d, double h) { (void)d; (void)h; }\n"
            "int model_validity(const ModelData *d, char *msg, size_t n) "
            "{ (void)d; (void)msg; (void)n; return 0; }\n\n"
            f"void model_outputs(ModelData *d) {{\n{outputs_body}\n}}\n")


@dataclass(frozen=True)
class CModel:
    """The C99 source of one block's equations (module docstring).

    Attributes
    ----------
    source : str
        Definitions of the six :data:`C_FUNCTIONS` (and static tables and helpers).
    n_states : int
        Size of the continuous state x (0: none, the wrapper does not integrate).
    n_discrete : int
        Size of the discrete state z.
    n_work : int
        Size of the work array w.
    state_names : tuple of str
        Names of x then z (as the block's ``state_names()``), for documentation.
    fixed_parameters : tuple of str
        Parameters whose values are built into the tables: the C FMU accepts only the
        value it was exported with (its range is that value; export again to change it).
    sample_time : str
        For a sampled law designed for one step size: a C expression of that step [s]
        over ``d`` (e.g. ``"PAR_dt"``); the FMU refuses other communication steps with
        fmi2Discard and a message, as the Python block does.  ``""``: any step.
    own_step : bool
        The model takes its own steps (``model_step``, module docstring): no continuous
        state for the wrapper to integrate, the ``method`` parameter fixed at export.
    c_sources : tuple of Path
        The C files the source calls into (a kernel's files, in order), included by
        ``model.c`` (:func:`include_c`) and shipped in the FMU's ``sources/``; their
        file names must differ.
    api : tuple of str
        The macros those files mark their exported functions with (made ``static``).
    tables : dict of str to array
        The numbers the source reads, by name (a C identifier; a ``const double *`` in
        the source, row-major for a matrix), finite; passed on bit for bit.
    """

    source: str
    n_states: int = 0
    n_discrete: int = 0
    n_work: int = 0
    state_names: tuple = field(default_factory=tuple)
    fixed_parameters: tuple = field(default_factory=tuple)
    sample_time: str = ""
    own_step: bool = False
    tables: dict = field(default_factory=dict)
    c_sources: tuple = field(default_factory=tuple)
    api: tuple = field(default_factory=tuple)

    def __post_init__(self):
        sources = tuple(Path(s) for s in self.c_sources)
        names = [s.name for s in sources]
        if len(set(names)) != len(names):
            raise ValueError(f"C sources of one model need distinct file names: {names}")
        object.__setattr__(self, "c_sources", sources)
        required = C_FUNCTIONS + (("model_step",) if self.own_step else ())
        missing = [f for f in required if not re.search(rf"\b{f}\s*\(", self.source)]
        if missing:
            raise ValueError(f"C model source lacks {', '.join(missing)}")
        for size in ("n_states", "n_discrete", "n_work"):
            if int(getattr(self, size)) < 0:
                raise ValueError(f"{size} must be >= 0")
        if self.own_step and self.n_states:
            raise ValueError("a model with its own step keeps its state in z: n_states "
                             "must be 0")
        tables = {}
        for name, values in self.tables.items():
            flat = np.array(values, dtype=np.float64).ravel()
            if not np.all(np.isfinite(flat)):
                raise ValueError(f"table {name}: non-finite values cannot be compiled")
            tables[c_identifier(name)] = flat
        object.__setattr__(self, "tables", tables)
