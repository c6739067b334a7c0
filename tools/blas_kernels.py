#!/usr/bin/env python3
"""Rerun the suite's numeric tests under each OpenBLAS CPU kernel and compare.

numpy's and scipy's OpenBLAS picks its kernels (the blocking, the order of the sums,
the use of FMA) for the CPU it runs on; ``OPENBLAS_CORETYPE`` forces another set.  The
results then differ in the last bits, and a test that depends on those bits -- a
tolerance below the rounding error of what it compares, an iteration that fails on
one rounding and not another -- passes on one machine and fails on the next.  This
script runs the same tests once per kernel, each in a fresh process with
``OPENBLAS_CORETYPE`` set (and one BLAS thread), checks that the kernel was really
applied (the core name OpenBLAS reports, read through ctypes as threadpoolctl does),
and prints per kernel the tests that failed, then the tests whose outcome depends on
the kernel.

Usage (from the repository root, in the environment the tests run in)::

    python tools/blas_kernels.py                     # numeric tests, not slow, 4 kernels
    python tools/blas_kernels.py --slow              # the slow ones too
    python tools/blas_kernels.py --kernels Haswell,SkylakeX -- tests/test_mbdcore -x
    python tools/blas_kernels.py --only-slow

Tests: :data:`NUMERIC_TESTS` by default (paths after ``--`` replace them; other
arguments after ``--`` go to pytest): the multibody engine and its integrators, the
control design and the laws -- everything that computes with numpy/scipy linear
algebra and compares numbers -- and of the FMU and application tests those that
compare simulated trajectories (the master's numerics, the multibody models as FMUs,
the demo and the examples).  The rest (model descriptions, packaging, command-line
messages, the C hosts) do not depend on BLAS.

Kernels: :data:`KERNELS` (``--kernels``).  A kernel the CPU cannot run (SkylakeX needs
AVX-512: OpenBLAS would die of an illegal instruction) is reported and skipped; a
kernel this OpenBLAS maps onto another (Zen onto Haswell in numpy's scipy-openblas
builds) is run once, under the name it reports.

Exit status: 0 if every test passed under every kernel that could run, 1 otherwise.
docs/architecture.md, "Tests", says how the suite's numeric tests are kept
kernel-independent.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: The kernels of issue 21: the common x86-64 ones in OpenBLAS's dynamic builds.
KERNELS = ("Haswell", "SkylakeX", "Zen", "Sandybridge")

#: Tests whose results come from linear algebra and floating-point iterations.
NUMERIC_TESTS = (
    "tests/test_mbdcore",
    "tests/test_controllers",
    "tests/test_docs.py",
    "tests/test_fmu/cosim/test_master.py",
    "tests/test_fmu/cosim/test_master_reliability.py",
    "tests/test_fmu/fmi/test_system_fmu.py",
    "tests/test_fmu/fmi/test_spatial_fmu.py",
    "tests/test_fmu/fmi/test_ring_truss_fmu.py",
    "tests/test_fmu/fmi/test_manipulator_fmu.py",
    "tests/test_flexcosim/test_demo.py",
    "tests/test_flexcosim/test_examples.py",
)

#: Run in a child with the kernel forced: exercises the BLAS and LAPACK paths the
#: suite uses (a kernel the CPU lacks dies here, not in the middle of a test) and
#: prints the core name every loaded OpenBLAS reports.
PROBE = r"""
import ctypes, json, re
import numpy as np, scipy.linalg
a = np.random.default_rng(0).standard_normal((200, 200))
b = a @ a.T
scipy.linalg.lu_factor(a); np.linalg.solve(a, b); np.linalg.eigvals(a); scipy.linalg.qz(a, b)
names = {}
for path in sorted(set(re.findall(r"(/\S*openblas\S*\.so\S*)", open("/proc/self/maps").read()))):
    lib = ctypes.CDLL(path)
    for symbol in ("openblas_get_corename", "openblas_get_corename64_",
                   "scipy_openblas_get_corename", "scipy_openblas_get_corename64_"):
        get = getattr(lib, symbol, None)
        if get is not None:
            get.restype = ctypes.c_char_p
            names[path.rsplit("/", 1)[-1]] = get().decode()
            break
print(json.dumps(names))
"""


def kernel_env(kernel: str) -> dict:
    """The environment of a child that runs under ``kernel``."""
    env = dict(os.environ)
    env.update(OPENBLAS_CORETYPE=kernel, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    return env


def probe(kernel: str) -> tuple[str | None, str]:
    """(the core name OpenBLAS reports under ``kernel``, or None if it cannot run; what
    happened)."""
    run = subprocess.run([sys.executable, "-c", PROBE], env=kernel_env(kernel), cwd=ROOT,
                         capture_output=True, text=True)
    if run.returncode != 0:
        why = ("an illegal instruction: this CPU lacks the kernel's instructions"
               if run.returncode in (-4, 132) else
               f"exit status {run.returncode}: {run.stderr.strip()[-300:]}")
        return None, why
    names = json.loads(run.stdout.strip().splitlines()[-1])
    if not names:
        return None, "no OpenBLAS found in numpy/scipy (another BLAS: nothing to compare)"
    cores = sorted(set(names.values()))
    if len(cores) > 1:
        return None, f"the OpenBLAS libraries disagree: {names}"
    return cores[0], ", ".join(f"{lib}: {core}" for lib, core in names.items())


def run_tests(kernel: str, args: list[str]) -> tuple[dict, float, int]:
    """({test id: "passed" | "failed" | "error" | "skipped"}, seconds, pytest's exit
    status) of pytest ``args`` under ``kernel``."""
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.xml"
        cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q",
               f"--junitxml={report}", *args]
        start = time.monotonic()
        rc = subprocess.run(cmd, env=kernel_env(kernel), cwd=ROOT).returncode
        seconds = time.monotonic() - start
        outcomes = {}
        if report.exists():
            for case in ET.parse(report).getroot().iter("testcase"):
                test = f"{case.get('classname', '')}::{case.get('name', '')}"
                kinds = {child.tag for child in case}
                outcomes[test] = ("failed" if "failure" in kinds else "error" if "error" in kinds
                                  else "skipped" if "skipped" in kinds else "passed")
    return outcomes, seconds, rc


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kernels", default=",".join(KERNELS),
                        help=f"comma-separated OPENBLAS_CORETYPE values (default "
                             f"{','.join(KERNELS)})")
    speed = parser.add_mutually_exclusive_group()
    speed.add_argument("--slow", action="store_true", help="the slow tests too")
    speed.add_argument("--only-slow", action="store_true", help="only the slow tests")
    parser.add_argument("pytest_args", nargs="*",
                        help="after --: test paths (replacing the numeric tests) and "
                             "pytest options")
    opts = parser.parse_args(argv)
    paths = [a for a in opts.pytest_args if not a.startswith("-") and
             (ROOT / a.split("::")[0]).exists()]
    args = [a for a in opts.pytest_args if a not in paths] + (paths or list(NUMERIC_TESTS))
    if opts.only_slow:
        args += ["-m", "slow"]
    elif not opts.slow:
        args += ["-m", "not slow"]

    results, ran_as = {}, {}
    for kernel in [k.strip() for k in opts.kernels.split(",") if k.strip()]:
        core, what = probe(kernel)
        if core is None:
            print(f"== {kernel}: not run ({what})", flush=True)
            continue
        if core in ran_as.values():
            same = next(k for k, c in ran_as.items() if c == core)
            print(f"== {kernel}: OpenBLAS runs it as {core}, the kernels of {same}: not "
                  "run again", flush=True)
            continue
        print(f"== {kernel}: OpenBLAS core {what}", flush=True)
        outcomes, seconds, rc = run_tests(kernel, args)
        results[kernel], ran_as[kernel] = outcomes, core
        bad = sorted(t for t, o in outcomes.items() if o in ("failed", "error"))
        counts = {o: sum(1 for x in outcomes.values() if x == o)
                  for o in ("passed", "failed", "error", "skipped")}
        print(f"== {kernel}: {counts['passed']} passed, {counts['failed']} failed, "
              f"{counts['error']} errors, {counts['skipped']} skipped in {seconds:.0f} s "
              f"(pytest exit status {rc})", flush=True)
        for test in bad:
            print(f"   {outcomes[test]}: {test}")

    print("\nSummary")
    if not results:
        print("  no kernel could run")
        return 1
    for kernel, outcomes in results.items():
        bad = sum(1 for o in outcomes.values() if o in ("failed", "error"))
        print(f"  {kernel:12s} (core {ran_as[kernel]}): {len(outcomes)} tests, {bad} failed")
    tests = sorted(set().union(*results.values()))
    differ = [t for t in tests if len({results[k].get(t, "not run") for k in results}) > 1]
    if differ:
        print("  outcome depends on the kernel:")
        for test in differ:
            print(f"    {test}: " + ", ".join(f"{k} {results[k].get(test, 'not run')}"
                                           for k in results))
    else:
        print("  no test's outcome depends on the kernel")
    failed = any(o in ("failed", "error") for r in results.values() for o in r.values())
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
