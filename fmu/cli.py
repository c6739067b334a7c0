"""Command line: ``flexcosim demo`` and ``flexcosim build MODEL -o DIR``."""
from __future__ import annotations

import argparse
import sys


def main(argv: list[str] | None = None) -> int:
    from .demo import MODELS

    parser = argparse.ArgumentParser(prog="flexcosim", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    demo = sub.add_parser("demo", help="closed-loop co-simulation of the two-link flexible arm")
    demo.add_argument("-o", "--out", default="results", help="output folder (default: results)")
    demo.add_argument("--stop", type=float, default=3.0, help="stop time [s] (default 3)")
    demo.add_argument("--step", type=float, default=1e-3, help="communication step [s] (default 1e-3)")
    demo.add_argument("--method", choices=("gauss-seidel", "jacobi"), default="gauss-seidel")
    demo.add_argument("--blocks", action="store_true",
                      help="run the controller and the arm as in-process blocks instead of FMUs")

    build = sub.add_parser("build", help="build an FMI 2.0 co-simulation FMU")
    build.add_argument("model", choices=sorted(MODELS))
    build.add_argument("-o", "--out", default=".", help="output folder or .fmu path")

    args = parser.parse_args(argv)
    if args.command == "demo":
        from .demo import run_demo

        run_demo(args.out, stop_time=args.stop, step=args.step, method=args.method,
                 use_fmus=not args.blocks)
        return 0
    if args.command == "build":
        from pathlib import Path

        from .build import build_fmu

        block, name = MODELS[args.model]
        out = Path(args.out)
        path = build_fmu(block, out if out.suffix == ".fmu" else out / f"{name}.fmu", model_name=name)
        print(path)
        return 0
    return 2  # pragma: no cover


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
