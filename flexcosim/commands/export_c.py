"""``flexcosim export-c``: a model with C equations, or a model file whose every part has a
compiled form, as a C-source FMU."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from flexcosim.arguments import unknown_name
from flexcosim.catalog import C_MODELS, resolve
from flexcosim.console import report_error
from fmu.fmi.export_c import CExportError, binary_platforms, export_c_fmu
from mbdcore.blocks import ParameterError
from mbdcore.models.linear import LinearSystemBlock, load_state_space
from mbdcore.models.model_block import ModelSystemBlock

__all__ = ["run", "parameter_values"]


def run(args: argparse.Namespace) -> int:
    # the name and --from were checked before this module was imported
    # (flexcosim.arguments)
    entry = C_MODELS.get(args.model)
    try:
        if entry is None:
            # a model file of either dimension, its signals and method as the file says:
            # stepped in C by its implicit method where every part has a compiled form
            # (SystemBlock.c_model; a part without one is refused naming it)
            stem = Path(args.model).stem
            name = args.name or "".join(p.capitalize() for p in
                                        stem.replace("-", "_").split("_")) + "C"
            block = ModelSystemBlock.for_model(args.model, name=name)
        elif entry.block is None:  # statespace: the block is made from the --from file
            name = args.name or entry.model_name
            block = LinearSystemBlock.configured(load_state_space(args.source), name)
        else:
            name = args.name or entry.model_name
            block = resolve(entry.block)
        params = parameter_values(block, args.set)
        if args.model == "lqg" and args.source:
            params["design"] = Path(args.source).read_text()
        path = export_c_fmu(block, Path(args.out), model_name=name, parameters=params,
                            compile=False if args.no_compile else None,
                            fmi_version=args.fmi, kind=args.kind,
                            arrays=not args.scalars,
                            platforms=tuple(dict.fromkeys(args.platforms)) if args.platforms else None)
    except (CExportError, ParameterError, ValueError, OSError, RecursionError) as e:
        report_error("export-c", e)
        return 2
    print(path)
    platforms = binary_platforms(path)
    print(f"flexcosim export-c: binaries for {', '.join(platforms)}" if platforms else
          "flexcosim export-c: sources only, no binary", file=sys.stderr)
    return 0


#: A parameter's type in words
_KINDS = {float: "a number", int: "an integer"}


def parameter_values(block, settings: list[str]) -> dict:
    """``NAME=VALUE`` strings as typed values of the block's parameters."""
    declared = {p.name: p for p in block.PARAMETERS}
    values = {}
    for item in settings:
        name, sep, text = item.partition("=")
        if not sep:
            raise ValueError(f"--set {item!r}: no '='; accepted: NAME=VALUE, e.g. "
                             f"{next(iter(declared), 'name')}=1")
        if name not in declared:
            raise ValueError(f"--set {name}: {unknown_name('parameter', name, list(declared))}")
        parameter = declared[name]
        try:
            values[name] = parameter.kind(text)
        except ValueError:
            unit = f" [{parameter.unit}]" if parameter.unit else ""
            kind = _KINDS.get(parameter.kind, f"a {parameter.kind.__name__}")
            raise ValueError(f"--set {name}={text}: not {kind}; accepted: "
                             f"{parameter.accepted()}{unit}") from None
    return values
