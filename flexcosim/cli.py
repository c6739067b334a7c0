"""The ``flexcosim`` command (and ``python -m flexcosim``): the arguments are parsed and
checked first (:mod:`flexcosim.arguments`, standard library only), and only then is the
command's module imported by name (:data:`flexcosim.catalog.COMMANDS`), so that
``--help``, ``--version`` and a mistyped name answer at once, without numpy.

Results go to stdout; messages (warnings, an FMU's log with ``-v``) and the progress of
a run go to stderr: ``-v``/``-vv`` say more, ``-q`` only errors and no progress.

Every error is one line, ``flexcosim <command>: error: <what>; <what is accepted>``
(:func:`flexcosim.console.error_line`), never a traceback; exit code 2 for a usage error
(the arguments, a file that cannot be read as what it should be), 1 for a run that
fails."""
from __future__ import annotations

import os
import signal
import sys

from flexcosim.arguments import check_arguments, make_parser
from flexcosim.catalog import COMMANDS, resolve
from flexcosim.console import report_error, terminal_logging

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    """Run the command line on ``argv`` (default ``sys.argv[1:]``); returns the exit code
    (0, 1 for a run that failed, 2 for a usage error, 128 + signal when stopped)."""
    parser = make_parser()
    try:
        try:
            args = parser.parse_args(argv)
        except SystemExit as e:  # --help or --version printed, or a usage error said
            sys.stdout.flush()   # what was printed reaches stdout here, not at exit
            return e.code
    except OSError as e:         # stdout on a full disk (/dev/full), a closed pipe
        report_error(None, f"cannot write to stdout: {e.strerror or e}")
        return 1
    problem = check_arguments(args)
    if problem is not None:
        report_error(args.command, problem)
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
            report_error(args.command, e)                      # kernel) in one line
            return 1
        except _StdoutError as e:    # stdout on a full disk (/dev/full), a closed pipe
            report_error(args.command, f"cannot write the results to stdout: "
                                       f"{e.strerror or e}")
            _discard(results)
            return 1
        except OSError as e:         # a file the command writes: full, not writable, ...
            report_error(args.command, e)
            return 1
        except RecursionError as e:  # a reader that does not catch it itself
            report_error(args.command, e)
            return 2
        except KeyboardInterrupt as e:  # Ctrl-C (cosim has its own, with the signal's code)
            report_error(args.command, str(e) or "interrupted by the user")
            return 128 + signal.SIGINT
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
