"""The one result type: named time series with SI units.

A :class:`TimeSeries` holds one row per time point and one column per signal, the first
column being ``"time"`` [s]; every column has a unit (``""`` for a dimensionless one).
The engine's :func:`mbdcore.dae.simulate` and the co-simulation master return one
(subclasses add what is particular to them: coordinates and multipliers, accepted and
rejected steps).  What a user takes away from it, each with the columns chosen and
renamed the one way (:meth:`TimeSeries.select`): ``to_csv`` writes it so that it reads
back bit for bit, ``to_structured`` gives the structured numpy array fmpy's
``simulate_fmu`` returns (so ``fmpy.util.write_csv`` and the like take it), ``to_pandas``
a DataFrame, and ``plot`` a matplotlib figure with one axis per unit.  Units are written
for people by :func:`format_unit` (``"rad/s2"`` -> ``rad/s²``, ``"N.m"`` -> ``N·m``), the
one formatter of every axis label of the project (:func:`axis_label`).
"""
from __future__ import annotations

import csv
import difflib
import io
import re
from pathlib import Path
from typing import Callable, Mapping, Sequence

import numpy as np

__all__ = ["TimeSeries", "chosen_columns", "no_signal", "rate_unit", "FORMULA_STARTS", "csv_header", "CSV_NUMBER_FORMAT",
           "format_unit", "axis_label", "QUANTITIES"]

#: First characters that make a spreadsheet take a text cell for a formula (OWASP, "CSV
#: Injection"): such a cell is written with an apostrophe before it
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")

#: How a results CSV writes a number: 17 significant digits, enough for a float64 to
#: read back bit for bit (:meth:`TimeSeries.to_csv` and the co-simulation master's file
#: written as the run goes)
CSV_NUMBER_FORMAT = "%.17g"


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


def chosen_columns(names: Sequence[str],
                   columns: Sequence[str] | Mapping[str, str] | None = None, *,
                   prefix: bool = True,
                   short_name: Callable[[str], str] = lambda name: name) -> dict[str, str]:
    """The chosen columns of a table with columns ``names`` (``"time"`` first) and their
    new names, ``{name: new name}``, time first: the one rule by which columns are chosen
    and renamed (:meth:`TimeSeries.select` and everything that takes its ``columns`` and
    ``prefix``, and the co-simulation master's CSV written as the run goes, which knows
    its columns before it has a row).

    Parameters
    ----------
    columns : sequence of str, or mapping of str to str, optional
        The columns to keep, in this order: names (``["arm.q1", "arm.q2"]``) or names
        with new names (``{"arm.q1": "q1"}``; a new name ``None``: not renamed, as a name
        in a list); ``"time"`` is always kept, first, and keeps its name.  Default:
        every column.
    prefix : bool
        ``False``: the columns not renamed by a mapping lose their prefix
        (``short_name``: ``arm.q1`` -> ``q1`` in a co-simulation result).

    Raises
    ------
    KeyError
        A column that is not in the table (the message gives the closest names and
        lists all).
    TypeError
        ``columns`` a string, or a name that is not one.
    ValueError
        A column chosen twice, a new name that is empty, is ``"time"`` or is given to
        two columns -- two components' ``q1`` without their prefixes: the message names
        both and how to tell them apart.
    """
    names = list(names)
    if columns is None:
        renamed = {}
        chosen = names
    elif isinstance(columns, Mapping):
        renamed = {name: new for name, new in columns.items() if new is not None}
        chosen = list(columns)
    elif isinstance(columns, str):
        raise TypeError(f"columns must be a list of names or a mapping of names to new "
                        f"names, not the string {columns!r}")
    else:
        renamed = {}
        chosen = list(columns)
    for name in chosen:
        if not isinstance(name, str):
            raise TypeError(f"columns: {name!r} is not a column name (a str)")
        if name not in names:
            raise KeyError(no_signal(name, names))
    if len(set(chosen)) != len(chosen):
        twice = sorted({n for n in chosen if chosen.count(n) > 1})
        raise ValueError(f"columns: {', '.join(map(repr, twice))} chosen twice")
    if renamed.get("time", "time") != "time":
        raise ValueError(f"columns: the time column keeps its name 'time' (not "
                         f"{renamed['time']!r})")
    out = {"time": "time"}
    for name in chosen:
        if name == "time":
            continue
        new = renamed[name] if name in renamed else (name if prefix else short_name(name))
        if not isinstance(new, str) or not new or new == "time":
            raise ValueError(f"columns: {name!r} cannot be named {new!r}: a new name is "
                             f"a non-empty str other than 'time'")
        out[name] = new
    seen: dict[str, str] = {}
    for name, new in out.items():
        if new in seen:
            how = (" without their prefixes; keep prefix=True, choose the columns "
                   "(columns=[...]) or name them ({old: new, ...})"
                   if not prefix and new not in renamed.values() else "")
            raise ValueError(f"columns {seen[new]!r} and {name!r} would both be named "
                             f"{new!r}{how}")
        seen[new] = name
    return out


def no_signal(name: str, names: Sequence[str]) -> str:
    """The message for a column ``name`` that is not among ``names``: the closest of
    them, if any is close, then all of them."""
    close = [repr(c) for c in difflib.get_close_matches(name, names, n=3)]
    guess = (f"did you mean {' or '.join(filter(None, [', '.join(close[:-1]), close[-1]]))}? "
             if close else "")
    return f"no signal {name!r}; {guess}signals: {', '.join(names)}"


# -- units for people ------------------------------------------------------------------
#: Symbols written in ASCII in unit strings and how an SI axis writes them
_SYMBOLS = {"Ohm": "Ω", "ohm": "Ω", "deg": "°", "degC": "°C", "Nm": "N·m"}
#: Unit symbols that take a prefix ``u`` for micro (``"urad"`` -> ``µrad``)
_MICRO_TAKERS = {"m", "s", "g", "rad", "A", "V", "N", "W", "J", "Pa", "Hz", "F", "H", "C",
                 "T", "K", "L", "mol", "Wb", "S", "Ohm"}
_SUPERSCRIPTS = str.maketrans("0123456789-−", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻⁻")
# a symbol with its power (m2, m^2, m**2, s-1), a product sign (. * · or a space), or
# any other character, kept as it is (/, parentheses, a leading 1)
_UNIT_TOKEN = re.compile(r"(?P<symbol>[A-Za-zµΩ°%]+)(?:(?:\^|\*\*)?(?P<power>[-−]?\d+))?"
                         r"|(?P<product>\s*[.*·]\s*|\s+)|(?P<other>.)")


def format_unit(unit: str) -> str:
    """A unit string as an SI axis writes it: products with a middle dot, powers as
    superscripts, ``Ohm`` as Ω, ``deg`` as °, a ``u`` prefix as µ.

    Accepts FMI/Modelica notation (``"N.m"``, ``"rad/s2"``, ``"kg.m2"``), and what people
    type (``"N m"``, ``"N*m"``, ``"Nm"``, ``"m/s^2"``, ``"m**2"``, ``"s-1"``):
    ``"rad/s2"`` -> ``rad/s²``, ``"N.m.s/rad"`` -> ``N·m·s/rad``, ``"urad"`` -> ``µrad``.
    A string it does not recognise is returned as it is; ``""`` stays ``""``.  The one
    unit formatter of the project's figures (:func:`axis_label`).
    """
    text = re.sub(r"\s*/\s*", "/", str(unit).strip())
    out = []
    for m in _UNIT_TOKEN.finditer(text):
        if m.group("symbol") is not None:
            symbol = m.group("symbol")
            if symbol[0] == "u" and symbol[1:] in _MICRO_TAKERS:
                symbol = "µ" + _SYMBOLS.get(symbol[1:], symbol[1:])
            out.append(_SYMBOLS.get(symbol, symbol))
            if m.group("power") is not None:
                out.append(m.group("power").translate(_SUPERSCRIPTS))
        elif m.group("product") is not None:
            out.append("·")
        else:
            out.append(m.group("other"))
    return "".join(out)


#: The quantity an axis of several signals is named by, by its unit as
#: :func:`format_unit` writes it (an axis of one signal is named by the signal)
QUANTITIES = {"s": "time", "rad": "angle", "rad/s": "angular velocity",
              "rad/s²": "angular acceleration", "m": "position", "m/s": "velocity",
              "m/s²": "acceleration", "N": "force", "N·m": "torque", "A": "current",
              "V": "voltage", "W": "power", "J": "energy", "Hz": "frequency", "kg": "mass",
              "Pa": "pressure", "K": "temperature", "°": "angle", "1": "dimensionless"}


def axis_label(quantity: str, unit: str) -> str:
    """The label of a plot axis: ``"quantity [unit]"`` with the unit as
    :func:`format_unit` writes it, ``[1]`` for a dimensionless one (``""`` or ``"1"``):
    ``axis_label("joint torque", "N.m")`` -> ``"joint torque [N·m]"``."""
    return f"{quantity} [{format_unit(unit) or '1'}]"


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
            raise KeyError(no_signal(name, self.data.dtype.names))
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

    # -- chosen columns ----------------------------------------------------------------
    def short_name(self, name: str) -> str:
        """The name of a column without what the ``prefix=False`` of :meth:`select`
        drops: here nothing (a subclass whose columns carry a prefix -- the co-simulation
        master's ``component.variable`` -- says which)."""
        return name

    def column_names(self, columns: Sequence[str] | Mapping[str, str] | None = None, *,
                     prefix: bool = True) -> dict[str, str]:
        """The chosen columns and their new names, ``{name: new name}``, time first:
        :func:`chosen_columns` over this series' columns, ``prefix=False`` dropping what
        :meth:`short_name` drops."""
        return chosen_columns(self.names, columns, prefix=prefix, short_name=self.short_name)

    def select(self, columns: Sequence[str] | Mapping[str, str] | None = None, *,
               prefix: bool = True) -> "TimeSeries":
        """A new :class:`TimeSeries` of the chosen columns under their new names, units
        kept, every field float64 (a copy: changing it leaves this one as it is).  The one
        way columns are chosen and renamed: :meth:`to_csv`, :meth:`to_structured`,
        :meth:`to_pandas` and :meth:`plot` take the same ``columns`` and ``prefix``
        (:meth:`column_names`)."""
        names = self.column_names(columns, prefix=prefix)
        data = np.empty(len(self.data), dtype=[(new, np.float64) for new in names.values()])
        for name, new in names.items():
            data[new] = self.data[name]
        return TimeSeries(data, {new: self.units.get(name, "") for name, new in names.items()})

    # -- output ------------------------------------------------------------------------
    def to_csv(self, path: str | Path,
               columns: Sequence[str] | Mapping[str, str] | None = None, *,
               prefix: bool = True) -> Path:
        """Write a CSV file: one header line with the column names (:func:`csv_header`),
        then the rows, with 17 significant digits so that the values read back bit for
        bit.  ``columns`` and ``prefix`` choose and rename the columns as in
        :meth:`column_names` (``columns={"arm.q1": "q1"}``, ``prefix=False``); by default
        every column under its own name, the same file as the co-simulation master's
        written as the run goes."""
        path = Path(path)
        table = self.select(columns, prefix=prefix)
        np.savetxt(path, table.data.view(np.float64).reshape(len(table.data), -1),
                   delimiter=",", header=csv_header(table.names), comments="",
                   fmt=CSV_NUMBER_FORMAT)
        return path

    def to_structured(self, columns: Sequence[str] | Mapping[str, str] | None = None, *,
                      prefix: bool = True) -> np.ndarray:
        """The series as the structured numpy array fmpy's ``simulate_fmu`` returns: a
        ``time`` field [s] first, then one float64 field per signal, one row per time
        point; so fmpy's post-processing (``fmpy.util.write_csv``, ``validate_result``,
        ``plot_result``) takes it as it takes its own results.  A copy; the units are in
        :attr:`units` (under the new names: ``select(...).units``).  ``columns`` and
        ``prefix`` as in :meth:`column_names`."""
        return self.select(columns, prefix=prefix).data

    def to_pandas(self, columns: Sequence[str] | Mapping[str, str] | None = None, *,
                  prefix: bool = True):
        """The series as a pandas DataFrame: indexed by time [s] (an index named
        ``"time"``), one float64 column per signal, the units as ``df.attrs["units"]``
        (``{name: unit}``, time's included).  ``columns`` and ``prefix`` as in
        :meth:`column_names`.

        Raises
        ------
        ImportError
            pandas is not installed (``pip install pandas``).
        """
        # pandas is optional, not a dependency of the project: imported by the one method
        # that needs it, so the result type works without it
        try:
            import pandas
        except ImportError:
            raise ImportError("TimeSeries.to_pandas needs pandas, which flexcosim does not "
                              "install: pip install pandas (or use to_structured(), a "
                              "numpy structured array)") from None
        table = self.select(columns, prefix=prefix)
        frame = pandas.DataFrame({name: table.data[name] for name in table.names[1:]},
                                 index=pandas.Index(table.time, name="time"))
        frame.attrs["units"] = dict(table.units)
        return frame

    def default_signals(self) -> list[str]:
        """What :meth:`plot` draws when not told: every column but time."""
        return self.names[1:]

    def plot(self, path: str | Path | None = None,
             signals: Sequence[str] | Mapping[str, str] | None = None, *,
             prefix: bool = True, max_axes: int | None = None, figure=None):
        """The signals against time, one axis per unit, a legend entry per signal.

        Signals of one unit (as :func:`format_unit` writes it: ``"N.m"`` and ``"N m"``
        are one) share an axis, in the order their units first appear; the axis is
        labelled by its signal when it has one (``q1 [rad]``), else by the quantity
        (:data:`QUANTITIES`: ``angular velocity [rad/s]``) or the signals' names, with
        the unit always (:func:`axis_label`); a dimensionless signal is ``[1]``.

        Parameters
        ----------
        path : str or Path, optional
            Also write the figure there (PNG by the suffix; matplotlib's Agg canvas, no
            display needed, pyplot's global state untouched).
        signals : sequence of str, or mapping of str to str, optional
            The signals to draw, or ``{signal: legend name}``; default
            :meth:`default_signals`.  ``prefix=False`` drops the component prefixes of the
            legend names, as :meth:`column_names`.
        max_axes : int, optional
            At most this many axes (units): more is refused with the units listed, so
            that a figure never drops a signal unsaid.  Default: as many as there are.
        figure : matplotlib Figure or SubFigure, optional
            Draw into it (``fig.subfigures(...)`` beside other panels) instead of a new
            figure; ``path`` then writes the figure it belongs to.

        Returns
        -------
        matplotlib.figure.Figure (or the given ``figure``)

        Raises
        ------
        KeyError, ValueError
            A signal that is not in the series; ``max_axes`` not a positive integer, or
            fewer than the units drawn.
        """
        if max_axes is not None and (isinstance(max_axes, bool) or not isinstance(
                max_axes, (int, np.integer)) or max_axes < 1):
            raise ValueError(f"max_axes must be an integer >= 1 or None, not {max_axes!r}")
        table = self.select(self.default_signals() if signals is None else signals,
                            prefix=prefix)
        groups: dict[str, list[str]] = {}
        for name in table.names[1:]:
            groups.setdefault(format_unit(table.units.get(name, "")) or "1", []).append(name)
        if max_axes is not None and len(groups) > max_axes:
            raise ValueError(f"the signals have {len(groups)} units ({', '.join(groups)}), "
                             f"more than max_axes={max_axes}: choose signals=[...] or allow "
                             f"more axes")
        # matplotlib is imported when a figure is asked for, not with the result type:
        # models and FMUs that never plot do not pay for it.
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure

        n = max(len(groups), 1)
        fig = figure
        if fig is None:
            fig = Figure(figsize=(8, 2.2 * n + 0.8))
            FigureCanvasAgg(fig)
        axes = fig.subplots(n, 1, sharex=True, squeeze=False)[:, 0]
        for ax, (unit, names) in zip(axes, groups.items()):
            for name in names:
                ax.plot(table.time, table[name], label=name)
            ax.set_ylabel(axis_label(self._axis_quantity(names, unit), unit))
            ax.legend(fontsize=8, ncol=1 + (len(names) - 1) // 6)
            ax.grid(True, alpha=0.3)
        axes[-1].set_xlabel(axis_label("time", "s"))
        if figure is None:
            fig.tight_layout()
        if path is not None:
            fig.figure.savefig(Path(path), dpi=100)
        return fig

    @staticmethod
    def _axis_quantity(names: Sequence[str], unit: str) -> str:
        """What an axis of :meth:`plot` is labelled by, before its unit."""
        if len(names) == 1:
            return names[0]
        if unit in QUANTITIES:
            return QUANTITIES[unit]
        joined = ", ".join(names)
        return joined if len(joined) <= 40 else joined[:39] + "…"
