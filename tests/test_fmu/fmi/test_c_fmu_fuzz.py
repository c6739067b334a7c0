"""A short, bounded libFuzzer run over the C-source FMUs' saved-state reader and value
setters (``bench/fuzz_c_fmu.py``; the long run is that script with ``--minutes``).  The
harness aborts on a sanitizer report (ASan, UBSan), on a step that returns fmi2OK with a
non-finite or out-of-range output, and on a changed state accepted without its checksum.
Skipped, with the reason, where clang with libFuzzer is missing (``apt-get install
clang``): the fuzzer is a development tool, the package never needs it."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[3] / "bench" / "fuzz_c_fmu.py"
PROBE = [sys.executable, "-c", "import runpy, sys; sys.exit(0 if runpy.run_path(sys.argv[1])"
         "['clang_with_libfuzzer']() else 1)", str(BENCH)]

pytestmark = [pytest.mark.gcc, pytest.mark.slow]


@pytest.fixture(scope="module")
def libfuzzer():
    if subprocess.run(PROBE, capture_output=True).returncode != 0:
        pytest.skip("clang with libFuzzer is not installed (apt-get install clang)")


@pytest.mark.parametrize("model", ["drive", "lqg"])
def test_a_short_fuzz_run_of_state_reading_and_setters_finds_nothing(libfuzzer, model, tmp_path):
    """10 s per model from the kept corpus (bench/fuzz_corpus): no finding, and the run
    did execute inputs (thousands; the number depends on the machine, so only > 0)."""
    done = subprocess.run([sys.executable, str(BENCH), "--seconds", "10", "--models", model,
                           "--work", str(tmp_path)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    line = next(l for l in done.stdout.splitlines() if l.startswith(f"{model}:"))
    assert "findings: 0" in line and " 0 executions" not in line, line
