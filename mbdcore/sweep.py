"""Many independent runs in parallel: a parallel map with progress, failures reported per
case, results in case order (docs/sweeps.md).

:func:`sweep` maps a picklable function over cases: over local processes by default
(``ProcessPoolExecutor``, one worker per CPU), in this process with ``workers=1``, or on
any ``concurrent.futures`` executor given to it -- a Dask cluster's too: a
``distributed.Client`` (or :func:`dask_executor`, ``pip install flexcosim[dask]``) hands
out such an executor.  The results come in case order and are the same, bit for bit,
whichever ran them (the same function on the same case); a case that fails is reported
with its case after the others have run (:class:`SweepError`, which keeps their
results); Ctrl-C cancels the cases not yet started.  Any study of the project's models
runs on it: the arm's closed-loop moves (:func:`controllers.design.tuning.evaluate_move`),
the ring truss's deployments (:func:`mbdcore.models.truss_deployment.deployment_case`).
Standard library only.
"""
from __future__ import annotations

import os
import signal
import traceback
from concurrent.futures import Executor, ProcessPoolExecutor, as_completed
from typing import Any, Callable, Iterable, NamedTuple, Sequence

__all__ = ["sweep", "SweepError", "CaseFailure", "chunk_size", "dask_executor",
           "CHUNKS_PER_WORKER"]

#: Chunks per worker at least, when cases are sent to local processes in chunks: enough
#: for the workers to end together (a worker's last chunk is 1/64 of its share) and for
#: the progress to move, few enough that sending a chunk costs nothing beside its cases.
CHUNKS_PER_WORKER = 64


class CaseFailure(NamedTuple):
    """A case of a sweep that raised: its place in the cases, the case, the exception as
    ``Type: message`` and its traceback (as text: an exception from another process or
    machine may not unpickle)."""
    index: int
    case: Any
    error: str
    traceback: str


class SweepError(RuntimeError):
    """Cases of a :func:`sweep` failed.  ``failures``: a :class:`CaseFailure` each, in
    case order; ``results``: every case's result, None where it failed."""

    def __init__(self, failures: Sequence[CaseFailure], results: list):
        self.failures, self.results = list(failures), results
        first = failures[0]
        super().__init__(
            f"{len(failures)} of {len(results)} cases failed (the others' results are in "
            f"SweepError.results); the first, case {first.index} {first.case!r}: {first.error}")


def sweep(fn: Callable[[Any], Any], cases: Iterable[Any], executor: Any = None,
          workers: int | None = None, chunksize: int | None = None,
          progress: Callable[[int, int], Any] | None = None) -> list:
    """``[fn(case) for case in cases]``, the cases run in parallel, results in case order.

    Parameters
    ----------
    fn : callable
        A module-level (picklable) function of one case.
    cases : iterable
        The cases (picklable).
    executor : concurrent.futures.Executor or distributed.Client, optional
        Where the cases run: any object with ``submit`` returning
        ``concurrent.futures.Future`` (a ``ThreadPoolExecutor``, a Dask ``Client``'s
        ``get_executor()``, or the ``Client`` itself), used and left open.  Default: local
        processes, a ``ProcessPoolExecutor`` created and shut down here.
    workers : int, optional
        Local processes, >= 1 (default: the CPU count; at most one per case); 1 runs the
        cases here, one after the other.  Not with ``executor``.
    chunksize : int, optional
        Cases sent to a worker at once, >= 1.  Default: :func:`chunk_size` for local
        processes, 1 on an executor given (a task there costs little beside a simulation).
    progress : callable, optional
        ``progress(done, total)``: called with 0 before the first case and after each case
        (each chunk) that finishes, in whatever order they finish
        (:class:`flexcosim.console.ProgressPrinter` shows the rate and the time left);
        the sweep prints nothing itself.

    Raises
    ------
    SweepError
        After every case has run, if any raised: each failing case with its exception
        and traceback, and the results of the others.
    KeyboardInterrupt
        Ctrl-C: the cases not started are cancelled (local processes ignore SIGINT and
        end the case they are in), then the interrupt goes on.
    """
    cases = list(cases)
    if executor is not None and workers is not None:
        raise ValueError(f"workers = {workers!r} is for the local processes a sweep "
                         "creates; accepted: workers or executor, not both")
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int)
                                or workers < 1):
        raise ValueError(f"workers = {workers!r} is invalid: accepted values are an "
                         "integer >= 1 (1: in this process)")
    if chunksize is not None and not (isinstance(chunksize, int) and chunksize >= 1):
        raise ValueError(f"chunksize = {chunksize!r} is invalid: accepted values are an "
                         "integer >= 1")
    if hasattr(executor, "get_executor"):   # a Dask Client: its concurrent.futures face
        executor = executor.get_executor()
    run = _Run(fn, len(cases), progress)
    workers = min(workers or os.cpu_count() or 1, max(len(cases), 1))
    if executor is not None:
        run.on(executor, _chunks(cases, chunksize or 1))
    elif workers == 1:
        for chunk in _chunks(cases, 1):
            run.take(_run_chunk(fn, chunk))
    else:
        chunks = _chunks(cases, chunksize or chunk_size(len(cases), workers))
        with ProcessPoolExecutor(workers, initializer=_leave_interrupts_to_the_parent) as pool:
            run.on(pool, chunks)
    return run.finish()


def chunk_size(n_cases: int, workers: int) -> int:
    """Cases per chunk on local processes: 1 (the progress after every case) until
    there are more than :data:`CHUNKS_PER_WORKER` cases per worker, then as many as make
    that number of chunks per worker, so that sending tiny cases does not cost more than
    running them."""
    return max(1, n_cases // (CHUNKS_PER_WORKER * workers))


class _Run:
    """The results of a sweep as its chunks come back, and its progress."""

    def __init__(self, fn: Callable[[Any], Any], total: int,
                 progress: Callable[[int, int], Any] | None):
        self.fn, self.total, self.progress = fn, total, progress
        self.results: list = [None] * total
        self.failures: list[CaseFailure] = []
        self.done = 0
        if progress is not None:
            progress(0, total)

    def take(self, outcomes: list[tuple[int, Any, CaseFailure | None]]) -> None:
        for index, result, failure in outcomes:
            self.results[index] = result
            if failure is not None:
                self.failures.append(failure)
        self.done += len(outcomes)
        if self.progress is not None:
            self.progress(self.done, self.total)

    def on(self, executor: Executor, chunks: list[list[tuple[int, Any]]]) -> None:
        """Run the chunks on ``executor``; Ctrl-C (or anything raised here) cancels those
        not started."""
        futures = [executor.submit(_run_chunk, self.fn, chunk) for chunk in chunks]
        try:
            for future in as_completed(futures):
                self.take(future.result())
        except BaseException:
            for future in futures:     # those done or running stay so
                future.cancel()
            raise

    def finish(self) -> list:
        if self.failures:
            self.failures.sort(key=lambda f: f.index)
            raise SweepError(self.failures, self.results)
        return self.results


def _chunks(cases: list, size: int) -> list[list[tuple[int, Any]]]:
    indexed = list(enumerate(cases))
    return [indexed[i:i + size] for i in range(0, len(indexed), size)]


def _run_chunk(fn: Callable[[Any], Any],
               chunk: list[tuple[int, Any]]) -> list[tuple[int, Any, CaseFailure | None]]:
    """Each case of a chunk, its failure kept rather than raised, so that one case does
    not take the other cases of its chunk with it.  The one code path of every way a
    sweep runs: results bit for bit the same."""
    outcomes = []
    for index, case in chunk:
        try:
            outcomes.append((index, fn(case), None))
        except Exception as e:   # noqa: BLE001 - any error of a case is that case's report
            failure = CaseFailure(index, case, f"{type(e).__name__}: {e}",
                                  traceback.format_exc())
            outcomes.append((index, None, failure))
    return outcomes


def _leave_interrupts_to_the_parent() -> None:
    """A worker process ignores SIGINT: Ctrl-C reaches the whole process group, and the
    parent alone cancels the sweep; a worker ends the case it is in (interrupted, it
    would send the interrupt back as that case's outcome, or die waiting for the next
    case, which breaks the pool)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def dask_executor(address: str | None = None, **cluster_kwargs):
    """A ``concurrent.futures`` executor on a Dask cluster: the scheduler at ``address``,
    or a local cluster (``cluster_kwargs`` go to ``distributed.LocalCluster``).
    Returns ``(executor, client)``; close the client when done."""
    try:
        from distributed import Client, LocalCluster
    except ImportError as e:  # pragma: no cover - depends on the optional extra
        raise ImportError("Dask is not installed: pip install 'flexcosim[dask]'") from e
    client = Client(address) if address else Client(LocalCluster(**cluster_kwargs))
    return client.get_executor(), client
