"""The one result type: named time series with SI units.

A :class:`TimeSeries` holds one row per time point and one column per signal, the first
column being ``"time"`` [s]; every column has a unit (``""`` for a dimensionless one).
The engine's :func:`mbdcore.dae.simulate` and the co-simulation master return one
(subclasses add what is particular to them: coordinates and multipliers, accepted and
rejected steps); ``to_csv`` writes it so that it reads back bit for bit, and ``plot``
returns a matplotlib figure with units on every axis.
"""
from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

__all__ = ["TimeSeries", "rate_unit", "FORMULA_STARTS", "csv_header"]

#: First characters that make a spreadsheet take a text cell for a formula (OWASP, "CSV
#: Injection"): such a cell is written with an apostrophe before it
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def csv_header(names: Sequence[str]) -> str:
    """The header line of a results CSV (without its line end), the one way it is
    written (:meth:`TimeSeries.to_csv`, the co-simulation master's file written as the
    run goes): each name through the csv module, quoted where it holds a comma, a quote
    or a line break, so that the header has one cell per column whatever the names; a
    name a spreadsheet would take for a formula (starting with ``= + - @``, a tab or a
    carriage return: a component named ``=HYPERLINK(...)``) with an apostrophe before
    it, which a spreadsheet shows as text.  The numbers below need neither."""
    cells = ["'" + n if n.startswith(FORMULA_STARTS) else n for n in names]
    out = io.StringIO()
    # the line end given to the writer is what it quotes a cell for: both \r and \n
    csv.writer(out, lineterminator="\r\n").writerow(cells)
    return out.getvalue()[:-2]


def rate_unit(unit: str) -> str:
    """Unit of the time derivative of a quantity in ``unit``: "rad" -> "rad/s", "m" ->
    "m/s", "1" (dimensionless) -> "1/s"; "" (unknown) stays "".
    """
    return {"": "", "1": "1/s"}.get(unit, f"{unit}/s")


class TimeSeries:
    """Named time series with units (see the module docstring).

    Parameters
    ----------
    data : numpy structured array
        Float fields, the first named ``"time"`` [s]; one row per time point.
    units : mapping of str to str, optional
        Unit of each field in FMI notation (``"rad"``, ``"N.m"``); missing ones are
        dimensionless.
    """

    def __init__(self, data: np.ndarray, units: Mapping[str, str] | None = None):
        if data.dtype.names is None or data.dtype.names[0] != "time":
            raise ValueError("a TimeSeries needs a structured array whose first field is "
                             "'time'")
        self.data = data
        self.units = {"time": "s", **dict(units or {})}

    @classmethod
    def from_columns(cls, columns: Mapping[str, Sequence[float]],
                     units: Mapping[str, str] | None = None, **kwargs) -> "TimeSeries":
        """From ``{"time": ..., name: values, ...}`` (equal lengths)."""
        names = list(columns)
        if not names or names[0] != "time":
            raise ValueError("the first column must be 'time'")
        n = len(columns["time"])
        data = np.empty(n, dtype=[(name, np.float64) for name in names])
        for name in names:
            values = np.asarray(columns[name], dtype=float)
            if values.shape != (n,):
                raise ValueError(f"column {name!r} has shape {values.shape}, expected ({n},)")
            data[name] = values
        return cls(data, units, **kwargs)

    # -- access ------------------------------------------------------------------------
    @property
    def names(self) -> list[str]:
        """Column names, ``"time"`` first."""
        return list(self.data.dtype.names)

    @property
    def time(self) -> np.ndarray:
        """Time points [s]."""
        return self.data["time"]

    def unit(self, name: str) -> str:
        """Unit of a column (``""`` if dimensionless)."""
        self[name]
        return self.units.get(name, "")

    def __getitem__(self, name: str) -> np.ndarray:
        if name not in self.data.dtype.names:
            raise KeyError(f"no signal {name!r}; signals: {', '.join(self.data.dtype.names)}")
        return self.data[name]

    def __contains__(self, name: str) -> bool:
        return name in self.data.dtype.names

    def __len__(self) -> int:
        return len(self.data)

    def __repr__(self) -> str:
        t = self.time
        span = f"t = {t[0]:g} .. {t[-1]:g} s" if len(t) else "empty"
        return f"{type(self).__name__}({len(t)} rows, {span}, {len(self.names) - 1} signals)"

    def columns(self) -> dict[str, np.ndarray]:
        """``{name: values}`` of every column, ``"time"`` first."""
        return {name: self.data[name] for name in self.names}

    # -- output ------------------------------------------------------------------------
    def to_csv(self, path: str | Path) -> Path:
        """Write a CSV file: one header line with the column names (:func:`csv_header`),
        then the rows, with 17 significant digits so that the values read back bit for
        bit."""
        path = Path(path)
        np.savetxt(path, self.data.view(np.float64).reshape(len(self.data), -1),
                   delimiter=",", header=csv_header(self.names), comments="", fmt="%.17g")
        return path

    def default_signals(self) -> list[str]:
        """What :meth:`plot` draws when not told: every column but time."""
        return self.names[1:]

    def plot(self, path: str | Path | None = None,
             signals: Sequence[str] | None = None):
        """One subplot per signal against time, each axis labelled with its unit.

        Parameters
        ----------
        path : str or Path, optional
            Also write the figure there (PNG by the suffix; matplotlib's Agg canvas, no
            display needed, pyplot's global state untouched).
        signals : sequence of str, optional
            Column names; default :meth:`default_signals`.

        Returns
        -------
        matplotlib.figure.Figure
        """
        # matplotlib is imported when a figure is asked for, not with the result type:
        # models and FMUs that never plot do not pay for it.
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure

        signals = list(self.default_signals() if signals is None else signals)
        for s in signals:
            self[s]  # KeyError naming the bad signal before drawing anything
        n = max(len(signals), 1)
        fig = Figure(figsize=(8, 1.8 * n + 0.8))
        FigureCanvasAgg(fig)
        axes = fig.subplots(n, 1, sharex=True, squeeze=False)[:, 0]
        for ax, s in zip(axes, signals):
            ax.plot(self.time, self[s])
            ax.set_ylabel(f"{s} [{self.units.get(s) or '1'}]")
            ax.grid(True, alpha=0.3)
        axes[-1].set_xlabel("time [s]")
        fig.tight_layout()
        if path is not None:
            fig.savefig(Path(path), dpi=100)
        return fig
