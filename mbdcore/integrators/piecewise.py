"""Input signals a C stepping loop can sample: piecewise polynomials of time.

A schedule of inputs given as a Python function ``u(t)`` costs a Python call per step
of a run; given as a :class:`PiecewiseInput` (breakpoints and per-piece polynomial
coefficients, as scipy's ``PPoly``) it is a table of numbers that the C loop of a
compiled kernel evaluates itself (``fs_piecewise_sample`` and ``fs_run`` in
``native/fixed_step.h``; :meth:`~mbdcore.integrators.runge_kutta.CSteppedKernel.run`),
so a whole run is one C call.  Constants, steps, ramps, bang-bang torques, sampled
tables with zero-order or linear hold and the quintic trajectories are such schedules.

Piece p holds from ``knots[p]`` (included) to ``knots[p + 1]`` (excluded), the last one
for ever; its signal s is ``sum_j coefficients[p, s, j] (t - knots[p])**j``.  Before the
first knot every signal keeps its value there.  So a switch written ``t < t_b`` in a
function is a knot at t_b.  Calling the object evaluates it in Python with the C loop's
operations in the C loop's order (Horner's rule from the highest power, no fused
multiply-add): the same bits, the reference the compiled loop is tested against.
"""
from __future__ import annotations

import bisect

import numpy as np

from mbdcore.blocks import ParameterError

__all__ = ["PiecewiseInput", "MAX_SIGNALS", "HOLDS", "piecewise_form"]

#: Signals one table may carry (``FS_PW_MAX_SIGNALS`` in ``native/fixed_step.h``: the C
#: loop keeps the sampled values on its stack).
MAX_SIGNALS = 16
#: Most coefficients per piece the C side accepts (degree 63).
_MAX_COEFFICIENTS = 64
#: How :meth:`PiecewiseInput.table` holds a sample until the next.
HOLDS = ("zero-order", "linear")


class PiecewiseInput:
    """Input signals ``u(t)``, piecewise polynomial in time (module docstring).

    Parameters
    ----------
    knots : array_like, shape (P,)
        Start times of the pieces [s], finite and strictly increasing.
    coefficients : array_like, shape (P, S, C)
        ``coefficients[p, s, j]``: the coefficient of ``(t - knots[p])**j`` of signal s
        in piece p [its unit / s^j], finite.  A shape (P, S) means constant pieces.
    names : sequence of str, optional
        The signals' names (default ``u0``, ``u1``, ...).
    units : sequence of str, optional
        Their units (default ``""``); for the caller's checks and the reader.

    Calling it, ``u(t)`` returns the S values at t [s] as a tuple of floats, so it
    stands wherever a schedule function ``u(t) -> tuple`` is taken.  ``breakpoints``
    (``knots[1:]``) are the times where a piece begins, for
    :func:`mbdcore.dae.simulate`'s declared jumps.
    """

    def __init__(self, knots, coefficients, names=None, units=None):
        knots = np.array(knots, dtype=float, ndmin=1)
        if knots.ndim != 1 or knots.size < 1:
            raise ParameterError(f"knots of shape {knots.shape}: accepted a 1-D sequence of "
                                 "at least one time [s]")
        if not np.all(np.isfinite(knots)):
            raise ParameterError(f"knots {knots.tolist()} [s] must be finite")
        if knots.size > 1 and not np.all(np.diff(knots) > 0):
            bad = int(np.argmin(np.diff(knots) > 0))
            raise ParameterError(f"knots must be strictly increasing: knots[{bad}] = "
                                 f"{knots[bad]!r} s, knots[{bad + 1}] = {knots[bad + 1]!r} s")
        coefficients = np.array(coefficients, dtype=float)
        if coefficients.ndim == 2:
            coefficients = coefficients[:, :, None]
        if coefficients.ndim != 3 or coefficients.shape[0] != knots.size:
            raise ParameterError(
                f"coefficients of shape {coefficients.shape}: accepted (P, S, C) or (P, S) "
                f"with P = {knots.size}, one row per knot")
        n_pieces, n_signals, n_coef = coefficients.shape
        if not 1 <= n_signals <= MAX_SIGNALS:
            raise ParameterError(f"coefficients for {n_signals} signals: accepted 1 to "
                                 f"{MAX_SIGNALS}")
        if not 1 <= n_coef <= _MAX_COEFFICIENTS:
            raise ParameterError(f"coefficients with {n_coef} per piece: accepted 1 to "
                                 f"{_MAX_COEFFICIENTS} (degree 0 to {_MAX_COEFFICIENTS - 1})")
        if not np.all(np.isfinite(coefficients)):
            p, s, j = np.argwhere(~np.isfinite(coefficients))[0]
            raise ParameterError(f"coefficients[{p}, {s}, {j}] = {coefficients[p, s, j]!r} "
                                 "must be finite")
        self.names = tuple(f"u{s}" for s in range(n_signals)) if names is None else tuple(names)
        self.units = ("",) * n_signals if units is None else tuple(units)
        for field, value in (("names", self.names), ("units", self.units)):
            if len(value) != n_signals or not all(isinstance(v, str) for v in value):
                raise ParameterError(f"{field} {value!r}: accepted {n_signals} strings, one "
                                     "per signal")
        self.knots, self.coefficients = knots, coefficients
        #: The flat table the C loop reads (``native/fixed_step.h``: S, P, C, knots,
        #: coefficients).
        self.table = np.concatenate([[n_signals, n_pieces, n_coef], knots,
                                     coefficients.ravel()])
        self._knots = knots.tolist()
        self._pieces = [[list(c) for c in piece] for piece in coefficients.tolist()]

    # -- the common schedules ------------------------------------------------------------
    @classmethod
    def constant_pieces(cls, knots, values, names=None, units=None) -> "PiecewiseInput":
        """Values held from each knot [s] to the next: ``values`` of shape (P, S) (a
        bang-bang torque, steps)."""
        return cls(knots, np.asarray(values, dtype=float), names, units)

    @classmethod
    def sampled(cls, times, values, hold: str = "zero-order", names=None,
              units=None) -> "PiecewiseInput":
        """Samples ``values`` (shape (N, S), or (N,) for one signal) at ``times`` [s]
        held by ``hold``: ``"zero-order"`` (each sample until the next) or ``"linear"``
        (straight lines between samples, the last sample after the last time; as
        ``numpy.interp``)."""
        if hold not in HOLDS:
            raise ParameterError(f"hold {hold!r}: accepted {', '.join(map(repr, HOLDS))}")
        values = np.asarray(values, dtype=float)
        if values.ndim == 1:
            values = values[:, None]
        times = np.asarray(times, dtype=float)
        if values.ndim != 2 or values.shape[0] != times.size:
            raise ParameterError(f"values of shape {values.shape}: accepted (N,) or (N, S) "
                                 f"with N = {times.size} samples, one per time")
        if hold == "zero-order" or times.size == 1:
            return cls(times, values, names, units)
        slopes = np.diff(values, axis=0) / np.diff(times)[:, None]
        slopes = np.vstack([slopes, np.zeros((1, values.shape[1]))])
        return cls(times, np.stack([values, slopes], axis=2), names, units)

    # -- what it is ----------------------------------------------------------------------
    @property
    def n_signals(self) -> int:
        """The number of signals S."""
        return self.coefficients.shape[1]

    @property
    def breakpoints(self) -> tuple:
        """The times [s] where a piece begins after the first (where the signals may
        jump; :func:`mbdcore.dae.simulate` makes them step boundaries)."""
        return tuple(self._knots[1:])

    def piece(self, t: float) -> int:
        """The piece that holds at t [s] (0 before the first knot)."""
        return max(bisect.bisect_right(self._knots, t) - 1, 0)

    def __call__(self, t: float) -> tuple:
        """The signals at t [s] (``fs_piecewise_sample``'s operations, in Python)."""
        p = self.piece(t)
        tau = t - self._knots[p]
        if tau < 0.0:
            tau = 0.0
        values = []
        for c in self._pieces[p]:
            v = c[-1]
            for j in range(len(c) - 2, -1, -1):
                v = v * tau + c[j]
            values.append(float(v))
        return tuple(values)

    def __repr__(self) -> str:
        return (f"PiecewiseInput({len(self._knots)} pieces from {self._knots[0]!r} s, "
                f"signals {list(self.names)}, degree {self.coefficients.shape[2] - 1})")


def piecewise_form(schedule) -> PiecewiseInput | None:
    """The exact piecewise form of an input schedule: the schedule itself if it is a
    :class:`PiecewiseInput`, else its ``piecewise`` attribute (a function that is exactly
    piecewise polynomial declares its table there, as
    :func:`mbdcore.models.manipulator.bang_bang_torque` does), else None."""
    if isinstance(schedule, PiecewiseInput):
        return schedule
    form = getattr(schedule, "piecewise", None)
    return form if isinstance(form, PiecewiseInput) else None
