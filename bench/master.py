"""Co-simulation master benchmark (issue 5, "Benchmark"): prints, asserts nothing.

* per-step cost of one FMU in fmpy (the C first-order lag of tests/support/c/lag.c): fmi2DoStep
  alone and a full set-input / step / get-outputs cycle [us];
* master per-step cost and overhead with 1, 2 and 3 FMUs in a chain;
* the closed-loop two-link arm (flexcosim.demo.closed_loop_system) at 1 ms as a real-time
  factor, with in-process blocks and, if they can be built, with FMUs;
* the same loop of three C-source FMUs (trajectory, joint PD, arm with its default
  settings) at 1 ms: the master's Python loop, its compiled loop (fmu.cosim.compiled_loop)
  and a hand-written C loop over the same FMUs (the ``cosim`` command of
  tests/support/c/host.c), side by side, per communication step and as real-time factors;
* the cost of a get/set FMU state pair (reused fmi2FMUstate, and serialized);
* a soak of 10^6 communication steps of the C FMU under the master with the
  resident memory (RSS) at the start and the end.

    python bench/master.py [--soak 1000000] [--arm-time 1.0] [--no-arm-fmu]
                           [--c-loop-time 5.0] [--only-c-loop]
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

from support.c_fmus import build_lag_fmu  # noqa: E402
from support.fmi import Unzipped, make_host, start  # noqa: E402

from fmu.cosim.components import BlockComponent  # noqa: E402
from fmu.cosim.fmu_component import FMUComponent  # noqa: E402
from fmu.cosim.master import Master  # noqa: E402
from fmu.cosim.system import System  # noqa: E402


def rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return float("nan")


def per_call(fn, n: int) -> float:
    """Best of 3 of the mean wall time of fn() [us]."""
    best = float("inf")
    for _ in range(3):
        t = time.perf_counter()
        for _ in range(n):
            fn()
        best = min(best, (time.perf_counter() - t) / n)
    return best * 1e6


def raw_fmu(fmu_path: Path, n: int) -> dict:
    from fmpy import extract, read_model_description
    from fmpy.fmi2 import FMU2Slave

    md = read_model_description(str(fmu_path))
    d = extract(str(fmu_path))
    fmu = FMU2Slave(guid=md.guid, unzipDirectory=d, modelIdentifier="FirstOrderLag",
                    instanceName="raw")
    fmu.instantiate()
    fmu.setupExperiment(startTime=0.0)
    fmu.enterInitializationMode()
    fmu.exitInitializationMode()
    vr_u, vr_out = [0], [1, 2]
    t = [0.0]

    def step():
        fmu.doStep(t[0], 1e-3)
        t[0] += 1e-3

    def cycle():
        fmu.setReal(vr_u, [0.5])
        fmu.doStep(t[0], 1e-3)
        fmu.getReal(vr_out)
        t[0] += 1e-3

    out = {"doStep": per_call(step, n), "set+doStep+get": per_call(cycle, n)}
    state = fmu.getFMUstate()
    out["get+set state (handle)"] = per_call(
        lambda: (fmu.fmi2GetFMUstate(fmu.component, __import__("ctypes").byref(state)),
                 fmu.setFMUstate(state)), n)

    def serialized():
        s = fmu.getFMUstate()
        b = fmu.serializeFMUstate(s)
        fmu.freeFMUstate(s)
        s = fmu.deSerializeFMUstate(b)
        fmu.setFMUstate(s)
        fmu.freeFMUstate(s)

    out["get+set state (serialized)"] = per_call(serialized, max(n // 10, 1))
    fmu.freeFMUstate(state)
    fmu.terminate()
    fmu.freeInstance()
    return out


def chain(fmu_path: Path, n_fmus: int) -> System:
    comps = [FMUComponent(f"p{i}", fmu_path, {"T": 0.1, "K": 1.0}) for i in range(n_fmus)]
    comps[0].parameters["u"] = 1.0
    return System(comps, [(f"p{i}.x", f"p{i + 1}.u") for i in range(n_fmus - 1)])


def master_cost(fmu_path: Path, n_fmus: int, steps: int, method: str,
                compiled: bool = True) -> float:
    master = Master(chain(fmu_path, n_fmus), 1e-3, method, compiled=compiled)
    master.run(0.01)  # warm-up
    t = time.perf_counter()
    master.run(steps * 1e-3, record_every=steps)
    return (time.perf_counter() - t) / steps * 1e6


def arm(stop: float, use_fmus: bool) -> tuple[float, float]:
    from flexcosim.demo import closed_loop_system

    folder = ROOT / "results" / "fmus" if use_fmus else None
    system = closed_loop_system(folder)
    master = Master(system, 1e-3, "gauss-seidel")
    t = time.perf_counter()
    master.run(stop)
    wall = time.perf_counter() - t
    return wall, stop / wall


def arm_state_pair(n: int) -> float | None:
    """get+set state of the arm FMU built by fmu.fmi.build (None if it cannot)."""
    from flexcosim.demo import ensure_fmu

    comp = FMUComponent("arm", ensure_fmu("manipulator", ROOT / "results" / "fmus"))
    if not comp.model_description.coSimulation.canGetAndSetFMUstate:
        return None
    comp.initialize(0.0, 1.0)
    try:
        comp.do_step(0.0, 1e-3)
        snap = comp.snapshot()
        return per_call(lambda: (comp.snapshot(), comp.restore(snap)), n)
    finally:
        comp.terminate()


def c_closed_loop(stop: float, h: float = 1e-3, repeat: int = 3,
                  arm_substeps: int | None = None) -> None:
    """The arm's closed loop of three C FMUs: Python loop, compiled loop, C host."""
    from flexcosim import demo

    folder = ROOT / "results" / "fmus"
    arm = {} if arm_substeps is None else {"substeps": arm_substeps}

    def closed_loop_system(folder, c_fmus):
        return demo.closed_loop_system(folder, arm_params=arm, c_fmus=c_fmus)

    n = int(round(stop / h))
    settings = "its defaults" if arm_substeps is None else f"substeps = {arm_substeps}"
    print(f"\nclosed loop of three C FMUs (trajectory, joint PD, arm with {settings}), "
          f"{h * 1e3:g} ms step, {stop:g} s simulated, gauss-seidel, best of {repeat} "
          "rounds (each round runs the three loops one after the other: the load of a "
          "shared machine hits them alike)")
    names = {False: "master, Python loop", True: "master, compiled loop"}
    best = {False: float("inf"), True: float("inf")}
    setup = dict(best)
    results = {}
    host_us, slots = float("inf"), {}
    with tempfile.TemporaryDirectory() as tmp:
        try:
            host = _host_loop(Path(tmp), closed_loop_system(folder, c_fmus=True), h, n)
        except Exception as e:   # no gcc: the host cannot be built
            host = None
            print(f"  hand-written C loop not available: {type(e).__name__}: {str(e)[:200]}")
        for _ in range(repeat):
            for compiled in (False, True):
                # start-up (unzipping, instantiation, first point, freeing): a one-step run
                t = time.perf_counter()
                Master(closed_loop_system(folder, c_fmus=True), h, compiled=compiled).run(h)
                setup[compiled] = min(setup[compiled], time.perf_counter() - t)
                master = Master(closed_loop_system(folder, c_fmus=True), h, compiled=compiled)
                t = time.perf_counter()
                results[compiled] = master.run(stop)
                best[compiled] = min(best[compiled], time.perf_counter() - t)
            if host is not None:
                us, shares = host()
                if us < host_us:
                    host_us, slots = us, shares
    print(f"  {'loop':34s} {'us/step':>9s} {'RTF':>7s} {'start-up [s]':>13s}")
    for compiled in (False, True):
        per_step = (best[compiled] - setup[compiled]) / n
        print(f"  {names[compiled]:34s} {per_step * 1e6:9.1f} {h / per_step:7.1f} "
              f"{setup[compiled]:13.3f}   (whole run: RTF {stop / best[compiled]:.1f})")
    if slots:
        print(f"  {'hand-written C loop (host.c)':34s} {host_us:9.1f} {h / (host_us * 1e-6):7.1f}"
              f"   (the FMUs' own cost; one set/step/get per FMU per step)")
        print("  of which per FMU (set, step, get) [us]: "
              + ", ".join(f"{name} {us:.1f}" for name, us in slots.items()))
    same = results[False].data.tobytes() == results[True].data.tobytes()
    print(f"  compiled loop equals the Python loop bit for bit: {same}")


def _host_loop(folder: Path, system, h: float, n: int):
    """host.c's ``cosim`` over the system's FMUs in the master's Gauss-Seidel order, as a
    function that runs it in a fresh process and returns its us per step and the share
    of each FMU."""
    order = Master(system, h).default_order()
    comps = {c.name: c for c in system.components}
    fmus = {name: Unzipped(comps[name].fmu_path, folder / name) for name in order}
    slot = {name: k for k, name in enumerate(order)}
    links = []
    for dst, src in system.connections.items():
        (sc, sv), (dc, dv) = src.split(".", 1), dst.split(".", 1)
        links += [slot[sc], fmus[sc].vr[sv], slot[dc], fmus[dc].vr[dv]]
    params = {name: "".join(f"set_{'integer' if isinstance(v, int) else 'real'} {slot[name]} "
                            f"{fmus[name].vr[p]} {v!r}\n"
                            for p, v in comps[name].parameters.items())
              for name in order}
    script = "".join(start(fmus[name], slot[name], name, params=params[name]) for name in order)
    script += f"cosim {h!r} {n} {len(order)} {len(links) // 4} {' '.join(map(str, links))}\n"
    host = make_host(folder)

    def run() -> tuple[float, dict]:
        lines = host(script).lines
        assert "cosim status 0" in lines, lines[-5:]
        us = float(next(x for x in lines if x.startswith("us_per_step")).split()[1])
        shares = next(x for x in lines if x.startswith("us_per_slot")).split()[1:]
        return us, dict(zip(order, map(float, shares)))

    return run


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--soak", type=int, default=1_000_000, help="soak steps (default 1e6)")
    ap.add_argument("--steps", type=int, default=20_000, help="steps per timing (default 2e4)")
    ap.add_argument("--arm-time", type=float, default=1.0, help="simulated time of the arm [s]")
    ap.add_argument("--no-arm-fmu", action="store_true", help="skip the arm as FMUs")
    ap.add_argument("--c-loop-time", type=float, default=5.0,
                    help="simulated time of the loop of three C FMUs [s]")
    ap.add_argument("--arm-substeps", type=int, default=None,
                    help="the C arm's substeps in the loop of three C FMUs (default: its own)")
    ap.add_argument("--only-c-loop", action="store_true",
                    help="only the loop of three C FMUs (Python, compiled, C host)")
    args = ap.parse_args(argv)
    c_closed_loop(args.c_loop_time, arm_substeps=args.arm_substeps)
    if args.only_c_loop:
        return 0

    fmu_path = build_lag_fmu(Path(tempfile.gettempdir()) / "flexcosim-bench-c-fmu")
    print(f"C FMU: {fmu_path}")

    raw = raw_fmu(fmu_path, args.steps)
    print("\none FMU in fmpy (C first-order lag), per call [us]")
    for k, v in raw.items():
        print(f"  {k:28s} {v:8.2f}")

    print("\nmaster, per communication step [us] (chain of C FMUs, fixed step, no recording)")
    cycle = raw["set+doStep+get"]
    for compiled in (False, True):
        print(f"  {'compiled loop' if compiled else 'Python loop'}")
        print(f"  {'FMUs':>4s} {'jacobi':>9s} {'gauss-seidel':>13s} {'overhead (GS)':>14s}")
        for n in (1, 2, 3):
            j = master_cost(fmu_path, n, args.steps, "jacobi", compiled)
            g = master_cost(fmu_path, n, args.steps, "gauss-seidel", compiled)
            print(f"  {n:4d} {j:9.2f} {g:13.2f} {g - n * cycle:14.2f}")
    print(f"  (overhead = master cost - FMUs x {cycle:.2f} us of raw set/step/get through "
          "fmpy, itself mostly fmpy's Python)")

    print(f"\nclosed-loop two-link arm, 1 ms step, {args.arm_time:g} s simulated (gauss-seidel)")
    wall, rtf = arm(args.arm_time, use_fmus=False)
    print(f"  blocks in-process: wall {wall:.2f} s, real-time factor {rtf:.2f}")
    if not args.no_arm_fmu:
        try:
            wall, rtf = arm(args.arm_time, use_fmus=True)
            print(f"  controller and arm as FMUs: wall {wall:.2f} s, real-time factor {rtf:.2f}")
            pair = arm_state_pair(200)
            print(f"  arm FMU get+set state pair: "
                  f"{'not supported' if pair is None else f'{pair:.1f} us'}")
        except Exception as e:  # the FMU builder may be mid-rewrite: report, do not stop
            print(f"  FMU version not available: {type(e).__name__}: {str(e)[:200]}")

    print(f"\nsoak: {args.soak} communication steps of the C FMU under the master "
          "(one row recorded per 10^4 steps)")
    master = Master(chain(fmu_path, 1), 1e-3, "gauss-seidel")
    master.run(0.1)
    before = rss_mb()
    t = time.perf_counter()
    r = master.run(args.soak * 1e-3, record_every=10_000)
    wall = time.perf_counter() - t
    after = rss_mb()
    print(f"  {wall:.1f} s wall, {wall / args.soak * 1e6:.2f} us/step, {len(r)} rows, "
          f"x(end) = {r['p0.x'][-1]:.12g}")
    print(f"  RSS start {before:.1f} MB, end {after:.1f} MB (change {after - before:+.2f} MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
