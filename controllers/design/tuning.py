"""Tuning at scale: many closed-loop co-simulations through any ``concurrent.futures.Executor``.

:func:`sweep` maps a picklable function over cases with an executor: local processes
by default (``ProcessPoolExecutor``), a Dask cluster with :func:`dask_executor`
(``pip install flexcosim[dask]``) — the same code path, since a
``distributed.Client`` hands out a ``concurrent.futures`` executor.
"""
from __future__ import annotations

from concurrent.futures import Executor, ProcessPoolExecutor
from typing import Any, Callable, Iterable, Mapping

import numpy as np

from controllers.design.validation import RESIDUAL_WINDOW, closed_loop_move, move_report
from controllers.laws.input_shaping import ShapedQuinticTrajectory
from controllers.laws.joint_pd import JointPDController
from controllers.laws.trajectory import QuinticJointTrajectory

__all__ = ["sweep", "dask_executor", "evaluate_move", "SETTLE_ALLOWANCE"]

#: Time [s] :func:`evaluate_move` records past the reference's end before the residual
#: window, for the joints to settle.
SETTLE_ALLOWANCE = 1.0


def sweep(fn: Callable[[Any], Any], cases: Iterable[Any], executor: Executor | None = None,
          max_workers: int | None = None,
          progress: Callable[[int, int], Any] | None = None) -> list:
    """``[fn(case) for case in cases]``, evaluated by ``executor``, results in case order.

    Parameters
    ----------
    fn : callable
        A module-level (picklable) function.
    executor : concurrent.futures.Executor, optional
        Default: a ``ProcessPoolExecutor(max_workers)`` created and shut down here.
    progress : callable, optional
        ``progress(done, total)``: called with 0 before the first result and after each
        result, in case order (a case that finishes early is counted when those before
        it have); the sweep prints nothing itself.
    """
    cases = list(cases)
    if executor is not None:
        return _collect(executor.map(fn, cases), len(cases), progress)
    with ProcessPoolExecutor(max_workers=max_workers) as pool:
        return _collect(pool.map(fn, cases), len(cases), progress)


def _collect(results: Iterable[Any], total: int,
             progress: Callable[[int, int], Any] | None) -> list:
    if progress is None:
        return list(results)
    progress(0, total)
    done = []
    for r in results:
        done.append(r)
        progress(len(done), total)
    return done


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


def evaluate_move(case: Mapping[str, Any]) -> dict:
    """One point-to-point move of the arm (docs/benchmarks.md §1) with joint PD.

    ``case`` keys: ``ctrl`` (JointPDController parameters), ``arm`` (arm parameters,
    e.g. a payload ``m_p``), ``ref`` (ShapedQuinticTrajectory parameters; absent:
    the plain 2 s quintic), ``step`` [s] (default 1e-3).  Returns the case and the
    :func:`~controllers.design.validation.move_report` figures (``residual_vibration``
    [m]: the project's one definition, over the second after the joints settle).  The
    record runs :data:`SETTLE_ALLOWANCE` plus the residual window past the reference's
    end; joints settling later than that give a residual vibration of
    :data:`~controllers.design.validation.NOT_SETTLED` (``inf``).
    """

    step = float(case.get("step", 1e-3))
    if "ref" in case:
        ref = ShapedQuinticTrajectory(**case["ref"])
        t_end = ref.duration
    else:
        ref = QuinticJointTrajectory()
        t_end = ref.params["move_time"]
    stop = float(np.ceil((t_end + SETTLE_ALLOWANCE + RESIDUAL_WINDOW) / step) * step)
    result = closed_loop_move(JointPDController(**case.get("ctrl", {})), ref,
                              arm_params=case.get("arm"), stop_time=stop, step=step)
    return {**dict(case), **move_report(result, t_end)}
