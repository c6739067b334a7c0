"""``flexcosim build``: a built-in model or a model file as an FMU."""
from __future__ import annotations

import argparse
from pathlib import Path

from flexcosim.catalog import BUILD_MODELS, RING_TRUSS, resolve
from flexcosim.console import report_error
from fmu.fmi.build import build_fmu
from mbdcore.models.model_block import ModelSystemBlock
from mbdcore.models.model_file import load_model, model_to_dict
from mbdcore.models.ring_truss_block import RingTrussBlock

__all__ = ["run"]


def run(args: argparse.Namespace) -> int:
    try:
        return _build(args)
    except (ValueError, OSError, RecursionError) as e:
        report_error("build", e)
        return 2


def _build(args: argparse.Namespace) -> int:
    # the name was checked before this module was imported (flexcosim.arguments)
    out = Path(args.out)
    if args.model == RING_TRUSS:
        # the number of bays fixes the signals: built in, as a model file's signals are
        config = {} if args.bays is None else {"n_bays": args.bays}
        block = RingTrussBlock
        name = args.name or RingTrussBlock.configured(config).__name__.replace("Block", "")
    elif args.model in BUILD_MODELS:
        block, name = resolve(BUILD_MODELS[args.model].block), BUILD_MODELS[args.model].model_name
        config = None
    else:
        # a model file of either dimension, with the models' motors, screw drives and
        # latches: the one format that reads every file, and its block
        system = load_model(args.model)
        block = ModelSystemBlock
        stem = Path(args.model).stem
        name = args.name or "".join(p.capitalize() for p in stem.replace("-", "_").split("_"))
        config = {"model": model_to_dict(system),
                  "inputs": args.inputs.split(",") if args.inputs else None,
                  "outputs": args.outputs.split(",") if args.outputs else None}
    path = build_fmu(block, out if out.suffix == ".fmu" else out / f"{name}.fmu",
                     model_name=name, configuration=config)
    print(path)
    return 0
