"""The step watchdog of ``Master.run(step_timeout=...)`` (:class:`Watchdog`)."""

from __future__ import annotations

import ctypes
import signal
import threading
import time

from fmu.cosim.errors import StepTimeout

__all__ = ["Watchdog"]


class Watchdog:
    """Stops a run whose component does not return from ``do_step`` within ``timeout``
    seconds of wall time: a thread that watches the run's state (the running thread
    stamps each ``do_step`` with the clock) and raises :class:`StepTimeout` in the
    running thread.

    In the main thread the watchdog sends it SIGALRM (its handler, installed for the run
    and restored after, raises StepTimeout), which also wakes a blocking call such as
    ``time.sleep``; in another thread it uses ``PyThreadState_SetAsyncExc``.  Either way
    the exception takes effect at the next Python bytecode: a Python block stuck in a
    loop or a wait is stopped, an FMU stuck inside its C code is not (C code cannot be
    interrupted in-process; the timeout then takes effect when, if ever, the call
    returns).
    """

    def __init__(self, state: dict, timeout: float):
        self.state, self.timeout = state, timeout
        self.fired: tuple | None = None
        self._target = threading.get_ident()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._previous = None
        if threading.current_thread() is threading.main_thread() and \
                hasattr(signal, "pthread_kill") and hasattr(signal, "SIGALRM"):
            self._previous = signal.signal(signal.SIGALRM, self._on_alarm)
        self._thread = threading.Thread(target=self._watch, name="flexcosim-step-watchdog",
                                        daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        poll = min(max(self.timeout / 10.0, 1e-3), 0.5)
        state = self.state
        while not self._stop.wait(poll):
            since = state.get("since")
            if state["phase"] != "do_step" or since is None:
                continue
            late = time.perf_counter() - since
            if late > self.timeout:
                with self._lock:
                    if self._stop.is_set():
                        return
                    self.fired = (state["comp"], state["t"], late)
                    if self._previous is not None:
                        signal.pthread_kill(self._target, signal.SIGALRM)
                    else:
                        ctypes.pythonapi.PyThreadState_SetAsyncExc(
                            ctypes.c_ulong(self._target), ctypes.py_object(StepTimeout))
                return

    @staticmethod
    def _on_alarm(signum, frame):
        raise StepTimeout()

    def stop(self) -> None:
        with self._lock:
            self._stop.set()
        self._thread.join()
        if self._previous is not None:
            signal.signal(signal.SIGALRM, self._previous)
            self._previous = None
