"""The Newton matrices of the implicit integrators' sparse path on the engine's models,
as the integrator assembles them, for the sparse LU's tests and bench/sparse_lu.py.

* :class:`RecordingGeneralizedAlpha`: generalized-alpha that keeps a copy of every
  matrix it factors;
* :func:`ring_truss_problem`: the ring truss (deployment driver, gears) at ``n_bays``;
* :func:`cable_net_problem`: the deployed ring truss with its pretensioned net of
  tension-only spatial ANCF cables;
* :func:`newton_matrices`: the matrices factored in a few steps of either, and
  :func:`ring_truss_matrices` those of the truss.
"""
from __future__ import annotations

import math

import numpy as np
import scipy.sparse

from mbdcore.dae.index1 import assemble
from mbdcore.dae.schemes import GeneralizedAlpha
from mbdcore.models.cable_net import add_cable_net
from mbdcore.models.ring_truss import (
    add_deployment_driver,
    ring_truss,
    smooth_deployment_motion,
)

__all__ = ["RecordingGeneralizedAlpha", "ring_truss_problem", "cable_net_problem",
           "newton_matrices", "ring_truss_matrices"]


class RecordingGeneralizedAlpha(GeneralizedAlpha):
    """Generalized-alpha keeping a copy of each sparse matrix it factors (``matrices``)."""

    def __init__(self, **options):
        super().__init__(**options)
        self.matrices = []

    def _factorize(self, J, kind):
        if scipy.sparse.issparse(J):
            self.matrices.append(scipy.sparse.csc_matrix(J, copy=True))
        return super()._factorize(J, kind)


def ring_truss_problem(n_bays: int):
    """(system, q0, v0, h [s], options): the geared truss without drive, one hinge driven
    from 1.0 rad by a cosine ramp (bench/ring_truss.py's case)."""
    truss = ring_truss(n_bays=n_bays, drive=False, latch=False, folded_angle=1.0)
    add_deployment_driver(truss, smooth_deployment_motion(1.0, 1.5, 1.0))
    q, v = assemble(truss.system)
    return truss.system, q, v, 0.01, {}


def cable_net_problem(n_bays: int = 6, net_rings: int = 2, cable_elements: int = 2):
    """(system, q0, v0, h [s], options): the deployed truss with latches and its net of
    tension-only ANCF cables in its form equilibrium (bench/ring_truss.py --net), full
    Newton without geometric terms at h = 1 ms."""
    truss = ring_truss(n_bays=n_bays, drive=False, latch=True, folded_angle=math.pi / 2)
    net = add_cable_net(truss, net_rings=net_rings, cable_elements=cable_elements,
                        cable_damping=1e-4)
    q = net.coordinates()
    return truss.system, q, np.zeros_like(q), 1e-3, {"iteration": "newton",
                                                      "geometric_stiffness": False,
                                                      "rho_inf": 0.6}


def newton_matrices(problem, steps: int = 2, **options):
    """The sparse Newton matrices factored in ``steps`` generalized-alpha steps of
    ``problem`` (a tuple of the ``*_problem`` functions), with the integrator."""
    system, q, v, h, defaults = problem
    integ = RecordingGeneralizedAlpha(sparse=True, **{**defaults, **options})
    integ.start(system, 0.0, q, v)
    t = 0.0
    for _ in range(steps):
        q, v = integ.step(system, t, q, v, h)
        t += h
    return integ.matrices, integ


def ring_truss_matrices(n_bays: int, steps: int = 2):
    """Newton matrices of :func:`ring_truss_problem`."""
    return newton_matrices(ring_truss_problem(n_bays), steps)[0]
