"""Figures of linear loops into PNG files: Bode plots with the margins marked
(:func:`plot_bode`) and step responses (:func:`plot_step`); each returns the
matplotlib Figure, with ``.path`` the file.  matplotlib is imported when a figure is
drawn, not with the design tools.
"""
from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Mapping

import control as ct
import numpy as np

from controllers.design.adapters import signal_labels
from controllers.design.margins import principal_phase, resonance_grid, siso_margins

__all__ = ["plot_bode", "plot_step"]


@functools.cache
def _saved_figure_class():
    # matplotlib is imported when a figure is asked for, not with the design tools
    from matplotlib.figure import Figure

    class SavedFigure(Figure):
        """A matplotlib Figure written to a file: ``path`` is that file, and the figure
        is path-like (``os.fspath(fig)``, ``Path(fig)``, ``open(fig, "rb")`` give the
        file), so callers that used the path the plot functions returned keep working."""

        def __fspath__(self) -> str:
            return os.fspath(self.path)

    return SavedFigure


def _figure(rows: int, size=(8, 6)):
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    fig = _saved_figure_class()(figsize=size)
    FigureCanvasAgg(fig)
    return fig, fig.subplots(rows, 1, sharex=True, squeeze=False)[:, 0]


def _save(fig, path):
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    fig.path = Path(path)
    return fig


def _unit(name: str, units: Mapping[str, str] | None) -> str:
    unit = (units or {}).get(name)
    return f"{name} [{unit}]" if unit else f"{name} [unit of {name}]"


def plot_bode(loops: Mapping[str, object], path, hz=(0.05, 100.0)):
    """Bode magnitude [dB] and phase [deg] of SISO loops ``{label: system}`` against
    frequency [Hz] into a PNG file, with the margins of each loop marked: gain
    crossovers (circles, phase margin at the lowest-margin one in the legend) and
    phase crossovers (squares, gain margin).  The phase is unwrapped and starts in
    (-270, 90] deg (:func:`principal_phase`).

    Returns
    -------
    matplotlib.figure.Figure
        The figure, with ``.path`` the PNG file; it is path-like (``os.fspath`` gives
        that file), so code that used the path returned before keeps working.
    """
    fig, ax = _figure(2)
    f_all = np.logspace(np.log10(hz[0]), np.log10(hz[1]), 4000)
    for k, (label, sys) in enumerate(loops.items()):
        color = f"C{k % 10}"
        f = f_all[f_all < 0.5 / sys.dt] if sys.dt else f_all
        f = resonance_grid(sys, 2 * np.pi * f) / (2 * np.pi)    # draw the resonance peaks
        g = np.squeeze(ct.frequency_response(sys, 2 * np.pi * f).complex)
        mag, ph = 20 * np.log10(np.abs(g)), principal_phase(g)
        m = siso_margins(sys)                   # default grid, refined at resonances
        pm_text = (f", PM {m['phase_margin_deg']:.1f} deg" if m["phase_margins_deg"] else "")
        gm_text = (f", GM {m['gain_margin_db']:.1f} dB" if np.isfinite(m["gain_margin_db"])
                   else "")
        ax[0].semilogx(f, mag, color, label=label + pm_text + gm_text)
        ax[1].semilogx(f, ph, color, label=label)
        for fc, pm in zip(m["crossover_hz"], m["phase_margins_deg"]):
            if not f[0] <= fc <= f[-1]:
                continue
            # the loop's phase at the crossover, on the branch of the curve drawn there
            # (a resonance's crossing is narrower than the plot's grid), and the bar
            # from it to the nearest odd multiple of 180 deg: its length is the margin
            p_at = np.degrees(np.angle(complex(np.squeeze(
                ct.frequency_response(sys, [2 * np.pi * fc]).complex))))
            p_at += 360.0 * np.round((np.interp(np.log(fc), np.log(f), ph) - p_at) / 360.0)
            critical = 180.0 * (2.0 * np.round((p_at - 180.0) / 360.0) + 1.0)
            ax[0].plot(fc, 0.0, "o", color=color, mfc="none")
            ax[1].plot(fc, p_at, "o", color=color, mfc="none")
            ax[1].vlines(fc, min(p_at, critical), max(p_at, critical), color=color, lw=0.8)
        # phase crossovers: where the unwrapped phase passes an odd multiple of 180 deg
        odd = np.floor((ph + 180.0) / 360.0)
        for i in np.nonzero(np.diff(odd))[0]:
            ax[0].plot(f[i], mag[i], "s", color=color, mfc="none")
            ax[0].vlines(f[i], min(mag[i], 0.0), max(mag[i], 0.0), color=color, lw=0.8)
    ax[0].axhline(0, color="k", lw=0.5)
    ax[1].axhline(-180, color="k", lw=0.5)
    ax[0].set_ylabel("|L| [dB]")
    ax[1].set_ylabel("phase [deg]")
    ax[1].set_xlabel("frequency [Hz]")
    for a in ax:
        a.grid(True, which="both", alpha=0.3)
        a.legend(fontsize=7)
    ax[0].set_title("loop gain; o gain crossover (bar: phase margin), "
                    "[] phase crossover (bar: gain margin)", fontsize=8)
    return _save(fig, path)


def plot_step(sys, path, t_end: float = 3.0, title: str = "",
              units: Mapping[str, str] | None = None):
    """Step responses of every input-output pair of a linear system into a PNG file:
    output [its unit] against time [s] for a unit step [unit of the input] of each input.

    ``units`` maps signal names to units (the arm's:
    :data:`controllers.design.arm_lqg.ARM_SIGNAL_UNITS`); a signal without one is
    labelled ``[unit of <name>]``.
    Returns the matplotlib Figure, with ``.path`` the PNG file (path-like, as
    :func:`plot_bode`'s).
    """
    resp = ct.step_response(sys, np.linspace(0, t_end, 1500) if not sys.dt
                            else np.arange(0, t_end, sys.dt))
    fig, ax = _figure(sys.noutputs, size=(8, 2 + 1.6 * sys.noutputs))
    y = np.asarray(resp.outputs).reshape(sys.noutputs, sys.ninputs, -1)
    for i in range(sys.noutputs):
        for j in range(sys.ninputs):
            ax[i].plot(resp.time, y[i, j], label=f"unit step of {_unit(signal_labels(sys, 'input')[j], units)}")
        ax[i].set_ylabel(_unit(signal_labels(sys, "output")[i], units), fontsize=8)
        ax[i].grid(True, alpha=0.3)
        ax[i].legend(fontsize=7)
    ax[-1].set_xlabel("time [s]")
    fig.suptitle(title or f"step responses of {sys.name}")
    return _save(fig, path)
