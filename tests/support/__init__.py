"""What the tests share: one place, imported as ``support`` (``tests/`` is on the path
through pytest's ``pythonpath``); no test module imports another test module.

* :mod:`support.blocks` -- small blocks with closed-form or known behaviour (FMU and
  master tests; importable by name from system files as ``support.blocks:Tracking``, loaded
  with ``allow_python_blocks=True``: not the project's own);
* :mod:`support.models` -- models shared by several modules (the Cartesian pendulum, the
  arm's joint PD with feedforward, the perturbed arms);
* :mod:`support.fmi` -- the plain C FMI host (``c/host.c``) and an fmpy instance driven
  by hand, each recording what the FMU logs;
* :mod:`support.c_fmus` -- FMUs written in C by hand (``c/lag.c``, ``c/stair.c`` and its
  FMI 3.0 twin ``c/stair3.c``, ``c/relay.c``: a Real, an Integer and a Boolean passed
  through), compiled with gcc: FMUs not made by our exporters;
* :mod:`support.libcosim_host` -- a script run in a process of its own: libcosim as a
  third-party host;
* :mod:`support.fmusim` -- the Reference-FMUs' simulator fmusim as a third-party host,
  where one is installed (``$FMUSIM`` or ``PATH``), and its input and result files;
* :mod:`support.ancf_reference`, :mod:`support.ancf3d_reference`,
  :mod:`support.element_checks` -- independent numpy references of the ANCF element loops
  and the checks every compiled element loop must pass.

This module itself holds only the folders the tests read.
"""
from pathlib import Path

__all__ = ["TESTS", "ROOT", "EXAMPLES", "DATA", "C_SOURCES"]

#: the tests folder, the repository, the examples, the tests' stored data, hand-written C
TESTS = Path(__file__).resolve().parents[1]
ROOT = TESTS.parent
EXAMPLES = ROOT / "examples"
DATA = TESTS / "data"
C_SOURCES = Path(__file__).resolve().parent / "c"
