"""A linear time-invariant plant x' = A x + B u, y = C x + D u as a block.

The control-design plugin linearises the arm, the drive and the antenna to state-space
models; :class:`LinearSystemBlock` runs any such model in a co-simulation (as a Python
block, a Python FMU or a C-source FMU).  Its equations and their RK4/Gill/Treanor
stepping are C, ``native/linear.c`` (:class:`LinearKernel`, as the arm's): the block
calls it through the extension module built with the package, and
:meth:`LinearSystemBlock.c_model` compiles the same file into the FMU.  A model is
stored as JSON (:func:`save_state_space`, :func:`load_state_space`): the four matrices,
the names of the inputs, outputs and states and their units.  Any object with ``A``,
``B``, ``C``, ``D`` (a python-control ``StateSpace``, whose signal labels are taken when
present) can be saved.
"""
from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path

import numpy as np

from mbdcore.blocks import ParameterError, Signal
from mbdcore.cbuild import TABLE_LAYOUT_HEADER
from mbdcore.codegen import CModel, c_identifier, table_setup
from mbdcore.dae.ode_block import OdeBlock, stepping_parameters
from mbdcore.integrators.runge_kutta import C_FIXED_STEP_HEADER, CSteppedKernel
from mbdcore.native import TableLayout, kernel_library, table_layout

__all__ = ["state_space_config", "save_state_space", "load_state_space",
           "LinearSystemBlock", "LINEAR_C_SOURCE", "linear_library", "linear_table",
           "linear_layout", "LinearKernel"]

#: The plant's one implementation, in C (equations and stepping).
LINEAR_C_SOURCE = Path(__file__).resolve().parent / "native" / "linear.c"
#: The compiled plant (``native/linear.c``, built with the package), checked once per process.
linear_library = kernel_library("mbdcore.models._linear", LINEAR_C_SOURCE,
                                (C_FIXED_STEP_HEADER, TABLE_LAYOUT_HEADER))


@cache
def linear_layout() -> TableLayout:
    """The layout of the plant's table, ``LINEAR_LAYOUT`` of linear.c."""
    return table_layout(linear_library, "LINEAR_LAYOUT")

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
    except RecursionError:
        raise ParameterError(f"{path}: not a state-space file: nested too deeply") from None
    if not isinstance(config, dict):
        raise ParameterError(f"{path}: a state-space file holds a JSON object")
    return _checked(config)


def linear_table(A, B, C, D) -> np.ndarray:
    """The table of ``native/linear.c`` (``LINEAR_LAYOUT``, by name): n, m, p, then A,
    B, C, D row-major."""
    A, B, C, D = (np.atleast_2d(np.asarray(M, dtype=float)) for M in (A, B, C, D))
    return linear_layout().pack(n=A.shape[0], m=B.shape[1], p=C.shape[0], A=A, B=B, C=C, D=D)


class LinearKernel(CSteppedKernel):
    """The compiled plant (``native/linear.c``): ``kernel(x, u) -> x'`` (u held), with its
    own stepping loop for RK4, Gill and Treanor (``advance``, used by
    :meth:`~mbdcore.integrators.Integrator.step_autonomous`: one call per communication
    step), and the outputs ``kernel.outputs(x, u) -> y``."""

    def __init__(self, A, B, C, D):
        self.table = linear_table(A, B, C, D)
        self.lib = linear_library()
        if self.lib.linear_table_length(self.table) != self.table.size:
            raise ValueError("state-space table does not match the layout of linear.c")
        sizes = linear_layout().unpack(self.table)
        self.n_states, self.n_outputs = sizes["n"], sizes["p"]
        self.work_size = int(self.lib.linear_work_size(self.table))
        self.n_inputs = int(self.table[1])      # one signal per input of u

    def __call__(self, x, u):
        dx = np.empty(self.n_states)
        self.lib.linear_rhs(self.table, np.ascontiguousarray(x, dtype=float),
                            np.ascontiguousarray(u, dtype=float), dx)
        return dx

    def _advance(self, x, register, args, h, n, method, first):
        return self.lib.linear_advance(self.table, x, register, args[0], h, n, method, first,
                                       np.empty(self.work_size))

    def _run(self, inputs, x, register, t0, h, substeps, n_steps, method, record_every,
             record, done):
        return self.lib.linear_run(self.table, inputs, x, register, t0, h, substeps, n_steps,
                                   method, record_every, record, done,
                                   np.empty(self.work_size))

    def args_from_inputs(self, values) -> tuple:
        """The kernel's arguments from the signals of a schedule: (u,)."""
        return (np.array(values, dtype=float),)

    def outputs(self, x, u) -> np.ndarray:
        y = np.empty(self.n_outputs)
        self.lib.linear_outputs(self.table, np.ascontiguousarray(x, dtype=float),
                                np.ascontiguousarray(u, dtype=float), y)
        return y


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
        self.kernel = LinearKernel(self.A, self.B, self.C, self.D)
        self.reset()

    def initial_state(self) -> np.ndarray:
        return np.zeros(self.A.shape[0])

    def state_names(self) -> list[str]:
        return list(self.CONFIG["states"])

    def _u(self) -> np.ndarray:
        return np.array([self.inputs[n] for n in self.CONFIG["inputs"]], dtype=float)

    def derivatives(self):
        return self.kernel, (self._u(),)

    def outputs(self) -> dict:
        y = self.kernel.outputs(self.x, self._u())
        return dict(zip(self.CONFIG["outputs"], y.tolist()))

    def c_model(self) -> CModel:
        """The plant in C (``native/linear.c``, the code this block runs) over the same
        table: the sizes and the matrices."""
        names = self.CONFIG
        u = ", ".join(f"IN_{s}" for s in names["inputs"]) or "0.0"
        outs = "\n".join(f"    OUT_{s} = y[{i}];" for i, s in enumerate(names["outputs"]))
        table = self.kernel.table
        setup = table_setup("linear_table_length", "LINEAR_TABLE", "LINEAR_TABLE_SIZE",
                            "the state-space table")
        glue = f"""
/* the inputs in the block's order (one unused zero for a plant without inputs) */
#define LINEAR_INPUTS {{{u}}}
#define LINEAR_TABLE_SIZE {table.size}

{setup}

void model_initial(ModelData *d) {{
    int i;
    for (i = 0; i < N_X; i++) X(i) = 0.0;
}}

void model_derivatives(const ModelData *d, const double *x, double *dx) {{
    const double u[] = LINEAR_INPUTS;
    (void)d;                                   /* read by the inputs, if there are any */
    linear_rhs(LINEAR_TABLE, x, u, dx);
}}

void model_update(ModelData *d, double h) {{ (void)d; (void)h; }}

/* no range to check: a linear plant holds for every state */
int model_validity(const ModelData *d, char *msg, size_t n) {{ (void)d; (void)msg; (void)n; return 0; }}

void model_outputs(ModelData *d) {{
    const double u[] = LINEAR_INPUTS;
    double y[{max(len(names["outputs"]), 1)}];
    linear_outputs(LINEAR_TABLE, d->x, u, y);
{outs}
}}
"""
        return CModel(glue, c_sources=(LINEAR_C_SOURCE,), api=("LINEAR_API",),
                      n_states=self.kernel.n_states, tables={"LINEAR_TABLE": table},
                      state_names=tuple(names["states"]))
