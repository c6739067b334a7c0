"""The paraboloid net (issue 24 item 2): its form, tensions and flat-facet error against
the number of bays and rings, printed, not asserted (docs/ring_truss.md, "The paraboloid
net").

    python3 bench/reflector_net.py [--focal-length F] [--plot DIR]

For the default truss (D = 4 m, H = 0.5 m) and N bays, R rings: cables, the largest
distance of the form's nodes from the design, the largest out-of-balance force at a free
node, the tension ranges per kind, the RMS axial facet error to the design paraboloid
and to the refocused one (best fit), the equilateral-facet formula L^2/(16 sqrt(15) F)
with L the rim's hoop chord D sin(pi/N), and the form-finding time, as a Markdown table.
``--plot DIR``: the 6-bay, 2-ring form coloured by tension and its tensions per kind,
``DIR/reflector_form.png`` and ``DIR/reflector_tensions.png``.
"""
from __future__ import annotations

import argparse
import math
import time

import numpy as np

from pathlib import Path

from mbdcore.models.cable_net import NET_MEMBER_KINDS, cable_net_topology, paraboloid_form
from mbdcore.models.reflector_net import (
    equilateral_facet_error,
    facet_surface_error,
    front_facets,
    paraboloid_nodes,
    plot_net_form,
    plot_net_tensions,
)
from mbdcore.models.ring_truss import ring_truss

CASES = ((4, 1), (4, 2), (6, 1), (6, 2), (6, 3), (8, 3), (12, 2), (24, 4))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--focal-length", type=float, default=6.0, help="F [m] (default 6)")
    parser.add_argument("--plot", type=Path, help="folder for the figures of the 6-bay net")
    args = parser.parse_args()
    focal = args.focal_length
    print("| bays | rings | cables | nodes off the design [m] | free-node balance [N] | "
          "tensions radial / hoop / tie [N] | rms [mm] | best-fit rms [mm] | formula [mm] "
          "| form finding [s] |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for n_bays, rings in CASES:
        truss = ring_truss(n_bays=n_bays, folded_angle=math.pi / 2, drive=False, latch=False)
        rims = truss.net_attachment_points(truss.coordinates(math.pi / 2))
        topology = cable_net_topology(n_bays, rings)
        start = time.perf_counter()
        form, dishes = paraboloid_form(topology, *rims, focal_length=focal)
        elapsed = time.perf_counter() - start
        error = facet_surface_error(form.positions, front_facets(topology), dishes[0])
        design = paraboloid_nodes(topology, *rims, dishes)
        chord = 2.0 * truss.radius * math.sin(math.pi / n_bays)
        formula = equilateral_facet_error(chord, focal)[2]
        tension = form.tension
        ranges = " / ".join(f"{tension[topology.kind == k].min():.2f}-"
                            f"{tension[topology.kind == k].max():.2f}" for k in range(3))
        print(f"| {n_bays} | {rings} | {tension.size} | "
              f"{np.abs(form.positions - design).max():.1e} | "
              f"{np.abs(form.residual()).max():.1e} | {ranges} | {1e3 * error.rms:.2f} | "
              f"{1e3 * error.best_fit_rms:.2f} | {1e3 * formula:.2f} | {elapsed:.3f} |")
        if args.plot is not None and (n_bays, rings) == (6, 2):
            args.plot.mkdir(parents=True, exist_ok=True)
            plot_net_form(form).figure.savefig(args.plot / "reflector_form.png", dpi=100)
            plot_net_tensions(form, NET_MEMBER_KINDS).figure.savefig(
                args.plot / "reflector_tensions.png", dpi=100)


if __name__ == "__main__":
    main()
