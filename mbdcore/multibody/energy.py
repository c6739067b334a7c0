"""Where the energy of a run goes: the work of every force element and of every body's own
forces, their potentials, and the kinetic energy, along a recorded run (docs/energy.md).

For a system whose constraints do no work (joints fixed in time: no driving motion), the
kinetic energy changes by the work of the applied forces,

    T(t) - T(0) = sum_e W_e(t),   W_e(t) = integral_0^t v . f_e dt,

where e runs over the force elements (``System.forces_list``) and the bodies' own forces
(gravity, elastic and damping forces of a flexible body, a motor's torque, EMF, resistance
and friction).  An element with a potential V_e splits its work into the change of that
potential and what it dissipated (or, for a source such as a motor's voltage, supplied):
``D_e = -(W_e + V_e(t) - V_e(0))``.  So the motors' electrical work equals the kinetic
energy gained plus the potentials' rise plus what was dissipated -- the balance a
deployment is checked by (:class:`EnergyBalance`).

The work is integrated by the trapezoidal rule over each recorded step with the inputs
held over that step, so a run must be recorded at every step (``record_every = 1``;
error-controlled steps between the output grid's points with ``record_steps=True`` of
:func:`mbdcore.dae.simulate.simulate`), and
the balance closes to the integrator's accuracy (second order in the step) plus its
numerical dissipation (generalized-alpha with rho_inf < 1 damps the highest
frequencies): its residual is what the integrator lost, not what the model did.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from mbdcore.multibody.system import StateView, System

__all__ = ["element_powers", "element_potentials", "EnergyBalance", "energy_balance"]


def _body_slice(body) -> slice:
    return slice(body.index, body.index + body.n_coords)


def element_powers(system: System, t: float, q, v,
                   inputs: Mapping[str, float] | None = None) -> dict[str, float]:
    """The power v . f_e [W] of every body's own forces (by body name) and of every force
    element (by element name) at (t, q, v) with ``inputs`` (default: the system's)."""
    q, v = np.asarray(q, float), np.asarray(v, float)
    inputs = system.inputs if inputs is None else {**system.inputs, **inputs}
    powers = {}
    for body in system.bodies:
        sl = _body_slice(body)
        powers[body.name] = float(v[sl] @ body.applied_forces(t, q[sl], v[sl],
                                                              system.gravity))
    view = StateView(q, v)
    for force in system.forces_list:
        f = np.zeros(system.n)
        force.apply(t, view, f, inputs)
        powers[force.name] = float(v @ f)
    return powers


def element_potentials(system: System, t: float, q) -> dict[str, float]:
    """The potential energy [J] of every body (gravity, elasticity) and force element
    (springs, gear and screw compliance, latches), by name, as the powers are."""
    q = np.asarray(q, float)
    potentials = {}
    for body in system.bodies:
        potentials[body.name] = float(body.potential_energy(q[_body_slice(body)],
                                                            system.gravity))
    view = StateView(q, np.zeros_like(q))
    for force in system.forces_list:
        potentials[force.name] = float(force.potential(t, view))
    return potentials


@dataclass
class EnergyBalance:
    """The energy of a recorded run, by element.

    Attributes
    ----------
    t : ndarray (N,)           times [s]
    kinetic : ndarray (N,)     kinetic energy T [J] (a motor's inductance L i^2/2 included)
    work : dict                name -> cumulative work W_e [J], (N,)
    potential : dict           name -> potential V_e [J], (N,)
    """
    t: np.ndarray
    kinetic: np.ndarray
    work: dict
    potential: dict

    def dissipated(self, name: str) -> np.ndarray:
        """What element ``name`` took out of the mechanism [J], (N,): its work's share
        that did not go into its potential (negative for a source: a motor's voltage)."""
        return -(self.work[name] + self.potential[name] - self.potential[name][0])

    def total_work(self) -> np.ndarray:
        """The work of every element [J], (N,)."""
        return np.sum(list(self.work.values()), axis=0)

    def residual(self) -> np.ndarray:
        """T - T(0) - sum of the works [J], (N,): zero for the exact solution."""
        return self.kinetic - self.kinetic[0] - self.total_work()

    def sources(self, names: Sequence[str]) -> np.ndarray:
        """The energy the elements ``names`` supplied [J], (N,): minus what they
        dissipated."""
        return -np.sum([self.dissipated(n) for n in names], axis=0)


def energy_balance(system: System, t, q, v,
                   held: Sequence[tuple[float, Mapping | None, dict | None]] = ()
                   ) -> EnergyBalance:
    """The :class:`EnergyBalance` of a run recorded at every step: times ``t`` (N,),
    coordinates ``q`` and velocities ``v`` (N, n), and ``held``: what was in effect over
    the steps, as ``(time, inputs, discrete_state)`` in time order, each from its time
    until the next -- the system inputs a sampled controller set (None: the system's own)
    and the elements' discrete states (``System.discrete_state()``: a latch engaged or
    not; None: as the system is now).  The system's discrete state is restored after."""
    t = np.asarray(t, float)
    times = [float(s[0]) for s in held]
    n = len(t)
    saved = system.discrete_state()

    # the entry of ``held`` in effect over the step from t[k] (-1: none)
    entry = [int(np.searchsorted(times, tk + 1e-12 * max(1.0, abs(tk)), side="right")) - 1
             for tk in t]

    def in_effect(k: int):
        """(inputs, discrete state) over the step from t[k]."""
        i = entry[k]
        return (held[i][1], held[i][2]) if i >= 0 else (None, None)

    try:
        kinetic = np.array([system.kinetic_energy(v[k], q[k]) for k in range(n)])
        potentials = []
        for k in range(n):
            # the potentials at t[k] as the step that ends there saw them
            state = in_effect(max(k - 1, 0))[1]
            system.set_discrete_state(saved if state is None else state)
            potentials.append(element_potentials(system, t[k], q[k]))
        names = list(potentials[0])
        if len(set(names)) != len(names) or len(names) != len(system.bodies) + len(
                system.forces_list):
            raise ValueError("energy_balance: the bodies and force elements need distinct "
                             "names")
        work = {name: np.zeros(n) for name in names}
        end = None
        for k in range(n - 1):
            inputs, state = in_effect(k)
            system.set_discrete_state(saved if state is None else state)
            # the powers at t[k] as the step before saw them serve this one when the
            # same inputs and states were in effect over both (the rows of an
            # error-controlled run between two controller samples)
            same = k > 0 and entry[k] == entry[k - 1]
            start = end if same else element_powers(system, t[k], q[k], v[k], inputs)
            end = element_powers(system, t[k + 1], q[k + 1], v[k + 1], inputs)
            h = t[k + 1] - t[k]
            for name in names:
                work[name][k + 1] = work[name][k] + 0.5 * h * (start[name] + end[name])
    finally:
        system.set_discrete_state(saved)
    potential = {name: np.array([p[name] for p in potentials]) for name in names}
    return EnergyBalance(t, kinetic, work, potential)
