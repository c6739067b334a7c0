"""Notch filter: a discrete biquad that removes one frequency (a structural mode) from a
signal and passes the rest.

The continuous prototype

    H(s) = (s^2 + 2 zeta_zero w0 s + w0^2) / (s^2 + 2 zeta_pole w0 s + w0^2)

has gain ``zeta_zero / zeta_pole`` at ``w0`` (0 for ``zeta_zero = 0``) and 1 at DC and at
high frequency; ``zeta_pole`` sets the width (the -3 dB band of the full notch is
``2 zeta_pole w0`` wide).  It is discretised with the bilinear transform prewarped at
``w0``, ``s = (w0 / tan(w0 dt / 2)) (z - 1) / (z + 1)``, which maps the notch to exactly
``frequency`` and keeps the gain 1 at DC and at the Nyquist frequency.
"""
from __future__ import annotations

import ctypes

import numpy as np

from controllers.laws.kernels import NOTCH_C_SOURCE, notch_law, notch_layout
from mbdcore.blocks import (
    Block,
    Parameter,
    ParameterError,
    Signal,
    StepError,
    VectorState,
)
from mbdcore.codegen import CModel

__all__ = ["notch_coefficients", "NotchFilter"]


def notch_coefficients(frequency: float, dt: float, zeta_zero: float = 0.0,
                       zeta_pole: float = 0.3):
    """Biquad coefficients ``(b0, b1, b2), (1, a1, a2)`` of the notch (module docstring),
    computed by the C law (``native/notch.c``, the code the block and its C FMU run).

    Parameters
    ----------
    frequency : float
        Notch frequency [Hz], below the Nyquist frequency ``1 / (2 dt)``.
    dt : float
        Sample time [s].
    zeta_zero, zeta_pole : float
        Damping ratios of the zeros (depth) and of the poles (width), 0 <= zeta_zero,
        0 < zeta_pole.
    """
    c = np.empty(5)
    msg = ctypes.create_string_buffer(256)
    table = notch_layout().pack(frequency=frequency, zeta_zero=zeta_zero, zeta_pole=zeta_pole,
                                dt=dt)
    if notch_law().notch_coefficients(table, c, msg, len(msg)):
        raise ParameterError(msg.value.decode())
    return c[:3].copy(), np.array([1.0, c[3], c[4]])


class NotchFilter(Block):
    """Discrete notch filter u -> y (module docstring), one biquad in transposed direct
    form II.  Must be stepped with its sample time ``dt``; the output depends directly
    on the input (``y[k] = b0 u[k] + s1[k]``).
    """

    INPUTS = (Signal("u", "", "signal in"),)
    OUTPUTS = (Signal("y", "", "filtered signal"),)
    PARAMETERS = (
        Parameter("frequency", 0.43, "Hz", "notch frequency", min=0.0, exclusive_min=True),
        Parameter("zeta_zero", 0.0, "", "damping ratio of the zeros (depth: 0 removes the "
                  "frequency entirely)", min=0.0),
        Parameter("zeta_pole", 0.3, "", "damping ratio of the poles (width)", min=0.0,
                  exclusive_min=True),
        Parameter("dt", 1e-3, "s", "sample time", min=0.0, exclusive_min=True),
    )
    FEEDTHROUGH = {"y": ("u",)}
    DEFAULT_STOP_TIME = 1.0
    DEFAULT_STEP_SIZE = 1e-3

    def __init__(self, **params):
        super().__init__(**params)
        p = self.params
        self.num, self.den = notch_coefficients(p["frequency"], p["dt"], p["zeta_zero"],
                                                p["zeta_pole"])
        self._coefficients = np.r_[self.num, self.den[1:]]
        self.reset()

    def reset(self, t0: float = 0.0) -> None:
        super().reset(t0)
        self.s = np.zeros(2)

    def outputs(self) -> dict:
        return {"y": notch_law().notch_output(self._coefficients, self.s, self.inputs["u"])}

    def do_step(self, t: float, h: float) -> None:
        dt = self.params["dt"]
        if abs(h - dt) > 1e-9 * dt:
            raise StepError(f"{type(self).__name__} is designed for steps of {dt!r} s; got "
                            f"a step of {h!r} s at t = {t!r} s")
        notch_law().notch_update(self._coefficients, self.s, self.inputs["u"])
        self.time = t + h

    def c_model(self) -> CModel:
        """The filter in C (``native/notch.c``, the code this block runs); every parameter
        stays settable (the coefficients are computed at initialisation)."""
        layout = notch_layout()
        params = layout.c_initializer(**{n: f"PAR_{n}" for n in layout.names})
        glue = f"""
int model_setup(ModelData *d, char *msg, size_t n) {{
    const double p[{len(layout.names)}] = {params};
""" + """    return notch_coefficients(p, d->w, msg, n);
}
void model_initial(ModelData *d) { Z(0) = 0.0; Z(1) = 0.0; }
void model_derivatives(const ModelData *d, const double *x, double *dx) { (void)d; (void)x; (void)dx; }
int model_validity(const ModelData *d, char *msg, size_t n) { (void)d; (void)msg; (void)n; return 0; }
void model_update(ModelData *d, double h) { (void)h; notch_update(d->w, d->z, IN_u); }
void model_outputs(ModelData *d) { OUT_y = notch_output(d->w, d->z, IN_u); }
"""
        return CModel(glue, c_sources=(NOTCH_C_SOURCE,), api=("LAWS_API",), n_discrete=2,
                      n_work=5, state_names=("s1", "s2"), sample_time="PAR_dt")

    def transfer_function(self, name: str = "notch"):
        """The filter as a discrete ``control.TransferFunction`` u -> y."""
        # imported here, not with the law: see controllers.laws.pid.pid_transfer_function
        import control as ct

        return ct.tf(self.num, self.den, self.params["dt"], inputs="u", outputs="y", name=name)

    def vector_state(self) -> VectorState:
        def set_s(block, x):
            block.s = np.array(x, dtype=float).reshape(2)
        return VectorState(["s1", "s2"], lambda b: b.s.copy(), set_s)

    def _get_internal(self):
        return {"s": self.s.copy()}

    def _set_internal(self, internal):
        self.s = np.array(internal["s"], dtype=float).reshape(2)
