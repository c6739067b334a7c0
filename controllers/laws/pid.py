"""PID control: a sampled PID block with anti-windup, derivative filter, output limits
and setpoint weighting, and its exact linear transfer function.

Law (parallel form, error signals held over each sample of length ``h``)::

    e  = r - y                      (integral)
    ep = b r - y                    (proportional, setpoint weight b)
    ed = c r - y                    (derivative, setpoint weight c)
    v  = kp ep + I + D + u_ff,      u = clip(v, u_min, u_max)
    D  = kd d/dt ed through the filter 1 / (tf s + 1)

Discretisation, per step with the inputs held (the sampled law the co-simulation
master and :func:`~controllers.design.adapters.block_iosys` run):

* integral: ``I += h ki e`` (exact for a held error);
* derivative filter state ``xf`` (a low-pass copy of ``ed``): ``xf <- a xf + (1 - a) ed``
  with ``a = exp(-h / tf)`` (exact zero-order hold), ``D = kd (ed - xf) / tf``; a
  derivative needs ``tf > 0`` (an unfiltered one amplifies noise without bound);
* anti-windup while ``v`` is outside the limits:

  - ``"back-calculation"`` (Astrom & Hagglund): ``I' = ki e + (u - v) / tt``, integrated
    exactly over the step (linear in I, the other terms held);
  - ``"clamping"``: the integral is frozen when the error would drive it further into
    the limit;
  - ``"none"``: the integral winds up (for comparison).

Unsaturated, the block is the linear discrete system :func:`pid_transfer_function`:
``C(z) = kp + ki h / (z - 1) + kd (z - 1) / (tf (z - a))``, which tends to
``kp + ki / s + kd s / (tf s + 1)`` as ``h -> 0``.
"""
from __future__ import annotations

import ctypes
import math

import numpy as np

from controllers.laws.kernels import PID_C_SOURCE, pid_law, pid_layout
from mbdcore.blocks import Block, Parameter, ParameterError, Signal, VectorState
from mbdcore.codegen import CModel

__all__ = ["ANTI_WINDUP", "UNBOUNDED", "pid_transfer_function", "PIDController"]

ANTI_WINDUP = ("back-calculation", "clamping", "none")
#: "no limit" for the output limits (a finite number, as FMI parameters must be)
UNBOUNDED = 1e300


def pid_transfer_function(kp: float, ki: float, kd: float, tf: float, dt: float | None = None,
                          b: float = 1.0, c: float = 0.0, name: str = "pid"):
    """The linear PID (no saturation) from the error ``e = r - y`` to ``u``.

    Parameters
    ----------
    kp, ki, kd : float
        Gains (``ki`` [1/s], ``kd`` [s] times the units of ``u`` per unit of ``y``).
    tf : float
        Derivative filter time constant [s], > 0 if ``kd != 0``.
    dt : float, optional
        Sample time [s]: the discrete law of :class:`PIDController`; ``None``: the
        continuous-time PID.

    Returns
    -------
    control.TransferFunction
        ``e -> u`` (the feedback path: ``u = -C y``; with setpoint weights b, c != 1
        the reference enters differently).
    """
    # python-control (with matplotlib.pyplot, about 1.5 s) is imported when a linear form
    # is asked for, not with the laws: their blocks, FMUs and C exports need none of it
    import control as ct

    _check_filter(kd, tf)
    if dt is None:
        s = ct.tf("s")
        sys = kp + ki / s + (kd * s / (tf * s + 1.0) if kd else 0)
    else:
        z = ct.tf([1, 0], [1], dt)
        sys = kp + ki * dt / (z - 1) + ((kd / tf) * (z - 1) / (z - math.exp(-dt / tf))
                                        if kd else 0)
    return ct.tf(ct.minreal(sys, verbose=False), inputs="e", outputs="u", name=name)


def _check_filter(kd: float, tf: float) -> None:
    if kd != 0.0 and not tf > 0.0:
        raise ParameterError(f"parameter 'tf' = {tf!r}: a derivative gain (kd = {kd!r}) "
                             "needs a filter time constant tf > 0 [s]")


class PIDController(Block):
    """Sampled PID with anti-windup, derivative filter, output limits and setpoint
    weights (module docstring).  Signal-agnostic: units follow the loop it is put in.

    State: the integral ``I`` (unit of ``u``) and the derivative-filter state ``xf``
    (unit of ``y``).  The output depends directly on ``r``, ``y`` and ``u_ff``.
    """

    INPUTS = (Signal("r", "", "setpoint"),
              Signal("y", "", "measurement"),
              Signal("u_ff", "", "feedforward, added before the limits"))
    OUTPUTS = (Signal("u", "", "control output, within [u_min, u_max]"),)
    PARAMETERS = (
        Parameter("kp", 1.0, "", "proportional gain"),
        Parameter("ki", 0.0, "1/s", "integral gain"),
        Parameter("kd", 0.0, "s", "derivative gain"),
        Parameter("tf", 0.0, "s", "derivative filter time constant (> 0 if kd != 0)", min=0.0),
        Parameter("b", 1.0, "", "setpoint weight of the proportional term"),
        Parameter("c", 0.0, "", "setpoint weight of the derivative term"),
        Parameter("u_min", -UNBOUNDED, "", "lower output limit"),
        Parameter("u_max", UNBOUNDED, "", "upper output limit"),
        Parameter("anti_windup", "back-calculation", "", "integrator anti-windup",
                  choices=ANTI_WINDUP),
        Parameter("tt", 0.0, "s", "back-calculation tracking time constant "
                  "(0: sqrt(Ti Td), or Ti without D, Ti = kp/ki)", min=0.0),
    )
    FEEDTHROUGH = {"u": ("r", "y", "u_ff")}
    DEFAULT_STOP_TIME = 1.0
    DEFAULT_STEP_SIZE = 1e-3

    def __init__(self, **params):
        super().__init__(**params)
        p = self.params
        self._c_params = pid_layout().pack(**{n: p[n] for n in pid_layout().names
                                              if n != "anti_windup"},
                                           anti_windup=ANTI_WINDUP.index(p["anti_windup"]))
        message = ctypes.create_string_buffer(512)
        if pid_law().pid_check(self._c_params, message, len(message)):
            raise ParameterError(message.value.decode())
        self.tt = pid_law().pid_tracking_time(self._c_params)
        self.reset()

    @staticmethod
    def default_tracking_time(kp: float, ki: float, kd: float) -> float:
        """Astrom & Hagglund's rule: ``tt = sqrt(Ti Td)`` with D, ``Ti`` without [s]."""
        return pid_law().pid_tracking_time(pid_layout().pack(
            kp=kp, ki=ki, kd=kd, tf=0.0, b=1.0, c=0.0, u_min=-1.0, u_max=1.0, anti_windup=0,
            tt=0.0))

    def reset(self, t0: float = 0.0) -> None:
        super().reset(t0)
        self._z = np.zeros(2)           # the integral I and the derivative filter state xf

    @property
    def integral(self) -> float:
        """The integral term I (unit of u)."""
        return float(self._z[0])

    @property
    def xf(self) -> float:
        """The derivative filter's state (unit of y)."""
        return float(self._z[1])

    # -- the law (native/pid.c, the code of the C FMU) ------------------------------------
    def _u(self) -> np.ndarray:
        u = self.inputs
        return np.array([u["r"], u["y"], u["u_ff"]])

    def outputs(self) -> dict:
        return {"u": pid_law().pid_output(self._c_params, self._z, self._u())}

    def do_step(self, t: float, h: float) -> None:
        pid_law().pid_update(self._c_params, self._z, self._u(), float(h))
        self.time = t + h

    # -- linear analysis and python-control ------------------------------------------
    def transfer_function(self, dt: float | None = None):
        """``e -> u`` of this block's gains (:func:`pid_transfer_function`); ``dt``
        defaults to ``DEFAULT_STEP_SIZE``."""
        p = self.params
        return pid_transfer_function(p["kp"], p["ki"], p["kd"], p["tf"],
                                     dt or self.DEFAULT_STEP_SIZE)

    def vector_state(self) -> VectorState:
        def set_x(block, x):
            block._z = np.array(x, dtype=float).reshape(2)
        return VectorState(["integral", "filter"], lambda b: b._z.copy(), set_x)

    def _get_internal(self):
        return {"integral": self.integral, "xf": self.xf}

    def _set_internal(self, internal):
        self._z = np.array([internal["integral"], internal["xf"]], dtype=float)

    def c_model(self) -> CModel:
        """The PID in C (``native/pid.c``, the code this block runs); every parameter
        stays settable (their consistency is checked at initialisation)."""
        layout = pid_layout()
        params = layout.c_initializer(**{**{n: f"PAR_{n}" for n in layout.names},
                                         "anti_windup": "(double)AW_INDEX(PAR_anti_windup)"})
        glue = f"""
/* the choices of anti_windup in ANTI_WINDUP order, as pid.c numbers them */
#define AW_INDEX(s) (s)
#define PID_PARAMS const double p[{len(layout.names)}] = {params}

int model_setup(ModelData *d, char *msg, size_t n) {{
    PID_PARAMS;
    return pid_check(p, msg, n);
}}

void model_initial(ModelData *d) {{ Z(0) = 0.0; Z(1) = 0.0; }}
void model_derivatives(const ModelData *d, const double *x, double *dx) {{ (void)d; (void)x; (void)dx; }}
int model_validity(const ModelData *d, char *msg, size_t n) {{ (void)d; (void)msg; (void)n; return 0; }}

void model_update(ModelData *d, double h) {{
    PID_PARAMS;
    const double u[3] = {{IN_r, IN_y, IN_u_ff}};
    pid_update(p, d->z, u, h);
}}

void model_outputs(ModelData *d) {{
    PID_PARAMS;
    const double u[3] = {{IN_r, IN_y, IN_u_ff}};
    OUT_u = pid_output(p, d->z, u);
}}
"""
        return CModel(glue, c_sources=(PID_C_SOURCE,), api=("LAWS_API",), n_discrete=2,
                      state_names=("integral", "filter"))
