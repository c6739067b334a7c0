"""The ``flexcosim`` command (and ``python -m flexcosim``): the arguments are parsed and
checked first (:mod:`flexcosim.arguments`, standard library only), and only then is the
command's module imported by name (:data:`flexcosim.catalog.COMMANDS`), so that
``--help``, ``--version`` and a mistyped name answer at once, without numpy.

Results go to stdout; messages (warnings, an FMU's log with ``-v``) and the progress of
a run go to stderr: ``-v``/``-vv`` say more, ``-q`` only errors and no progress."""
from __future__ import annotations

import sys

from flexcosim.arguments import check_arguments, make_parser
from flexcosim.catalog import COMMANDS, resolve
from flexcosim.console import terminal_logging

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    parser = make_parser()
    args = parser.parse_args(argv)
    problem = check_arguments(args, parser)
    if problem is not None:
        print(f"flexcosim {args.command}: {problem}", file=sys.stderr)
        return 2
    args.quiet = getattr(args, "quiet", False)
    with terminal_logging(-1 if args.quiet else getattr(args, "verbose", 0)):
        try:
            # imported under the command line's logging: its import-time warnings are lines
            run = resolve(COMMANDS[args.command])
            return run(args)
        except ImportError as e:     # a broken install (mbdcore.native.KernelError: a stale
            print(f"flexcosim {args.command}: {e}", file=sys.stderr)   # kernel) in one line
            return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
