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
#: A hang [s]: an input takes well under a second alone (the harness bounds its steps),
#: but on a loaded machine libFuzzer's wall-clock alarm caught 20 s stalls of inputs that
#: take 0.06 s alone; a timeout is run again alone, as a slow unit, before it counts.
TIMEOUT = 60
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
    findings, slow, seen, executions, logs = [], [], set(), 0, []
    while not findings:
        remaining = seconds - (time.monotonic() - started)
        if remaining < 1:
            break
        done = subprocess.run([str(exe), str(scratch), f"-max_total_time={int(remaining)}",
                               f"-timeout={TIMEOUT}", "-rss_limit_mb=2048",
                               "-print_final_stats=1", "-max_len=4096",
                               f"-artifact_prefix={artifacts}/"],
                              capture_output=True, text=True)
        log = done.stdout + done.stderr
        logs.append(log)
        executions += sum(int(n) for n in re.findall(r"stat::number_of_executed_units:\s+(\d+)",
                                                     log))
        # crash-, leak-, oom-: findings.  slow-unit- (an input that took over 10 s once) and
        # timeout- (over TIMEOUT) stop libFuzzer too, but on a shared machine they are often
        # the machine: the input is run again alone and reported with that time, a finding
        # only if still slow; the run then goes on for the time left.
        new = [path for path in sorted(artifacts.iterdir()) if path.name not in seen]
        for path in new:
            seen.add(path.name)
            if path.name.startswith(("slow-unit-", "timeout-")):
                started_again = time.monotonic()
                again_done = subprocess.run([str(exe), f"-timeout={TIMEOUT}", str(path)],
                                            capture_output=True)
                again = time.monotonic() - started_again
                slow.append(f"{path.name} ({again:.2f} s alone)")
                if again > 10 or again_done.returncode:
                    findings.append(path.name)
            else:
                findings.append(path.name)
        if done.returncode and not new:
            findings.append(f"libFuzzer exit status {done.returncode} (see fuzz_{model}.log)")
        if done.returncode == 0:
            break
    elapsed = time.monotonic() - started
    (work / f"fuzz_{model}.log").write_text("\n".join(logs))
    if merge and not findings:
        subprocess.run([str(exe), "-merge=1", str(kept), str(scratch)], capture_output=True)
    return {"model": model, "seconds": elapsed, "executions": executions,
            "corpus": len(list(scratch.iterdir())), "kept": len(list(kept.iterdir())),
            "findings": findings, "slow": slow,
            "tail": logs[-1][-3000:] if findings and logs else ""}


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
