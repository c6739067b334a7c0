"""The two ways the tests drive an FMU by hand.

* The plain C FMI host ``support/c/host.c``: compiled once per session (the ``host``
  fixture of conftest.py), run in a subprocess whose environment holds nothing but
  ``PATH=/usr/bin:/bin`` (or nothing at all); what it printed (:class:`HostRun`), and
  unzipped FMUs to point it at (:class:`Unzipped`, :func:`start`).
* An fmpy ``FMU2Slave`` in this process that records what the FMU logs
  (:class:`Instance`).
"""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from fmpy import extract, read_model_description
from fmpy.fmi1 import FMICallException
from fmpy.fmi2 import FMU2Slave, defaultCallbacks, fmi2CallbackFunctions, fmi2CallbackLoggerTYPE

from fmu.fmi.export_c import FMI2_HEADERS

HOST_SOURCE = Path(__file__).resolve().parent / "c" / "host.c"
CLEAN_ENV = {"PATH": "/usr/bin:/bin"}
#: FMI 2.0 status codes (fmi2OK, fmi2Warning, fmi2Discard, fmi2Error)
OK, WARNING, DISCARD, ERROR = 0, 1, 2, 3


class Unzipped:
    """An extracted FMU: where its binary and resources are, its GUID and value references."""

    def __init__(self, fmu_file: Path, folder: Path):
        self.fmu_file = fmu_file
        self.dir = Path(extract(str(fmu_file), str(folder)))
        self.md = read_model_description(str(fmu_file))
        self.identifier = self.md.coSimulation.modelIdentifier
        self.guid = self.md.guid
        self.vr = {v.name: v.valueReference for v in self.md.modelVariables}
        self.binary = self.dir / "binaries" / "linux64" / f"{self.identifier}.so"
        self.resources = self.dir / "resources"

    def uri(self) -> str:
        return self.resources.as_uri()

    def vrs(self, *names) -> str:
        return " ".join(str(self.vr[n]) for n in names)

    def copy(self, folder: Path) -> "Unzipped":
        """A copy to break things in."""
        twin = object.__new__(Unzipped)
        twin.__dict__.update(self.__dict__)
        twin.dir = Path(shutil.copytree(self.dir, folder))
        twin.binary = twin.dir / "binaries" / "linux64" / f"{self.identifier}.so"
        twin.resources = twin.dir / "resources"
        return twin


class HostRun:
    """What one run of the C host printed."""

    def __init__(self, stdout: str):
        self.lines = stdout.splitlines()
        self.logs = [line.split(" ", 4)[1:] for line in self.lines if line.startswith("LOG ")]

    def statuses(self, command: str) -> list[int]:
        return [int(line.split()[-1]) for line in self.lines if line.startswith(f"{command} status ")]

    def values(self) -> list[list[float]]:
        return [[float(v) for v in line.split()[1:]] for line in self.lines if line.startswith("values")]

    def instantiated(self) -> list[bool]:
        return [line == "instantiate ok" for line in self.lines if line.startswith("instantiate ")]

    def errors(self) -> list[str]:
        return [message for _, status, _, message in self.logs if int(status) >= ERROR]


def make_host(folder: Path):
    """Compile the host into ``folder``; returns run(script, env=None) -> HostRun."""
    exe = folder / "host"
    subprocess.run(["gcc", "-O2", "-Wall", f"-I{FMI2_HEADERS}", str(HOST_SOURCE), "-o", str(exe),
                    "-ldl", "-lpthread"], check=True, capture_output=True)

    def run(script: str, env: dict | None = None, bare: bool = False) -> HostRun:
        """``bare``: an empty environment, as ``env -i`` starts a host (no PATH)."""
        done = subprocess.run([str(exe)], input=script, capture_output=True, text=True,
                              env={} if bare else dict(CLEAN_ENV, **(env or {})), cwd=folder,
                              timeout=120)
        # The process ends normally: no abort at exit, nothing on stderr (glibc's
        # "free(): corrupted ..." and Python's fatal errors would go there).
        assert done.returncode == 0 and done.stdout.endswith("host done\n"), \
            f"exit {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        assert done.stderr == ""
        return HostRun(done.stdout)

    return run



def start(fmu: Unzipped, slot=0, name="inst", logging=0, uri=None, params="") -> str:
    """Script lines: load, instantiate, initialise (params: extra lines in init mode)."""
    return (f"load {fmu.binary}\n"
            f"instantiate {slot} {name} {fmu.guid} {uri or fmu.uri()} {logging}\n"
            f"init {slot} 0\n{params}exit_init {slot}\n")



class Instance:
    """An fmpy FMU2Slave that records the log messages it receives."""

    def __init__(self, md, unzipped, name="instance", step=0.01, **params):
        self.vr = {v.name: v.valueReference for v in md.modelVariables}
        self.messages: list[tuple[int, str]] = []

        def record(env, instance, status, category, message):
            self.messages.append((status, message.decode()))

        self._logger = fmi2CallbackLoggerTYPE(record)  # kept alive as long as the FMU
        self._callbacks = fmi2CallbackFunctions()
        self._callbacks.logger = self._logger
        self._callbacks.allocateMemory = defaultCallbacks.allocateMemory
        self._callbacks.freeMemory = defaultCallbacks.freeMemory
        self.fmu = FMU2Slave(guid=md.guid, unzipDirectory=unzipped,
                             modelIdentifier=md.coSimulation.modelIdentifier, instanceName=name)
        self.fmu.instantiate(callbacks=self._callbacks, loggingOn=True)
        self.fmu.setupExperiment(startTime=0.0)
        self.fmu.enterInitializationMode()
        #: FMI status codes of parameter settings the FMU refused (with a logged error)
        self.refused: dict[str, int] = {}
        for key, value in params.items():
            try:
                self.set(key, value)
            except FMICallException as exc:
                self.refused[key] = exc.status
        #: FMI status of fmi2ExitInitializationMode if it failed (parameters it cannot build), else None
        self.exit_refused: int | None = None
        try:
            self.fmu.exitInitializationMode()
        except FMICallException as exc:
            self.exit_refused = exc.status
        self.t = 0.0
        self.h = step

    def set(self, name, value):
        setter = {str: self.fmu.setString, int: self.fmu.setInteger}.get(type(value), self.fmu.setReal)
        setter([self.vr[name]], [value])

    def get(self, *names) -> list[float]:
        return self.fmu.getReal([self.vr[n] for n in names])

    def step(self, h=None):
        h = self.h if h is None else h
        self.fmu.doStep(self.t, h)
        self.t += h

    def errors(self) -> list[str]:
        return [m for s, m in self.messages if s == ERROR]

    def warnings(self) -> list[str]:
        return [m for s, m in self.messages if s == WARNING]

    def close(self):
        try:
            self.fmu.terminate()
        except FMICallException:  # not allowed in every state (a failed initialization)
            pass
        self.fmu.freeInstance()
