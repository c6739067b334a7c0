"""A linear time-invariant plant x' = A x + B u, y = C x + D u as a block.

The control-design plugin linearises the arm, the drive and the antenna to state-space
models; :class:`LinearSystemBlock` runs any such model in a co-simulation (as a Python
block, a Python FMU or a C-source FMU: it returns its equations as C from
:meth:`LinearSystemBlock.c_model`).  A model is stored as JSON (:func:`save_state_space`,
:func:`load_state_space`): the four matrices, the names of the inputs, outputs and
states and their units.  Any object with ``A``, ``B``, ``C``, ``D`` (a python-control
``StateSpace``, whose signal labels are taken when present) can be saved.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np

from mbdcore.blocks import ParameterError, Signal
from mbdcore.codegen import CModel, c_identifier
from mbdcore.dae.ode_block import OdeBlock, stepping_parameters
from mbdcore.jit import njit

__all__ = ["state_space_config", "save_state_space", "load_state_space",
           "LinearSystemBlock"]

_KEYS = ("A", "B", "C", "D", "inputs", "outputs", "states", "input_units", "output_units",
         "state_units", "description")


def _labels(obj, attr: str, prefix: str, n: int) -> list[str]:
    labels = getattr(obj, attr, None)
    if labels is None or len(labels) != n:
        return [f"{prefix}{i}" for i in range(n)]
    # python-control's default labels "u[0]" are not C identifiers: "u0"
    return [re.sub(r"^([A-Za-z_]\w*)\[(\d+)\]$", r"\1\2", str(s)) for s in labels]


def state_space_config(system=None, *, A=None, B=None, C=None, D=None, inputs=None,
                       outputs=None, states=None, input_units=None, output_units=None,
                       state_units=None, description: str = "") -> dict:
    """A checked configuration of :class:`LinearSystemBlock` from a state-space object
    (``system.A``..``D``, python-control's labels) or from the matrices themselves.

    Units are FMI unit strings (``"rad"``, ``"N.m"``); names must be C identifiers (the
    model also compiles to C).  Raises ParameterError naming what is wrong.
    """
    if system is not None:
        A, B, C, D = (np.asarray(getattr(system, k), float) for k in "ABCD")
        n, m, p = A.shape[0], B.shape[1], C.shape[0]
        inputs = inputs or _labels(system, "input_labels", "u", m)
        outputs = outputs or _labels(system, "output_labels", "y", p)
        states = states or _labels(system, "state_labels", "x", n)
        if getattr(system, "dt", 0) not in (0, None):
            raise ParameterError("a discrete-time system (dt != 0) is not a continuous "
                                 "plant; give the continuous one")
    config = {"A": A, "B": B, "C": C, "D": D, "inputs": inputs, "outputs": outputs,
              "states": states, "input_units": input_units, "output_units": output_units,
              "state_units": state_units, "description": description}
    return _checked(config)


def _checked(config: dict) -> dict:
    unknown = sorted(set(config) - set(_KEYS))
    if unknown:
        raise ParameterError(f"state-space configuration: unknown key(s) {unknown}; "
                             f"accepted: {list(_KEYS)}")
    try:
        A = np.atleast_2d(np.asarray(config["A"], float))
        B = np.atleast_2d(np.asarray(config["B"], float))
        C = np.atleast_2d(np.asarray(config["C"], float))
        D = np.atleast_2d(np.asarray(config["D"], float))
    except (KeyError, TypeError, ValueError) as exc:
        raise ParameterError(f"state-space configuration: A, B, C, D must be numeric "
                             f"matrices ({exc})") from None
    n = A.shape[0]
    if A.shape != (n, n) or B.shape[0] != n or C.shape[1] != n or \
            D.shape != (C.shape[0], B.shape[1]):
        raise ParameterError(f"state-space configuration: inconsistent shapes A {A.shape}, "
                             f"B {B.shape}, C {C.shape}, D {D.shape} (need n x n, n x m, "
                             "p x n, p x m)")
    for k, M in zip("ABCD", (A, B, C, D)):
        if not np.all(np.isfinite(M)):
            raise ParameterError(f"state-space configuration: {k} has non-finite entries")
    m, p = B.shape[1], C.shape[0]
    out = {"A": A.tolist(), "B": B.tolist(), "C": C.tolist(), "D": D.tolist(),
           "description": str(config.get("description") or "")}
    for key, count, prefix in (("inputs", m, "u"), ("outputs", p, "y"), ("states", n, "x")):
        names = list(config.get(key) or [f"{prefix}{i}" for i in range(count)])
        units = list(config.get(key[:-1] + "_units") or [""] * count)
        if len(names) != count or len(units) != count:
            raise ParameterError(f"state-space configuration: {count} {key} and their units "
                                 f"expected, got {len(names)} names and {len(units)} units")
        try:
            for name in names:
                c_identifier(str(name))
        except ValueError as exc:
            raise ParameterError(f"state-space configuration, {key}: {exc}") from None
        out[key], out[key[:-1] + "_units"] = [str(s) for s in names], [str(u) for u in units]
    if len(set(out["inputs"]) | set(out["outputs"])) != m + p:
        raise ParameterError("state-space configuration: input and output names must be "
                             "distinct")
    return out


def save_state_space(system, path, **names_and_units) -> Path:
    """Write a state-space model to a JSON file (see :func:`state_space_config`)."""
    config = state_space_config(system, **names_and_units)
    path = Path(path)
    path.write_text(json.dumps(config, indent=1))
    return path


def load_state_space(path) -> dict:
    """Read a file written by :func:`save_state_space`; the checked configuration."""
    path = Path(path)
    try:
        config = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ParameterError(f"{path}: not a readable state-space file ({exc})") from None
    if not isinstance(config, dict):
        raise ParameterError(f"{path}: a state-space file holds a JSON object")
    return _checked(config)


@njit
def _linear_rhs(x, A, B, u):
    return A @ x + B @ u


class LinearSystemBlock(OdeBlock):
    """x' = A x + B u, y = C x + D u (module docstring), from x = 0.

    A class for one model comes from :meth:`configured`; the inputs are held over each
    communication step and integrated by ``substeps`` steps of ``method``.
    """

    CONFIG: dict = _checked({"A": [[0.0]], "B": [[1.0]], "C": [[1.0]], "D": [[0.0]]})
    INPUTS = (Signal("u0", "", "input 0"),)
    OUTPUTS = (Signal("y0", "", "output 0"),)
    PARAMETERS = stepping_parameters(10)
    DEFAULT_STOP_TIME = 1.0
    DEFAULT_STEP_SIZE = 1e-3

    @classmethod
    def configured(cls, config: dict, name: str | None = None) -> type["LinearSystemBlock"]:
        """The block class of one state-space model (a configuration of
        :func:`state_space_config` or :func:`load_state_space`)."""
        config = _checked(config)
        D = np.asarray(config["D"], float)
        inputs = tuple(Signal(n, u, f"input {n}")
                       for n, u in zip(config["inputs"], config["input_units"]))
        outputs = tuple(Signal(n, u, f"output {n}")
                        for n, u in zip(config["outputs"], config["output_units"]))
        feedthrough = {o.name: tuple(config["inputs"][k] for k in np.flatnonzero(D[i]))
                       for i, o in enumerate(outputs) if np.any(D[i])}
        doc = config["description"] or "Linear time-invariant plant x' = A x + B u, y = C x + D u"
        return type(name or "ConfiguredLinearSystem", (cls,),
                    {"CONFIG": config, "CONFIGURED": True, "INPUTS": inputs, "OUTPUTS": outputs,
                     "FEEDTHROUGH": feedthrough, "__doc__": doc,
                     "__module__": cls.__module__})

    def __init__(self, **params):
        super().__init__(**params)
        c = self.CONFIG
        self.A, self.B, self.C, self.D = (np.ascontiguousarray(c[k], dtype=float)
                                          for k in "ABCD")
        self.reset()

    def initial_state(self) -> np.ndarray:
        return np.zeros(self.A.shape[0])

    def state_names(self) -> list[str]:
        return list(self.CONFIG["states"])

    def _u(self) -> np.ndarray:
        return np.array([self.inputs[n] for n in self.CONFIG["inputs"]])

    def derivatives(self):
        return _linear_rhs, (self.A, self.B, self._u())

    def outputs(self) -> dict:
        y = self.C @ self.x + self.D @ self._u()
        return {n: float(v) for n, v in zip(self.CONFIG["outputs"], y)}

    def c_model(self) -> CModel:
        """The same equations in C over the same matrices (:mod:`mbdcore.codegen`)."""
        n, m = self.B.shape
        p = self.C.shape[0]
        names = self.CONFIG
        u = ", ".join(f"IN_{s}" for s in names["inputs"]) or "0.0"
        outs = "\n".join(f"    OUT_{s} = y[{i}];" for i, s in enumerate(names["outputs"]))
        source = (f"""
#define NS {n}
#define NU {m}
#define NY {p}

int model_setup(ModelData *d, char *msg, size_t n) {{ (void)d; (void)msg; (void)n; return 0; }}

void model_initial(ModelData *d) {{
    int i;
    for (i = 0; i < NS; i++) d->x[i] = 0.0;
}}

void model_derivatives(const ModelData *d, const double *x, double *dx) {{
    const double u[NU > 0 ? NU : 1] = {{{u}}};
    int i, j;
    for (i = 0; i < NS; i++) {{
        double s = 0.0;
        for (j = 0; j < NS; j++) s += SS_A[i * NS + j] * x[j];
        for (j = 0; j < NU; j++) s += SS_B[i * NU + j] * u[j];
        dx[i] = s;
    }}
}}

void model_update(ModelData *d, double h) {{ (void)d; (void)h; }}

int model_validity(const ModelData *d, char *msg, size_t n) {{ (void)d; (void)msg; (void)n; return 0; }}

void model_outputs(ModelData *d) {{
    const double u[NU > 0 ? NU : 1] = {{{u}}};
    double y[NY > 0 ? NY : 1];
    int i, j;
    for (i = 0; i < NY; i++) {{
        double s = 0.0;
        for (j = 0; j < NS; j++) s += SS_C[i * NS + j] * d->x[j];
        for (j = 0; j < NU; j++) s += SS_D[i * NU + j] * u[j];
        y[i] = s;
    }}
{outs}
}}
""")
        return CModel(source, n_states=n, state_names=tuple(names["states"]),
                      tables={"SS_A": self.A, "SS_B": self.B, "SS_C": self.C, "SS_D": self.D})
