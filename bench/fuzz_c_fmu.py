"""Fuzz the C-source FMUs' saved-state reader and value setters (libFuzzer, clang, with
AddressSanitizer and UndefinedBehaviorSanitizer; a dev tool, not part of the package).

For each model (names of ``flexcosim export-c``), the model is exported with its
sources only, compiled with the harness ``bench/fuzz/c_fmu_fuzzer.c`` (what it feeds
the FMU and the property it checks are in its header comment) and run for the given
time from the kept corpus ``bench/fuzz_corpus/<model>/`` (a copy: the run's new inputs
go to a scratch folder; ``--merge`` adds those that reach new code to the kept corpus).
Prints per model the executions, the corpus size and the findings; a finding (a
sanitizer report or a broken property) leaves its input as ``crash-*`` in ``--work``
and makes the exit status 1.

    python bench/fuzz_c_fmu.py --minutes 10                 # drive and LQG, 10 min each
    python bench/fuzz_c_fmu.py --seconds 20 --models drive  # what the test suite runs
    python bench/fuzz_c_fmu.py --minutes 10 --merge         # keep what it found new

Needs clang with libFuzzer (Debian: ``apt-get install clang``).
"""
from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
HARNESS = HERE / "fuzz" / "c_fmu_fuzzer.c"
CORPUS = HERE / "fuzz_corpus"
FLAGS = ["-g", "-O1", "-std=c99", "-fsanitize=fuzzer,address,undefined",
         "-fno-sanitize-recover=all", "-fno-omit-frame-pointer"]


def clang_with_libfuzzer() -> str | None:
    """The clang that links a libFuzzer target here, or None (with why on stderr)."""
    clang = shutil.which("clang")
    if clang is None:
        return None
    with tempfile.TemporaryDirectory() as tmp:
        probe = Path(tmp) / "probe.c"
        probe.write_text("#include <stddef.h>\n#include <stdint.h>\n"
                         "int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) "
                         "{ (void)d; (void)n; return 0; }\n")
        done = subprocess.run([clang, "-fsanitize=fuzzer,address,undefined", str(probe), "-o",
                               str(Path(tmp) / "probe")], capture_output=True, text=True)
    return clang if done.returncode == 0 else None


def build(model: str, folder: Path, clang: str) -> Path:
    """The fuzzer binary of one export-c model, built in ``folder``."""
    # imported here: the project only where a target is built (``--help`` needs none)
    from flexcosim.catalog import C_MODELS, resolve
    from fmu.fmi.export_c import FMI2_HEADERS, export_c_fmu

    block, name, _ = C_MODELS[model]
    fmu = export_c_fmu(resolve(block), folder, model_name=name, compile=False)
    sources = folder / "sources"
    with zipfile.ZipFile(fmu) as z:
        for member in z.namelist():
            if member.startswith("sources/"):
                z.extract(member, folder)
    exe = folder / f"fuzz_{model}"
    subprocess.run([clang, *FLAGS, f"-I{sources}", f"-I{FMI2_HEADERS}", str(HARNESS),
                    *(str(sources / u) for u in ("fmi2_cs.c", "model.c", "model_data.c")),
                    "-lm", "-o", str(exe)], check=True)
    return exe


def run(exe: Path, model: str, seconds: float, work: Path, merge: bool) -> dict:
    """Fuzz for ``seconds``; the numbers libFuzzer reports, and the findings."""
    kept = CORPUS / model
    kept.mkdir(parents=True, exist_ok=True)
    scratch = work / f"corpus_{model}"
    shutil.rmtree(scratch, ignore_errors=True)
    shutil.copytree(kept, scratch)
    artifacts = work / f"findings_{model}"
    artifacts.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    done = subprocess.run([str(exe), str(scratch), f"-max_total_time={max(1, int(seconds))}",
                           "-timeout=20", "-rss_limit_mb=2048", "-print_final_stats=1",
                           "-max_len=4096", f"-artifact_prefix={artifacts}/"],
                          capture_output=True, text=True)
    elapsed = time.monotonic() - started
    log = done.stdout + done.stderr
    (work / f"fuzz_{model}.log").write_text(log)
    stat = dict(re.findall(r"stat::(\w+):\s+(\d+)", log))
    # crash-, leak-, timeout-, oom-: findings.  slow-unit- is libFuzzer's note of an input
    # that took longer than 10 s once; on a shared machine that is often the machine, so
    # it is run again alone and reported with that time (a finding only if still slow).
    findings, slow = [], []
    for path in sorted(artifacts.iterdir()):
        if path.name.startswith("slow-unit-"):
            started_again = time.monotonic()
            subprocess.run([str(exe), str(path)], capture_output=True)
            again = time.monotonic() - started_again
            slow.append(f"{path.name} ({again:.2f} s alone)")
            if again > 10:
                findings.append(path.name)
        else:
            findings.append(path.name)
    if done.returncode and not findings:
        findings.append(f"libFuzzer exit status {done.returncode} (see fuzz_{model}.log)")
    if merge and not findings:
        subprocess.run([str(exe), "-merge=1", str(kept), str(scratch)], capture_output=True)
    return {"model": model, "seconds": elapsed, "returncode": done.returncode,
            "executions": int(stat.get("number_of_executed_units", 0)),
            "corpus": len(list(scratch.iterdir())), "kept": len(list(kept.iterdir())),
            "findings": findings, "slow": slow,
            "tail": log[-3000:] if findings else ""}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    length = parser.add_mutually_exclusive_group()
    length.add_argument("--minutes", type=float, help="fuzzing time per model [min]")
    length.add_argument("--seconds", type=float, help="fuzzing time per model [s]")
    parser.add_argument("--models", default="drive,lqg",
                        help="export-c model names, comma-separated (default: drive,lqg)")
    parser.add_argument("--work", type=Path, help="scratch folder (default: a temporary one)")
    parser.add_argument("--merge", action="store_true",
                        help="add the inputs that reach new code to bench/fuzz_corpus")
    args = parser.parse_args(argv)
    seconds = 60 * args.minutes if args.minutes else (args.seconds or 60.0)
    clang = clang_with_libfuzzer()
    if clang is None:
        print("fuzz_c_fmu: no clang with libFuzzer here (apt-get install clang)", file=sys.stderr)
        return 2
    work = args.work or Path(tempfile.mkdtemp(prefix="fuzz_c_fmu_"))
    work.mkdir(parents=True, exist_ok=True)
    failed = False
    for model in args.models.split(","):
        folder = work / f"build_{model}"
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir()
        result = run(build(model, folder, clang), model, seconds, work, args.merge)
        print(f"{model}: {result['seconds']:.0f} s, {result['executions']} executions, corpus "
              f"{result['corpus']} inputs (kept {result['kept']}), findings: "
              f"{len(result['findings'])} {' '.join(result['findings'])}"
              + (f"; slow once: {', '.join(result['slow'])}" if result["slow"] else ""))
        if result["findings"]:
            failed = True
            print(result["tail"], file=sys.stderr)
    print(f"logs and findings in {work}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
