"""An fmpy FMU2Slave driven by hand, recording what the FMU logs (shared by tests)."""
from fmpy.fmi1 import FMICallException
from fmpy.fmi2 import FMU2Slave, defaultCallbacks, fmi2CallbackFunctions, fmi2CallbackLoggerTYPE

FMI2_ERROR, FMI2_DISCARD, FMI2_WARNING = 3, 2, 1


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
        return [m for s, m in self.messages if s == FMI2_ERROR]

    def warnings(self) -> list[str]:
        return [m for s, m in self.messages if s == FMI2_WARNING]

    def close(self):
        try:
            self.fmu.terminate()
        except FMICallException:  # not allowed in every state (a failed initialization)
            pass
        self.fmu.freeInstance()
