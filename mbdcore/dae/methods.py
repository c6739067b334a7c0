"""The one table of time-integration methods, ODE and DAE, by name (methods as data).

Every place that takes a method takes it by this name, under the keyword ``method``:
:func:`mbdcore.dae.simulate`, the arm block and its FMU, :class:`SystemBlock` and its FMU.

Two kinds:

* ``"ode"`` -- steppers of a first-order system y' = f(t, y)
  (:class:`mbdcore.integrators.Integrator`: ``start(t, y)``, ``step(fun, h)``,
  ``correct(y)``); a constrained system is integrated in its index-1 form with them.
* ``"dae"`` -- steppers of the constrained second-order equations in index-3 or
  stabilised index-2 (GGL) form (:class:`mbdcore.dae.index3.Index3Integrator`:
  ``step(problem, t, q, v, h)``).

A name means one thing: ``"gear"`` is this project's variable-step, variable-order BDF
(a port of the algorithm of scipy's ``BDF``, whose history carries from step to step),
``"scipy-bdf"`` is scipy's own ``BDF`` restarted over every step, ``"bdf1"``..``"bdf6"``
are fixed-step BDF of that order.  Options are checked by name: an option a method does
not take is refused with the list of those it does.
"""
from __future__ import annotations

import difflib
import inspect
from dataclasses import dataclass
from typing import Any, Callable

from mbdcore.dae.schemes import HHT, Bathe, GeneralizedAlpha, Newmark
from mbdcore.integrators.multistep import BDF, BDF_TABLE, GearIntegrator, ImprovedGear
from mbdcore.integrators.runge_kutta import RK4, Gill, GillTableau, Treanor
from mbdcore.integrators.scipy_ivp import ScipyAdaptive

__all__ = ["Method", "METHODS", "ODE_METHODS", "DAE_METHODS", "method_names", "method_info",
           "make_method"]

_NEWTON = ("tol", "max_iterations", "iteration", "theta_refresh", "geometric_stiffness",
           "constraint_form", "sparse", "max_halvings", "sparse_solver", "line_search")


@dataclass(frozen=True)
class Method:
    """One entry of the table.

    Attributes
    ----------
    name : str
        The name every caller uses.
    kind : {"ode", "dae"}
        Which protocol the stepper implements (module docstring).
    order : int
        Order of accuracy (the highest, for variable-order methods).
    fixed_step : bool
        True if one step is one step of the method; False for the adaptive solvers,
        which take internal steps of their own inside each requested step.
    description : str
        One line.
    factory : callable
        ``factory(**options)`` -> a new stepper.
    options : tuple of str
        Keyword options the method takes.
    defaults : dict
        Option values this table applies when the caller gives none.
    """

    name: str
    kind: str
    order: int
    fixed_step: bool
    description: str
    factory: Callable[..., Any]
    options: tuple = ()
    defaults: dict | None = None

    def make(self, **options):
        unknown = sorted(set(options) - set(self.options))
        if unknown:
            accepted = ", ".join(self.options) if self.options else "none"
            raise ValueError(f"method {self.name!r} takes no option(s) {unknown}; "
                             f"its options: {accepted}{_owners(unknown, self.name)}")
        return self.factory(**{**(self.defaults or {}), **options})


def _ode(name, order, description, factory, options=(), defaults=None, fixed_step=True):
    return Method(name, "ode", order, fixed_step, description, factory, tuple(options),
                  defaults)


def _owners(options, name: str) -> str:
    """'' or a note naming the methods that do take ``options`` (a hint at a method
    or formulation mix-up, e.g. rho_inf given to rk4)."""
    notes = []
    for o in options:
        takers = [m.name for m in METHODS.values() if o in m.options and m.name != name]
        if takers:
            notes.append(f"{o} is an option of {', '.join(takers[:6])}"
                         f"{', ...' if len(takers) > 6 else ''}")
    return f" ({'; '.join(notes)})" if notes else ""


#: the error control of the schemes with an embedded estimate (docs/step_control.md)
_ADAPTIVE = ("adaptive", "rtol", "atol", "h_min")


def _dae(name, order, description, factory, options):
    return Method(name, "dae", order, True, description, factory, tuple(options) + _NEWTON)


def _scipy(solver):
    return lambda **o: ScipyAdaptive(solver, **o)


_TOL = ("rtol", "atol")
# Newton tolerances of the fixed-step BDF inside a co-simulation step (as before the table)
_BDF_TOL = {"rtol": 1e-8, "atol": 1e-10}

_ENTRIES = (
    _ode("rk4", 4, "classical Runge-Kutta", RK4),
    _ode("gill", 4, "Runge-Kutta-Gill with Gill's round-off compensation", Gill),
    _ode("gill-tableau", 4, "Gill's coefficients as a plain tableau (no compensation)",
         GillTableau),
    _ode("treanor", 4, "Treanor's exponentially fitted Runge-Kutta (stiff decaying parts)",
         Treanor),
    *(_ode(f"bdf{k}", k, f"fixed-step BDF of order {k} (Radau IIA start, simplified Newton)",
           (lambda k=k, **o: BDF(k, **o)), _TOL + ("jac", "max_newton", "max_halvings"),
           _BDF_TOL)
      for k in BDF_TABLE),
    *(_ode(f"improved-gear{k}", k, f"Gear's improved BDF of order {k} (beta = 20)",
           (lambda k=k, **o: ImprovedGear(k, **o)),
           _TOL + ("beta", "jac", "max_newton", "max_halvings"),
           _BDF_TOL) for k in (2, 3)),
    _ode("gear", 5, "variable-step variable-order BDF (a port of scipy's BDF algorithm; "
         "history carried across steps)", GearIntegrator,
         _TOL + ("max_order", "max_step", "jac"), _BDF_TOL, fixed_step=False),
    _ode("rk45", 5, "scipy's RK45 (Dormand-Prince), restarted over each step",
         _scipy("RK45"), _TOL, fixed_step=False),
    _ode("dop853", 8, "scipy's DOP853, restarted over each step", _scipy("DOP853"), _TOL,
         fixed_step=False),
    _ode("radau", 5, "scipy's Radau IIA, restarted over each step", _scipy("Radau"), _TOL,
         fixed_step=False),
    _ode("scipy-bdf", 5, "scipy's variable-order BDF, restarted over each step",
         _scipy("BDF"), _TOL, fixed_step=False),
    _ode("lsoda", 12, "scipy's LSODA, restarted over each step", _scipy("LSODA"), _TOL,
         fixed_step=False),
    _dae("generalized-alpha", 2, "generalized-alpha (Chung-Hulbert, Arnold-Bruls form)",
         GeneralizedAlpha, ("rho_inf",) + _ADAPTIVE),
    _dae("hht", 2, "Hilber-Hughes-Taylor alpha method", HHT, ("alpha",) + _ADAPTIVE),
    _dae("newmark", 2, "Newmark's method (trapezoidal by default)", Newmark,
         ("beta", "gamma") + _ADAPTIVE),
    _dae("bathe", 2, "Bathe's two-sub-step composite method", Bathe, ("gamma",)),
    _dae("bathe-broyden", 2, "Bathe's method with Broyden updates of the iteration matrix",
         (lambda **o: Bathe(iteration="broyden", **o)),
         ("gamma",) + tuple(k for k in _NEWTON if k != "iteration")),
)

#: Every method by name.
METHODS: dict[str, Method] = {m.name: m for m in _ENTRIES}
#: Names of the ODE and of the DAE methods, in table order.
ODE_METHODS = tuple(m.name for m in _ENTRIES if m.kind == "ode")
DAE_METHODS = tuple(m.name for m in _ENTRIES if m.kind == "dae")


def method_names(kind: str | None = None) -> tuple:
    """Names of all methods, or of one kind ("ode" or "dae")."""
    if kind is None:
        return tuple(METHODS)
    if kind not in ("ode", "dae"):
        raise ValueError(f"kind {kind!r}: accepted values are 'ode', 'dae'")
    return ODE_METHODS if kind == "ode" else DAE_METHODS


def method_info(name: str) -> Method:
    """The table entry of ``name``; ValueError listing the accepted names if unknown."""
    key = str(name).lower().replace("_", "-")
    if key not in METHODS:
        close = difflib.get_close_matches(key, METHODS, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ValueError(f"method {name!r} is unknown{hint}; accepted: {', '.join(METHODS)}")
    return METHODS[key]


def make_method(name: str, **options):
    """A new stepper of the method ``name`` with ``options`` (checked by name)."""
    return method_info(name).make(**options)


def _check_table() -> None:
    # Every declared option must be a real keyword of its factory's class (catches a
    # table entry that drifts from the class it names).
    for m in _ENTRIES:
        target = m.factory
        if not inspect.isclass(target):
            continue
        params = set()
        for cls in target.__mro__:
            if "__init__" in vars(cls):
                params |= set(inspect.signature(cls.__init__).parameters)
        missing = [o for o in m.options if o not in params]
        if missing and "newton" not in params:
            raise AssertionError(f"method {m.name}: options {missing} are not parameters")


_check_table()
