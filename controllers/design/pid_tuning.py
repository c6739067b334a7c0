"""PID tuning to a bandwidth and a phase margin (:func:`tune_pid`), solved from the
plant's frequency response; the result (:class:`PIDTuning`) gives the gains, the
margins of the whole loop and the controller as a Block."""
from __future__ import annotations

import warnings
from dataclasses import dataclass

import control as ct
import numpy as np

from controllers.design.adapters import check_names, signal_labels
from controllers.design.errors import DesignError, DesignWarning
from controllers.design.margins import siso_margins
from controllers.design.realization import minimal_realization
from controllers.laws.pid import PIDController, pid_transfer_function

__all__ = ["PIDTuning", "tune_pid"]


@dataclass(repr=False)
class PIDTuning:
    """Result of :func:`tune_pid`.

    Attributes
    ----------
    params : dict
        The tuned gains, the keyword arguments of
        :class:`~controllers.laws.pid.PIDController`: ``kp`` [unit of u per unit of
        y], ``ki`` [1/s times that], ``kd`` [s times that], ``tf`` [s] (derivative
        filter time constant; 0 without a derivative term).
    transfer_function : control.TransferFunction
        The tuned controller ``C`` (continuous or discrete as the plant; input the
        error ``<output>_error`` = reference - output, output the plant input
        ``<input>``, by the channel's names): the linear form of :meth:`controller`.
    margins : dict
        The margins of ``C P`` over the whole loop (:func:`~controllers.design.margins.siso_margins`).
    plant : control.StateSpace or TransferFunction
        The channel tuned on (its minimal realization:
        :func:`~controllers.design.realization.minimal_realization`).
    loop : control.StateSpace
        ``C P``.
    """

    params: dict
    transfer_function: object
    margins: dict
    plant: object = None
    loop: object = None

    def controller(self, **parameters) -> PIDController:
        """The tuned controller as a Block: a :class:`~controllers.laws.pid.PIDController`
        with :attr:`params` (``parameters`` add or override others: limits, setpoint
        weights, anti-windup).  Unsaturated, with ``b = 1`` and ``c = 0`` and stepped at
        the plant's sample time (a continuous plant: at a step much shorter than
        ``tf`` and ``1 / bandwidth``), its linear form from the error is
        :attr:`transfer_function`."""
        return PIDController(**{**self.params, **parameters})

    def __repr__(self) -> str:
        gains = ", ".join(f"{k}={v:.4g}" for k, v in self.params.items())
        m = self.margins
        crossings = m.get("crossover_hz") or []
        where = (f" at {crossings[int(np.argmin(m['phase_margins_deg']))]:.3g} Hz"
                 if m.get("phase_margins_deg") else "")
        return (f"PIDTuning({gains}; phase margin {m['phase_margin_deg']:.1f} deg{where}, "
                f"gain margin {m['gain_margin_db']:.1f} dB, {len(crossings)} crossover(s))")


def tune_pid(plant, bandwidth_hz: float, phase_margin_deg: float, kind: str = "pid",
             integral_ratio: float = 10.0, filter_ratio: float = 10.0,
             input: str | None = None, output: str | None = None,
             names: tuple[str, str] | None = None, pm_tolerance_deg: float = 1.0) -> PIDTuning:
    """PID gains putting the gain crossover of ``L = C P`` at ``bandwidth_hz`` with
    ``phase_margin_deg``.

    At ``wc = 2 pi bandwidth_hz`` the controller must equal
    ``C(j wc) = exp(j (PM - 180 deg)) / P(j wc)``.  ``C = kp + ki I + kd D`` is linear in
    the gains once the filter ``tf = 1 / (filter_ratio wc)`` is fixed
    (``I = 1/s``, ``D = s / (tf s + 1)``, or their sampled forms of
    :class:`~controllers.laws.pid.PIDController` for a discrete plant), so the real and
    imaginary parts of that condition are two linear equations:

    * ``kind="pid"``: unknowns ``kp``, ``kd``, with the integral corner a factor
      ``integral_ratio`` below the crossover, ``ki = kp wc / integral_ratio``;
    * ``kind="pi"``: unknowns ``kp``, ``ki``; ``kind="pd"``: unknowns ``kp``, ``kd``.

    A state-space channel is first reduced to its minimal realization
    (:func:`minimal_realization`): modes the channel's input cannot move or its output
    cannot see (in one channel of the arm, the rigid mode of the other joint) would
    stay in the single loop whatever the gains, and are no part of it.

    Parameters
    ----------
    plant : control.StateSpace or TransferFunction
        SISO, or MIMO with ``input`` and ``output`` naming the channel.  Continuous
        or discrete; a discrete plant is tuned with the sampled PID law.
    bandwidth_hz : float
        Gain-crossover frequency [Hz].
    phase_margin_deg : float
        Phase margin [deg] at that crossover, in (0, 180).
    names : pair of str, optional
        (input, output) names of the controller; default
        ``("<output>_error", "<input>")`` with the channel's signal names, so that
        ``control.interconnect`` connects it to the plant's input and to a summing
        junction ``<output>_ref - <output>`` by name.
    pm_tolerance_deg : float
        A :class:`DesignWarning` is issued when the smallest phase margin over all the
        loop's gain crossovers differs from ``phase_margin_deg`` by more than this.

    Returns
    -------
    PIDTuning
        Gains and the margins of the whole loop (a flexible plant may cross 0 dB at
        other frequencies too: then the warning says where, and ``margins`` has every
        crossover).

    Raises
    ------
    DesignError
        The target needs a negative gain (more phase lead or lag than the chosen PID
        form can give at ``bandwidth_hz``), or the tuned loop is unstable.
    """

    if kind not in ("pid", "pi", "pd"):
        raise DesignError(f"kind = {kind!r}; accepted: 'pid', 'pi', 'pd'")
    if not (np.isfinite(bandwidth_hz) and bandwidth_hz > 0):
        raise DesignError(f"bandwidth_hz = {bandwidth_hz!r} must be a finite number > 0")
    if not 0 < phase_margin_deg < 180:
        raise DesignError(f"phase_margin_deg = {phase_margin_deg!r} must be in (0, 180)")
    plant = _channel(plant, input, output)
    c_in, c_out = names if names is not None else (f"{signal_labels(plant, 'output')[0]}_error",
                                                   signal_labels(plant, "input")[0])
    wc = 2 * np.pi * bandwidth_hz
    dt = plant.dt or None
    if dt and wc >= np.pi / dt:
        raise DesignError(f"bandwidth {bandwidth_hz:g} Hz is not below the Nyquist frequency "
                          f"{0.5 / dt:g} Hz of the plant's sample time {dt:g} s")
    tf = 1.0 / (filter_ratio * wc)
    gains = _gains_at_crossover(plant, kind, wc, phase_margin_deg, tf, integral_ratio)
    tf = tf if gains["kd"] else 0.0
    C = pid_transfer_function(gains["kp"], gains["ki"], gains["kd"], tf, dt,
                              name=f"pid {c_in} -> {c_out}")
    C = ct.tf(C, inputs=c_in, outputs=c_out, name=C.name)
    loop = ct.ss(ct.series(plant, C))
    poles = ct.feedback(loop, 1).poles()
    unstable = poles[np.abs(poles) >= 1 - 1e-9] if dt else poles[poles.real >= -1e-9]
    if len(unstable):
        raise DesignError(f"the tuned loop ({kind.upper()} crossing over at {bandwidth_hz:g} Hz) "
                          f"is unstable: closed-loop poles {', '.join(f'{p:.4g}' for p in unstable)}")
    margins = siso_margins(loop)
    if (margins["phase_margins_deg"]
            and abs(margins["phase_margin_deg"] - phase_margin_deg) > pm_tolerance_deg):
        k = int(np.argmin(margins["phase_margins_deg"]))
        warnings.warn(
            f"{kind.upper()} tuned for {phase_margin_deg:g} deg of phase margin at "
            f"{bandwidth_hz:g} Hz: the loop crosses 0 dB {len(margins['crossover_hz'])} times "
            f"(at {', '.join(f'{f:.3g}' for f in margins['crossover_hz'])} Hz) and its phase "
            f"margin is {margins['phase_margin_deg']:.1f} deg, at "
            f"{margins['crossover_hz'][k]:.3g} Hz", DesignWarning, stacklevel=2)
    return PIDTuning(params={**gains, "tf": float(tf)}, transfer_function=C, margins=margins,
                     plant=plant, loop=loop)


def _channel(plant, input: str | None, output: str | None):
    """The SISO channel ``input -> output`` of ``plant`` (the plant itself if SISO), a
    state-space one reduced to its minimal realization (:func:`tune_pid`)."""
    if plant.ninputs != 1 or plant.noutputs != 1:
        if input is None or output is None:
            raise DesignError(f"plant {plant.name!r} has {plant.ninputs} inputs and "
                              f"{plant.noutputs} outputs: name the channel with input= and "
                              "output=")
        check_names([input], signal_labels(plant, "input"), "input")
        check_names([output], signal_labels(plant, "output"), "output")
        plant = plant[signal_labels(plant, "output").index(output),
                      signal_labels(plant, "input").index(input)]
    return minimal_realization(plant) if isinstance(plant, ct.StateSpace) else plant


def _gains_at_crossover(plant, kind: str, wc: float, phase_margin_deg: float, tf: float,
                        integral_ratio: float) -> dict:
    """``kp``, ``ki``, ``kd`` with ``C(j wc) P(j wc) = exp(j (PM - 180 deg))``: the
    controller's response at ``wc`` is linear in the gains (``tf`` fixed), so the real
    and imaginary parts are two linear equations in the two free gains of ``kind``
    (:func:`tune_pid`).  DesignError if a gain comes out negative."""
    dt = plant.dt or None
    P = complex(np.squeeze(ct.frequency_response(plant, [wc]).complex))
    target = np.exp(1j * np.radians(phase_margin_deg - 180.0)) / P
    unit = {k: complex(np.squeeze(ct.frequency_response(
        pid_transfer_function(*g, tf, dt), [wc]).complex))
        for k, g in (("p", (1, 0, 0)), ("i", (0, 1, 0)), ("d", (0, 0, 1)))}
    if kind == "pid":
        cols = (("kp", unit["p"] + unit["i"] * wc / integral_ratio), ("kd", unit["d"]))
    elif kind == "pi":
        cols = (("kp", unit["p"]), ("ki", unit["i"]))
    else:
        cols = (("kp", unit["p"]), ("kd", unit["d"]))
    A = np.array([[c.real for _, c in cols], [c.imag for _, c in cols]])
    x = np.linalg.solve(A, [target.real, target.imag])
    gains = {"kp": 0.0, "ki": 0.0, "kd": 0.0, **dict(zip((n for n, _ in cols), x))}
    if kind == "pid":
        gains["ki"] = gains["kp"] * wc / integral_ratio
    negative = [n for n, v in gains.items() if v < 0]
    if negative:
        bandwidth_hz = wc / (2 * np.pi)
        raise DesignError(f"a {kind.upper()} cannot give {phase_margin_deg:g} deg of phase margin "
                          f"at {bandwidth_hz:g} Hz: the plant's phase there is "
                          f"{np.degrees(np.angle(P)):.1f} deg, the controller would need "
                          f"{np.degrees(np.angle(target)):+.1f} deg, and that takes negative "
                          f"{', '.join(negative)}")
    return {k: float(v) for k, v in gains.items()}
