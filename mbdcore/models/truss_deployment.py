"""A deployment of the ring truss by its motors, as one call (issue 24 item 3;
docs/ring_truss.md, "Deployment runs").

:func:`deploy_truss` builds the geared truss folded at ``folded_angle`` (optionally with
its cable net, :func:`~mbdcore.models.cable_net.add_cable_net`), runs the diagonal motors
under the deployment-rate PI controller
(:class:`~mbdcore.models.ring_truss.DeploymentRateController`) with generalized-alpha on
the sparse path, and returns a :class:`TrussDeployment`: the run, the latch time of every
bay, the spread of the bay angles (an asynchronous deployment, as ground tests of such
antennas show), motor currents, cable tensions, the simulated time, the step and the
wall time.  A run that fails part-way (a Newton failure, a diverging state) still
returns what it reached, with the failure named (:attr:`TrussDeployment.failure`): a
long deployment loses nothing.

:func:`deployment_case` is the same run from a case of plain numbers, returning plain
numbers: a sweep of deployment scenarios runs it in parallel
(:func:`mbdcore.sweep.sweep`, over local processes or a Dask cluster).
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np

from mbdcore.blocks import ParameterError
from mbdcore.dae.simulate import SimulationResult, simulate
from mbdcore.integrators.base import IntegrationError
from mbdcore.models.cable_net import CableNet, add_cable_net
from mbdcore.models.ring_truss import DeploymentRateController, RingTruss, ring_truss
from mbdcore.multibody.energy import EnergyBalance, energy_balance
from mbdcore.timeseries import TimeSeries

__all__ = ["DEPLOYMENT_DEFAULTS", "NET_STEP_CONTROL", "NET_DEPLOYMENT", "TrussDeployment",
           "deploy_truss", "deployment_case"]

#: The run's settings that are not the truss's parameters: the controller's set-point
#: [m/s] and gains [V s/m, V/m], the step [s] and generalized-alpha's rho_inf.  The
#: gains and the step are those of the example that deploys six bays from 1.0 rad in
#: about 5 s (docs/ring_truss.md).
DEPLOYMENT_DEFAULTS = {"rate": 0.05, "kp": 2000.0, "ki": 2.0e4, "voltage_limit": 48.0,
                       "h": 0.02, "rho_inf": 0.6}

#: With a net, the integrator's steps are error-controlled (docs/step_control.md): the
#: light Kevlar cords snapping taut need steps down to 2e-5 s where they do and 3 ms
#: where they do not; ``h`` is then the output grid and the controller's sampling, and
#: every step is recorded (``record_steps``), so the energy balance runs over the steps.
#: The index-3 form: the GGL form's velocity rows double the Newton matrix's multipliers
#: and fill its LU through G G^T; on the 4-bay truss with its net the same steps and
#: iterations, the same tensions and energy balance, at 2.6 times less CPU time.  The
#: 4-bay truss with its one-ring net of damped cords (NET_DEPLOYMENT's) deploys from
#: 1.0 rad to latched so (docs/ring_truss.md, "Deployment runs").
NET_STEP_CONTROL = {"adaptive": True, "rtol": 1e-3, "atol": 1e-5,
                    "constraint_form": "index3"}
#: The net a deployment hangs on the truss unless told otherwise: the Kevlar cord with a
#: Kelvin-Voigt damping time of 1 ms (the default 0 leaves the snap undamped), one
#: element per cable
NET_DEPLOYMENT = {"net_rings": 1, "cable_elements": 1, "cable_damping": 1e-3}


@dataclass
class TrussDeployment:
    """What a deployment run reached.

    Attributes
    ----------
    truss : RingTruss
    net : CableNet or None
    result : SimulationResult
        The recorded steps (up to the failure, if any): with a net every step the
        integrator took (``record_steps``), the output grid's points among them.
    stop : float        the simulated time asked for [s]
    h : float           the step [s]
    wall_time : float   the run's wall-clock time [s]
    latch_times : list  the time [s] at which each bay latched, None for a bay that did not
    failure : str or None
        ``Type: message`` of the error that ended the run early; None if it ran to ``stop``.
    held : list
        ``(t, inputs, discrete_state)`` at every step: the motor voltages the controller
        set and the latches' states, in effect until the next (for the energy balance).
    """
    truss: RingTruss
    net: CableNet | None
    result: SimulationResult
    stop: float
    h: float
    wall_time: float
    latch_times: list = field(default_factory=list)
    failure: str | None = None
    held: list = field(default_factory=list)

    @property
    def n_bays(self) -> int:
        return self.truss.n_bays

    @property
    def end_time(self) -> float:
        """The last recorded time [s]."""
        return float(self.result.t[-1])

    @property
    def latched(self) -> int:
        """How many bays have latched."""
        return sum(t is not None for t in self.latch_times)

    def bay_angle_spread(self) -> float:
        """The largest difference between two bays' angles over the run [rad]."""
        angles = np.array([self.truss.bay_angles(q) for q in self.result.q])
        return float((angles.max(axis=1) - angles.min(axis=1)).max())

    def peak_motor_current(self) -> float:
        """The largest |current| of any motor over the run [A]."""
        return float(max(np.abs(self.truss.motor_currents(v)).max() for v in self.result.v))

    def peak_cable_tension(self) -> float | None:
        """The largest cable tension over the run [N]; None without a net."""
        if self.net is None:
            return None
        return float(max(self.net.tensions(q).max() for q in self.result.q))

    def energy_balance(self) -> EnergyBalance:
        """Where the motors' energy went (:func:`mbdcore.multibody.energy.energy_balance`
        over the run, with the voltages and latch states held over each step)."""
        r = self.result
        return energy_balance(self.truss.system, r.t, r.q, r.v, self.held)

    def supplies(self) -> list[str]:
        """The names of the motors' supply voltages (the energy's sources)."""
        return [f.name for f in self.truss.system.forces_list if f.kind == "motor_voltage"]

    def motor_work(self, balance: EnergyBalance | None = None) -> float:
        """The electrical energy the motors took from their supplies [J] (sum of V i dt)."""
        balance = self.energy_balance() if balance is None else balance
        return float(sum(balance.work[n][-1] for n in self.supplies()))

    def steps_recorded(self) -> bool:
        """Whether the rows are the steps the integrator took (fixed steps on the grid,
        or error-controlled ones recorded with ``record_steps``): what the energy
        balance's trapezoid needs."""
        taken = int(self.result.stats.get("accepted_steps", 0))
        return taken <= len(self.result.t) - 1

    def energy_residual(self, balance: EnergyBalance | None = None) -> float:
        """The energy balance's residual at the end, |T - T(0) - sum of the works|, as a
        fraction of the motors' work [1] (nan when the motors did no work): what the
        integrator lost or made, zero for the exact solution."""
        balance = self.energy_balance() if balance is None else balance
        supplied = self.motor_work(balance)
        return abs(float(balance.residual()[-1])) / supplied if supplied > 0 else math.nan

    def energy_line(self, balance: EnergyBalance | None = None) -> str:
        """The energy balance in a line: what the motors supplied [J], the kinetic and
        potential energy gained, the losses, and the residual (what the integrator lost:
        zero for the exact solution; it falls as h^2 once the step resolves the motors'
        electrical time constant L/R, about 2 ms; with error-controlled steps as
        rtol^(2/3), docs/energy.md)."""
        if balance is None and not self.steps_recorded():
            # error-controlled steps between the recorded rows: the trapezoid over the
            # rows would integrate the power over steps the integrator did not take
            taken = int(self.result.stats["accepted_steps"])
            return (f"energy: not balanced (the run recorded {len(self.result.t) - 1} of "
                    f"the {taken} steps it took; the balance needs every step)")
        b = self.energy_balance() if balance is None else balance
        supplied = self.motor_work(b)
        kinetic = b.kinetic[-1] - b.kinetic[0]
        potential = sum(v[-1] - v[0] for v in b.potential.values())
        motors = set(self.supplies())
        lost = sum(b.dissipated(n)[-1] for n in b.work if n not in motors)
        residual = b.residual()[-1]
        share = f" ({self.energy_residual(b):.1%} of it)" if supplied > 0 else ""
        return (f"energy: the motors supplied {supplied:.4g} J = kinetic {kinetic:.4g} J + "
                f"potential {potential:.4g} J + losses {lost:.4g} J, residual "
                f"{residual:.3g} J{share}")

    def timeseries(self) -> TimeSeries:
        """Time [s], deployment ratio [1], bay angles [rad], aperture and its error [m],
        motor currents [A] and torques [N m], and with a net the largest and smallest
        cable tension [N]."""
        truss, r = self.truss, self.result
        columns = {"time": r.t, "deployment_ratio": [truss.deployment_ratio(q) for q in r.q]}
        units = {"deployment_ratio": "1"}
        angles = np.array([truss.bay_angles(q) for q in r.q])
        for k in range(truss.n_bays):
            columns[f"bay_angle{k}"], units[f"bay_angle{k}"] = angles[:, k], "rad"
        columns["aperture"] = [truss.aperture_diameter(q) for q in r.q]
        columns["aperture_error"] = [truss.aperture_error(q) for q in r.q]
        units.update(aperture="m", aperture_error="m")
        currents = np.array([truss.motor_currents(v) for v in r.v])
        torques = np.array([truss.motor_torques(v) for v in r.v])
        for k in range(truss.n_bays):
            columns[f"motor_current{k}"], units[f"motor_current{k}"] = currents[:, k], "A"
            columns[f"motor_torque{k}"], units[f"motor_torque{k}"] = torques[:, k], "N m"
        if self.net is not None:
            tensions = np.array([self.net.tensions(q) for q in r.q])
            columns["cable_tension_max"] = tensions.max(axis=1)
            columns["cable_tension_min"] = tensions.min(axis=1)
            units.update(cable_tension_max="N", cable_tension_min="N")
        return TimeSeries.from_columns(columns, units)

    def summary(self) -> dict:
        """The run in plain numbers (picklable, for sweeps and tables)."""
        return {"n_bays": self.n_bays, "stop": self.stop, "h": self.h,
                "end_time": self.end_time, "steps": len(self.result.t) - 1,
                "wall_time": self.wall_time, "latched": self.latched,
                "latch_times": list(self.latch_times),
                "bay_angle_spread": self.bay_angle_spread(),
                "peak_motor_current": self.peak_motor_current(),
                "peak_cable_tension": self.peak_cable_tension(),
                "final_aperture_error": float(self.truss.aperture_error(self.result.q[-1])),
                "failure": self.failure}

    def report(self) -> list[str]:
        """The run in lines of text; the last reads ``latched: K of N bays at t = T s``."""
        times = ", ".join("-" if t is None else f"{t:.3f}" for t in self.latch_times)
        s = self.summary()
        lines = [f"ring truss of {self.n_bays} bays"
                 f"{'' if self.net is None else f' with its net of {len(self.net.cables)} cables'}"
                 f": {self.truss.system.n:,} coordinates, simulated {s['end_time']:.3f} of "
                 f"{self.stop:g} s at h = {self.h:g} s in {self.wall_time:.1f} s of wall time",
                 f"latch times per bay [s]: {times}",
                 f"bay-angle spread {s['bay_angle_spread']:.2e} rad; peak motor current "
                 f"{s['peak_motor_current']:.2f} A; final aperture error "
                 f"{s['final_aperture_error']:.2e} m"]
        if self.net is not None:
            lines.append(f"peak cable tension {s['peak_cable_tension']:.2f} N")
        if self.failure is not None:
            lines.append(f"stopped early: {self.failure}")
        lines.append(f"latched: {self.latched} of {self.n_bays} bays at t = "
                     f"{self.end_time:.3f} s")
        return lines


def deploy_truss(n_bays: int = 6, folded_angle: float = 1.0, stop: float = 7.0,
                 net: Mapping[str, Any] | bool | None = None, progress=None,
                 truss: Mapping[str, Any] | None = None, method_options=None,
                 **settings) -> TrussDeployment:
    """Deploy the geared ring truss by its motors from ``folded_angle`` [rad] for ``stop``
    [s] of simulated time.

    Parameters
    ----------
    n_bays, folded_angle : the truss's (see :data:`~mbdcore.models.ring_truss.RING_TRUSS_PARAMETERS`)
    stop : simulated time [s], > 0
    net : True or a dict of :data:`~mbdcore.models.cable_net.NET_PARAMETERS` (over
        :data:`NET_DEPLOYMENT`) to hang the cable net on the truss (it starts slack,
        :func:`~mbdcore.models.cable_net.folded_net_nodes`), the steps then
        error-controlled (:data:`NET_STEP_CONTROL`); None or False: the truss alone
    truss : further truss parameters (aperture, height, ...)
    settings : :data:`DEPLOYMENT_DEFAULTS` to override (``rate``, ``kp``, ``ki``,
        ``voltage_limit``, ``h``, ``rho_inf``)
    method_options : further options of generalized-alpha (see
        :data:`mbdcore.dae.methods.METHODS`)
    progress : ``progress(t, stop)`` as :func:`~mbdcore.dae.simulate.simulate` takes it

    A run that fails part-way returns what it reached with :attr:`TrussDeployment.failure`
    set (the error of :func:`~mbdcore.dae.simulate.simulate` that ended it).
    """
    unknown = sorted(set(settings) - set(DEPLOYMENT_DEFAULTS))
    if unknown:
        raise ParameterError(f"deploy_truss: unknown setting(s) {', '.join(unknown)}; "
                             f"accepted: {', '.join(DEPLOYMENT_DEFAULTS)}")
    s = {**DEPLOYMENT_DEFAULTS, **settings}
    for name in ("stop", "h"):
        val = stop if name == "stop" else s["h"]
        if not (isinstance(val, (int, float)) and np.isfinite(val) and val > 0):
            raise ParameterError(f"deploy_truss: {name} = {val!r} s is invalid: accepted "
                                 "values are finite times > 0 s")
    built = ring_truss(n_bays=n_bays, folded_angle=folded_angle, **dict(truss or {}))
    cable_net = None
    if net:
        cable_net = add_cable_net(built, **{**NET_DEPLOYMENT, **({} if net is True else dict(net))})
    control = DeploymentRateController(built, rate=s["rate"], kp=s["kp"], ki=s["ki"],
                                       voltage_limit=s["voltage_limit"])
    options = {"sparse": True, "rho_inf": s["rho_inf"], "iteration": "newton",
               "geometric_stiffness": False,
               **(NET_STEP_CONTROL if cable_net is not None else {}),
               **dict(method_options or {})}
    failure, held = None, []

    def recorded_control(t, q, v):
        """The controller, its outputs and the latches' states kept for the energy
        balance."""
        values = control(t, q, v)
        held.append((float(t), dict(values), built.system.discrete_state()))
        return values

    start = time.perf_counter()
    try:
        result = simulate(built.system, stop, s["h"], "generalized-alpha",
                          feedback=recorded_control, progress=progress,
                          record_steps=bool(options.get("adaptive", False)), **options)
    except IntegrationError as err:
        result = getattr(err, "result", None)
        failure = f"{type(err).__name__}: {err}"
        if result is None:       # the error carries no record: the start is all there is
            raise
    wall = time.perf_counter() - start
    latches = [control.latches[k] for k in range(built.n_bays)]
    return TrussDeployment(built, cable_net, result, float(stop), float(s["h"]), wall,
                           [None if latch is None else latch.latch_time for latch in latches],
                           failure, held)


def deployment_case(case: Mapping[str, Any]) -> dict:
    """:func:`deploy_truss` of a case of plain numbers (its keyword arguments),
    returning :meth:`TrussDeployment.summary` with the case: one case of a sweep of
    deployment scenarios (:func:`mbdcore.sweep.sweep`)."""
    case = dict(case)
    return {"case": case, **deploy_truss(**case).summary()}
