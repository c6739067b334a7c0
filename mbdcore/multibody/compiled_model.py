"""A multibody System block's equations and implicit step as C (``SystemBlock.c_model``),
for a C-source FMU that runs without Python.

The FMU takes its own steps (``CModel.own_step``): per communication step, the inputs
are written into the compiled terms' state-independent forces, the history is started
afresh where the inputs jumped (or at the first step), as the Python block restarts its
integrator, and ``substeps`` steps of generalized-alpha (or HHT, Newmark: the block's
method, fixed at export with ``rho_inf``) are taken by ``alpha_step`` of
``mbdcore/dae/native/newton.c`` over the system's compiled terms
(``native/system_terms.c``, ``constraint_plan.c``, the bodies' kernels: ``ancf.c``).
Those kernels' structures, filled in Python for the model, are written out by
:class:`mbdcore.cimage.CImage`: their numbers as the table ``IMAGE``, their layout as
code.  A Newton failure is a discarded step with the solver's message (the Python block
halves the step first; the C step does not).

The linear algebra follows the block's method as in Python (``sparse``: above 200
coordinates by default): dense, or the sparse path of ``alpha_step``
(:mod:`mbdcore.dae.sparse_step`): the Newton matrix assembled into a CSC pattern fixed
here, factored by ``mbdcore/dae/native/sparse_lu.c`` (the FMU carries it) on a
fill-reducing ordering and a pivot order fixed here from the matrix at the initial
state, its factors kept across steps, where they were made part of the state (z), so
that a saved state continues bit for bit.

Covered: planar and spatial systems whose every part has a compiled form
(:meth:`System.compiled_terms`, with the Newton matrix blocks in C), dense or sparse,
no constraint that depends on time (drivers), force elements whose generalised force
is independent of the state and time and affine in the inputs (joint torques, point
forces by input, gravity; an input an element clips, a motor's voltage, clipped in C
alike, ``Force.input_limits``) or that have a compiled form and read no input
(springs, dampers, gears, screw drives, contact of circles and of a circle with a line,
constant point forces on rigid bodies: ``Force.compiled_element``, whose kernels'
sources the FMU carries, the drive's ``drive.c`` for a motor; not the elements whose
compiled form reads an input or a load in time, written before each solve --
``Force.compiled_per_solve``: linear actuators, torques by input or in time --;
constant body torques are: ``linear_t``), latches (their engaged flags part of the state,
switched in C after each accepted substep as ``Force.update`` does, the history
restarted there: ``Force.compiled_engagement``), no other switching force laws or
discrete state; outputs: the coordinates and their rates.  Anything else is refused by
:func:`c_model_refusals`, naming the part.
"""
from __future__ import annotations

import string

import numpy as np

from mbdcore.codegen import CModel, CModelError, signal_macro
from mbdcore.cimage import CImage, kernel_functions
from mbdcore.dae.compiled_step import STEP_FAILURES, CompiledAlphaStep
from mbdcore.dae.newton_native import NEWTON_C_SOURCE
from mbdcore.dae.schemes import GeneralizedAlphaScheme
from mbdcore.dae.sparse_solver import SPARSE_LU_C_SOURCE, SingularMatrixError
from mbdcore.multibody.ancf import ANCF_C_SOURCE
from mbdcore.multibody.assembly import PLAN_C_SOURCE
from mbdcore.multibody.constraints import ConstantRate, PolynomialMotion, SpinUp
from mbdcore.multibody.terms import SYSTEM_TERMS_C_SOURCE

__all__ = ["system_c_model", "c_model_refusals", "STRUCT_TYPES", "POINTER_ARRAYS",
           "FUNCTION_CASTS", "MOTIONS", "MOTION_C"]

#: the driving motions C evaluates (MOTION_C)
MOTIONS = (ConstantRate, SpinUp, PolynomialMotion)

#: the kernels whose functions the structures point to, their C files and API macros
KERNELS = (("mbdcore.multibody._constraint_plan", PLAN_C_SOURCE, "PLAN_API"),
           ("mbdcore.multibody._ancf", ANCF_C_SOURCE, "ANCF_API"),
           ("mbdcore.multibody._system_terms", SYSTEM_TERMS_C_SOURCE, "TERMS_API"),
           ("mbdcore.dae._newton", NEWTON_C_SOURCE, "NEWTON_API"),
           ("mbdcore.dae._sparse_lu", SPARSE_LU_C_SOURCE, "SLU_API"))
#: the C type of each ctypes structure class the compiled terms are made of
STRUCT_TYPES = {"_SystemTermsStruct": "system_terms_t", "plan_layout": "plan_t",
                "plan_geometric_layout": "plan_geometric_t", "ancf_body_layout": "ancf_body_t",
                "newton_layout": "newton_t", "alpha_step_layout": "alpha_step_t",
                "measure_layout": "measure_t", "sparse_newton_layout": "sparse_newton_t",
                "sparse_matrix_layout": "sparse_matrix_t"}
#: the C element type of the arrays of pointers the terms hold
POINTER_ARRAYS = {("system_terms_t", "body_fn"): "body_force_fn",
                  ("system_terms_t", "body_tangent"): "body_tangent_fn",
                  ("system_terms_t", "body_params"): "const void *",
                  ("system_terms_t", "elem_fn"): "body_force_fn",
                  ("system_terms_t", "elem_tangent"): "body_tangent_fn",
                  ("system_terms_t", "elem_params"): "const void *"}
#: the constraint plan's functions take their own structures where the system terms
#: call them with a ``const void *`` (the same call as in process)
FUNCTION_CASTS = {("system_terms_t", "plan"): "plan_fn",
                  ("system_terms_t", "geometric"): "plan_geometric_fn"}


def c_model_refusals(block) -> list[str]:
    """Why ``block`` (a SystemBlock) has no C model: each part or setting named, or []."""
    system, why = block.system, []
    if not block.implicit or not isinstance(block.integrator, GeneralizedAlphaScheme):
        why.append(f"method {block.params['method']!r} (a C FMU of a multibody model "
                   "steps with 'generalized-alpha', 'hht' or 'newmark')")
    for body in system.bodies:
        if not body.constant_mass or body.compiled_forces(system.gravity) is None:
            why.append(f"body {body.name!r} ({type(body).__name__}: no compiled form)")
    for force in system.forces_list:
        if not force.state_independent() and force.compiled_element() is None:
            why.append(f"force {force.name!r} ({type(force).__name__}: depends on the "
                       "state, no compiled form)")
        elif not force.state_independent() and force.compiled_per_solve():
            why.append(f"force {force.name!r} ({type(force).__name__}: its compiled form "
                       "reads an input or a load in time, written before each solve; C "
                       "takes inputs only as forces independent of the state)")
    for joint in system.joints:
        for side in (getattr(joint, "a", None), getattr(joint, "b", None)):
            if _inside_spatial_line(side):
                why.append(f"joint {joint.name!r} (at {side[1]:g} m along {side[0].name!r}: "
                           "a C image of a joint inside a spatial ANCF body diverges at its "
                           "second step where the in-process step does not; its ends are "
                           "taken)")
        motion = getattr(joint, "motion", None)
        if motion is not None and type(motion) not in MOTIONS:
            why.append(f"joint {joint.name!r} (a driving motion {type(motion).__name__}; C "
                       f"has {', '.join(m.__name__ for m in MOTIONS)})")
    if system.m and system.constraint_plan().ad_row.size:
        why.append("spatial angle drivers (their rates enter g_t in the plan)")
    if system.m and system.constraint_plan().fallback:
        names = ", ".join(repr(j.name) for j, _ in system.constraint_plan().fallback)
        why.append(f"joints {names} (no closed form in C)")
    held = [f.name for f in system.forces_list if f.discrete_state() is not None
            and (f.compiled_element() is None or f.compiled_engagement() is None)]
    if system.has_switches or held:
        why.append("switching force laws or discrete state without a compiled form "
                   f"(slack cables{''.join(', ' + repr(n) for n in held)})")
    coordinates = set(system.coordinate_names())
    for out in block.OUTPUTS:
        name = out.name[4:-1] if out.name.startswith("der(") else out.name
        if name not in coordinates:
            why.append(f"output {out.name!r} (C computes coordinates and their rates)")
    return why


def _inside_spatial_line(side) -> bool:
    """Whether a joint's side (body, location) is a point strictly inside a spatial ANCF
    line body (its location an arc length between the ends)."""
    if not isinstance(side, tuple) or len(side) != 2:
        return False
    body, at = side
    return getattr(body, "dim", 2) == 3 and hasattr(body, "node_arc") and \
        isinstance(at, (int, float)) and 0.0 < at < body.length


def _motion_numbers(offset) -> tuple[str, list]:
    """The C function and numbers of an angle-sum row's offset (``joint.offset``): its
    joint's driving motion, or a constant (a gear's or weld's angle)."""
    motion = getattr(getattr(offset, "__self__", None), "motion", None)
    if isinstance(motion, ConstantRate):
        return "constant_rate", [motion.angle0, motion.rate]
    if isinstance(motion, SpinUp):
        return "spin_up", [motion.final_rate, motion.spin_up_time]
    if isinstance(motion, PolynomialMotion):
        c = np.polynomial.polynomial
        parts = [motion.coefficients, c.polyder(motion.coefficients),
                 c.polyder(motion.coefficients, 2)]
        parts = [p if p.size else np.zeros(1) for p in parts]
        return "polynomial", [float(p.size) for p in parts] + \
            [float(x) for p in parts for x in p]
    f0, f1 = offset(0.0), offset(1.0)
    if f0 != f1 or f0[1] != 0.0 or f0[2] != 0.0:
        raise CModelError(f"an angle offset that depends on time without a motion C knows "
                          f"({offset!r})")
    return "constant_rate", [float(f0[0]), 0.0]


#: C of the driving motions by function, as mbdcore.multibody.constraints computes them
#: (the same operations in the same order, so the same numbers): f, f', f'' [rad, rad/s,
#: rad/s^2]; a model's source has the ones it uses
MOTION_C = {
    "constant_rate": """
static void constant_rate(const double *p, double t, double *f)
{
    f[0] = p[0] + p[1] * t;
    f[1] = p[1];
    f[2] = 0.0;
}
""",
    "spin_up": """
static void spin_up(const double *p, double t, double *f)
{
    const double w = p[0], T = p[1];
    double k;
    if (t >= T) {
        f[0] = w * (t - T / 2);
        f[1] = w;
        f[2] = 0.0;
        return;
    }
    k = 2 * 3.141592653589793 / T;
    f[0] = (w / T) * (t * t / 2 + (cos(k * t) - 1) / pow(k, 2));
    f[1] = (w / T) * (t - sin(k * t) / k);
    f[2] = (w / T) * (1 - cos(k * t));
}
""",
    "polynomial": """
/* numpy's polyval: Horner from the highest coefficient */
static double horner(const double *c, int n, double t)
{
    double r = c[n - 1] + t * 0;
    int i;
    for (i = n - 2; i >= 0; --i) r = c[i] + r * t;
    return r;
}

/* p: the sizes of the coefficients of f, f', f'', then those coefficients */
static void polynomial(const double *p, double t, double *f)
{
    const int a = (int)p[0], b = (int)p[1], c = (int)p[2];
    f[0] = horner(p + 3, a, t);
    f[1] = horner(p + 3 + a, b, t);
    f[2] = horner(p + 3 + a + b, c, t);
}
"""}


def _input_forces(terms, system, inputs):
    """The state-independent forces F0 [N, N m] at zero inputs and each input's column
    (F0 affine in the inputs and independent of time, else CModelError naming it)."""
    saved = dict(system.inputs)
    try:
        def f0(values, t=0.0):
            system.inputs.update(values)
            terms.prepare(t)
            return terms.F0.copy()
        # probes within the range an element clips an input to (C clips it alike)
        limits = {}
        for force in system.forces_list:
            limits.update(force.input_limits())
        probe = {u: min(1.0, 0.25 * min(-limits[u][0], limits[u][1])) if u in limits
                 else 1.0 for u in inputs}
        zero = {u: 0.0 for u in inputs}
        base = f0(zero)
        columns = [(f0({**zero, u: probe[u]}) - base) / probe[u] for u in inputs]
        both = f0({u: 2.0 * probe[u] for u in inputs}, 1.0)
        expected = base + 2.0 * sum((probe[u] * c for u, c in zip(inputs, columns)),
                                    np.zeros_like(base))
        if not np.allclose(both, expected, rtol=1e-12, atol=1e-12 * (1 + np.abs(base).max())):
            raise CModelError("the forces by input are not affine in the inputs and "
                              "independent of time: no C model")
    finally:
        system.inputs.update(saved)
        terms.prepare(0.0)
    return base, columns


#: the model's functions around alpha_step (mbdcore.codegen's contract, own step),
#: ``$name`` the places of this model's structures and its state's layout in z
MODEL_C = string.Template("""
int model_setup(ModelData *d, char *msg, size_t n)
{
    (void)d; (void)msg; (void)n;
    image_setup(IMAGE);
    return 0;
}

void model_initial(ModelData *d)
{
    int i;
    for (i = 0; i < $n_z; ++i) Z(i) = 0.0;
    for (i = 0; i < $n_qv; ++i) Z(i) = INITIAL[i];
    for (i = 0; i < N_SWITCH; ++i) Z($engaged + i) = ENGAGED[i];
}

void model_derivatives(const ModelData *d, const double *x, double *dx)
{
    (void)d; (void)x; (void)dx;
}

void model_update(ModelData *d, double h) { (void)d; (void)h; }

int model_step(ModelData *d, double t, double h, char *msg, size_t n)
{
    double u[N_IN > 0 ? N_IN : 1], *z = d->z, hs;
    int j, k, code, jumped = 0, steps = PAR_substeps;
    hs = h / steps;
    apply_inputs(d, u);
    load_switches(d);
    for (j = 0; j < N_IN; ++j)
        if (Z($held + j) != u[j]) jumped = 1;
    if (Z($started) == 0.0 || jumped) {
        /* the Python block restarts its integrator where an input jumped */
        driving_offsets(t, GAMMA_T);
        code = alpha_start($newton, $scheme, z + $q, z + $v, GAMMA_T, z + $a, z + $qdd,
                           z + $lam, z + $guess, PIV);
        if (code) {
            snprintf(msg, n, "initial accelerations at t = %.17g s: %s", t, STEP_WHY[code]);
            return 1;
        }
        Z($started) = 1.0;
    }
    for (k = 0; k < steps; ++k) {
        driving_offsets((t + k * hs) + hs, NULL);     /* the solve's time, as in Python */
        code = alpha_step($newton, $scheme, hs, z + $q, z + $v, z + $a, z + $qdd, z + $lam,
                          z + $guess, PIV, REPORT);
        if (code) {
            snprintf(msg, n, "$method: Newton did not converge at t = %.17g s (h = %g s) "
                     "after %d iterations (%s); last increment %.3g x tolerance",
                     t + (k + 1) * hs, hs, (int)REPORT[0], STEP_WHY[code], REPORT[2]);
            return 1;
        }
        if (engage_switches(d)) {
            /* a latch engaged: the Python block restarts its integrator there */
            driving_offsets(t + (k + 1) * hs, GAMMA_T);
            code = alpha_start($newton, $scheme, z + $q, z + $v, GAMMA_T, z + $a, z + $qdd,
                               z + $lam, z + $guess, PIV);
            if (code) {
                snprintf(msg, n, "restart at t = %.17g s: %s", t + (k + 1) * hs,
                         STEP_WHY[code]);
                return 1;
            }
        }
    }
    for (j = 0; j < N_IN; ++j) Z($held + j) = u[j];
    return 0;
}

int model_validity(const ModelData *d, char *msg, size_t n)
{
    (void)d; (void)msg; (void)n;
    return 0;
}
""")


def _driving_offsets_c(terms, image, m: int) -> tuple[str, list]:
    """C of ``driving_offsets(t, gamma_t)``: the angle-sum rows' offsets f(t), f'(t)
    into the terms, f''(t) into gamma_t (m values, or NULL), with the motion functions it
    calls; and their numbers (the table MOTIONS)."""
    sum_rows = terms.plan.sum_rows if m else []
    if sum_rows and terms.kept is not None:
        raise CModelError("no C model for angle offsets or drivers in a system with "
                          "redundant rows removed")
    numbers, calls, functions = [], [], {}
    for k, (row, offset_of) in enumerate(sum_rows):
        function, values = _motion_numbers(offset_of)
        functions[function] = MOTION_C[function]
        calls.append(f"    {function}(MOTIONS + {len(numbers)}, t, f);\n"
                     f"    offset[{k}] = f[0];\n    rate[{k}] = f[1];\n"
                     f"    if (gamma_t != NULL) gamma_t[{row}] = f[2];\n")
        numbers.extend(values)
    offset, rate = (image.name(a) if a.size else "NULL" for a in (terms.offset,
                                                                 terms.offset_rate))
    return ("".join(functions.values())
            + "\nstatic void driving_offsets(double t, double *gamma_t)\n{\n"
            f"    double f[3], *offset = {offset}, *rate = {rate};\n    int i;\n"
            "    (void)f; (void)offset; (void)rate; (void)t;\n"
            "    if (gamma_t != NULL)\n"
            f"        for (i = 0; i < {max(m, 1)}; ++i) gamma_t[i] = 0.0;\n"
            + "".join(calls) + "}\n"), numbers


def _switches_c(terms, image, newton: str, at: dict) -> tuple[str, list]:
    """C of ``load_switches`` (the engaged flags of the state into the compiled laws)
    and ``engage_switches`` (each open one engaged where its measure s >= 0 at the
    accepted state, as ``Force.update``; 1 if one did), over the elements with a
    ``compiled_engagement``; and their flags now (the table ENGAGED)."""
    switches = [(k, f) for k, f in enumerate(terms.element_forces)
                if f.compiled_engagement() is not None]
    laws = [image.name(f.compiled_engagement()) for _, f in switches]
    big = max([terms.elements[k].cols.size for k, _ in switches], default=1)
    code = (f"#define N_SWITCH {len(switches)}\n"
            "static const int SWITCH_ELEMENT[] = {"
            + (", ".join(str(k) for k, _ in switches) or "0") + "};\n"
            "static double *switch_law(int i)\n{\n    (void)i;\n"
            + "".join(f"    if (i == {i}) return {law};\n" for i, law in enumerate(laws))
            + "    return NULL;\n}\n\n"
            "static void load_switches(ModelData *d)\n{\n    int i;\n    (void)d;\n"
            f"    for (i = 0; i < N_SWITCH; ++i) switch_law(i)[3] = Z({at['engaged']} + i);\n"
            "}\n\n"
            "static int engage_switches(ModelData *d)\n{\n"
            f"    const system_terms_t *st = (const system_terms_t *)({newton})->terms_ctx;\n"
            f"    double qe[{big}], ve[{big}];\n    int i, j, engaged = 0;\n"
            "    (void)st; (void)qe; (void)ve; (void)j; (void)d;\n"
            "    for (i = 0; i < N_SWITCH; ++i) {\n"
            "        const int k = SWITCH_ELEMENT[i];\n"
            "        const int *cols = st->elem_cols + st->elem_first[k];\n"
            f"        if (Z({at['engaged']} + i) != 0.0) continue;\n"
            "        for (j = 0; j < st->elem_size[k]; ++j) {\n"
            f"            qe[j] = Z({at['q']} + cols[j]);\n"
            f"            ve[j] = Z({at['v']} + cols[j]);\n        }}\n"
            "        if (measure_value(st->elem_params[k], qe, ve) >= 0.0) {\n"
            f"            Z({at['engaged']} + i) = 1.0;\n"
            "            switch_law(i)[3] = 1.0;\n            engaged = 1;\n        }\n"
            "    }\n    return engaged;\n}\n")
    return code, [float(f.compiled_engagement()[3]) for _, f in switches]


def _signals_c(block, image, terms, at: dict) -> str:
    """C of ``apply_inputs`` (F0 = the forces at zero inputs + each input times its
    column of FORCES) and ``model_outputs`` (coordinates and rates from z)."""
    n = terms.n
    inputs = [s.name for s in block.INPUTS]
    index = {c: i for i, c in enumerate(block.system.coordinate_names())}
    limits = {}
    for force in block.system.forces_list:
        limits.update(force.input_limits())

    def read(j, u):
        # an input an element clips (a motor's voltage limit) is clipped here too, as
        # Python's min(max(u, low), high)
        if u not in limits:
            return f"    u[{j}] = IN_{signal_macro(u)};\n"
        low, high = limits[u]
        return (f"    u[{j}] = IN_{signal_macro(u)};\n"
                f"    u[{j}] = u[{j}] > {low!r} ? u[{j}] : {low!r};\n"
                f"    u[{j}] = {high!r} < u[{j}] ? {high!r} : u[{j}];\n")

    def place(name):
        rate = name.startswith("der(")
        return f"Z({at['v'] if rate else 0} + {index[name[4:-1] if rate else name]})"
    return (f"#define N_IN {len(inputs)}\n\n"
            "static void apply_inputs(const ModelData *d, double *u)\n{\n"
            f"    int i, j;\n    double *f0 = {image.name(terms.F0)};\n    (void)d;\n"
            + "".join(read(j, u) for j, u in enumerate(inputs))
            + f"    for (i = 0; i < {n}; ++i) {{\n        double f = FORCES[i];\n"
            f"        for (j = 0; j < N_IN; ++j) f += u[j] * FORCES[{n} * (j + 1) + i];\n"
            "        f0[i] = f;\n    }\n}\n\n"
            "void model_outputs(ModelData *d)\n{\n"
            + "".join(f"    OUT_{signal_macro(o.name)} = {place(o.name)};\n"
                      for o in block.OUTPUTS) + "}\n")


def system_c_model(block) -> CModel:
    """The C model of a SystemBlock (module docstring); CModelError naming every part
    that has no compiled form."""
    why = c_model_refusals(block)
    if why:
        raise CModelError(f"{type(block).__name__}: no C model for " + "; ".join(why))
    system = block.system
    stepper = CompiledAlphaStep(block.integrator, system)
    # the sparse path's pivot order, fixed here by the matrix at the initial state
    try:
        stepper.fix_pivots(0.0, block.q, block.v, CompiledAlphaStep.REFERENCE_STEP)
    except SingularMatrixError as exc:
        raise CModelError(f"{type(block).__name__}: the Newton matrix at the initial "
                          f"state cannot fix the sparse path's pivot order ({exc})") from exc
    terms = stepper.terms.owner
    kernels = KERNELS + tuple(k for k in terms.kernel_sources() if k not in KERNELS)
    inputs = [s.name for s in block.INPUTS]
    base, columns = _input_forces(terms, system, inputs)
    image = CImage({"newton": stepper.newton_struct, "scheme": stepper.scheme_struct},
                   [stepper, terms, terms.plan], STRUCT_TYPES,
                   kernel_functions([k[0] for k in kernels]), POINTER_ARRAYS, FUNCTION_CASTS)
    n, m = stepper.n, stepper.m
    k_mu = m if block.integrator.ggl else 0
    # z: q, v, a, q'', lambda, the next guess (dq, mu, its h, and on the sparse path
    # where the kept factors were made), started, held inputs
    at = {"q": 0, "v": n, "a": 2 * n, "qdd": 3 * n, "lam": 4 * n, "guess": 4 * n + m}
    at["started"] = at["guess"] + stepper.guess.size
    at["held"] = at["started"] + 1
    at["engaged"] = at["held"] + len(inputs)
    switches, engaged = _switches_c(terms, image, image.roots["newton"], at)
    n_z = at["engaged"] + len(engaged)
    offsets, motions = _driving_offsets_c(terms, image, m)
    failures = ", ".join(f'"{STEP_FAILURES.get(k, "")}"' for k in range(7))
    source = (
        "/* the compiled terms' structures (mbdcore.cimage): their numbers in IMAGE */\n"
        f"{image.declarations()}\n{image.setup_function()}\n"
        f"static int PIV[{n + m + k_mu}];\nstatic double GAMMA_T[{max(m, 1)}];\n"
        f"static double REPORT[3];\nstatic const char *const STEP_WHY[] = {{{failures}}};\n"
        + _signals_c(block, image, terms, at) + offsets + switches
        + MODEL_C.substitute(at, n_z=n_z, n_qv=2 * n, newton=image.roots["newton"],
                             scheme=image.roots["scheme"], method=block.params["method"]))
    tables = {"IMAGE": image.table, "MOTIONS": np.array(motions or [0.0]),
              "FORCES": np.concatenate([base, *columns]) if columns else base,
              "INITIAL": np.concatenate([block.q, block.v]),
              "ENGAGED": np.array(engaged or [0.0])}
    names = system.coordinate_names()
    state = (names + [f"der({c})" for c in names] + [f"a{i}" for i in range(n)]
             + [f"qdd{i}" for i in range(n)] + [f"lambda{i}" for i in range(m)]
             + [f"guess{i}" for i in range(stepper.guess.size)] + ["started"]
             + [f"held({u})" for u in inputs]
             + [f"engaged({f.name})" for f in terms.element_forces
                if f.compiled_engagement() is not None])
    return CModel(source, n_states=0, n_discrete=n_z, state_names=tuple(state),
                  fixed_parameters=("method", "rho_inf", "baumgarte"), own_step=True,
                  tables=tables, c_sources=tuple(k[1] for k in kernels),
                  api=tuple(k[2] for k in kernels))
