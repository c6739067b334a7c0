"""The ``flexcosim`` command (and ``python -m flexcosim``): the arguments are parsed and
checked first (:mod:`flexcosim.arguments`, standard library only), and only then is the
command's module imported by name (:data:`flexcosim.catalog.COMMANDS`), so that
``--help``, ``--version`` and a mistyped name answer at once, without numpy.

Results go to stdout; messages (warnings, an FMU's log with ``-v``) and the progress of
a run go to stderr: ``-v``/``-vv`` say more, ``-q`` only errors and no progress."""
from __future__ import annotations

import os
import sys

from flexcosim.arguments import check_arguments, make_parser
from flexcosim.catalog import COMMANDS, resolve
from flexcosim.console import terminal_logging

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    parser = make_parser()
    try:
        try:
            args = parser.parse_args(argv)
        except SystemExit:       # --help or --version printed, or a usage error
            sys.stdout.flush()   # what was printed reaches stdout here, not at exit
            raise
    except OSError as e:         # stdout on a full disk (/dev/full), a closed pipe
        print(f"flexcosim: cannot write to stdout: {e.strerror or e}", file=sys.stderr)
        return 1
    problem = check_arguments(args, parser)
    if problem is not None:
        print(f"flexcosim {args.command}: {problem}", file=sys.stderr)
        return 2
    args.quiet = getattr(args, "quiet", False)
    with terminal_logging(-1 if args.quiet else getattr(args, "verbose", 0)):
        results, sys.stdout = sys.stdout, _ResultStream(sys.stdout)
        try:
            # imported under the command line's logging: its import-time warnings are lines
            run = resolve(COMMANDS[args.command])
            code = run(args)
            sys.stdout.flush()       # the results reach stdout here, not at exit
            return code
        except ImportError as e:     # a broken install (mbdcore.native.KernelError: a stale
            print(f"flexcosim {args.command}: {e}", file=sys.stderr)   # kernel) in one line
            return 1
        except _StdoutError as e:    # stdout on a full disk (/dev/full), a closed pipe
            print(f"flexcosim {args.command}: cannot write the results to stdout: "
                  f"{e.strerror or e}", file=sys.stderr)
            _discard(results)
            return 1
        except OSError as e:         # a file the command writes: full, not writable, ...
            where = f"{e.filename}: " if e.filename is not None else ""
            print(f"flexcosim {args.command}: {where}{e.strerror or e}", file=sys.stderr)
            return 1
        except RecursionError:       # a reader that does not catch it itself
            print(f"flexcosim {args.command}: an input file is nested too deeply",
                  file=sys.stderr)
            return 2
        finally:
            sys.stdout = results


class _StdoutError(OSError):
    """Writing the results to stdout failed."""


class _ResultStream:
    """stdout while a command runs: a failed write or flush is a :class:`_StdoutError`,
    so that the one line says it was stdout (an OSError of ``print`` names no file)."""

    def __init__(self, stream):
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except OSError as e:
            raise _StdoutError(e.errno, e.strerror) from None

    def flush(self) -> None:
        try:
            self._stream.flush()
        except OSError as e:
            raise _StdoutError(e.errno, e.strerror) from None

    def __getattr__(self, name):
        return getattr(self._stream, name)


def _discard(stream) -> None:
    """Point a failed stdout at the null device: the text still in its buffer would fail
    again, with a traceback, in the interpreter's own flush at exit."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):   # not a real file (a test's capture)
        pass

if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
