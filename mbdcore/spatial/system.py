"""Spatial multibody systems: the planar engine's :class:`~mbdcore.multibody.system.System`
(assembly of bodies, joints and forces, dense and sparse, redundancy handling) with 3D
gravity, a spatial ground and natural-coordinate rigid bodies (docs/spatial.md).

Build with the Python API::

    s = SpatialSystem(gravity=(0, 0, -9.81))
    s.ground.add_marker("O", (0, 0, 0))
    top = s.add_body("top", mass=1.0, inertia=(0.1, 0.1, 0.05),
                     center_of_mass=(0, 0, 0.2), markers={"tip": (0, 0, 0)})
    s.add_joint(Spherical("ground.O", "top.tip"))
"""
from __future__ import annotations

from typing import Any

import numpy as np

from mbdcore.multibody.system import System
from mbdcore.spatial.bodies import RigidBody3D, SlenderBar

__all__ = ["SpatialSystem"]


class SpatialSystem(System):
    """A spatial multibody system.

    Parameters
    ----------
    gravity : (float, float, float)
        Gravitational acceleration [m/s^2] in the ground frame.
    redundant : {"remove", "error", "keep"}
        Constraint equations that depend on the others at the assembled initial
        configuration (over-constrained mechanisms, which spatial linkages built from
        planar ones and ring trusses are) are dropped (default; their names are in
        ``redundant_equations`` once the solvers first use the system, or after
        :meth:`~mbdcore.multibody.system.System.check_redundancy`), refused, or kept.
    """

    dim = 3

    def __init__(self, gravity=(0.0, 0.0, 0.0), redundant: str = "remove"):
        super().__init__(gravity, redundant)

    def make_ground(self) -> RigidBody3D:
        return RigidBody3D("ground", ground=True)

    def add_body(self, name: str, **kwargs: Any) -> RigidBody3D:
        """Add a natural-coordinate rigid body (see :class:`RigidBody3D` for the keywords);
        its six frame constraints come with it."""
        return self.add(RigidBody3D(name, **kwargs))

    def add_bar(self, name: str, end_i, end_j, **kwargs: Any) -> SlenderBar:
        """Add a slender bar (see :class:`SlenderBar`); its length constraint comes with it."""
        return self.add(SlenderBar(name, end_i, end_j, **kwargs))

    def angular_momentum(self, q, v, about=(0.0, 0.0, 0.0)) -> np.ndarray:
        """Total angular momentum [kg m^2/s] of the rigid bodies about the ground point
        ``about``."""
        total = np.zeros(3)
        for b in self.bodies:
            get = getattr(b, "angular_momentum", None)
            if get is not None:
                sl = slice(b.index, b.index + b.n_coords)
                total += get(q[sl], v[sl], about)
        return total
