"""Sweeps of closed-loop co-simulations through concurrent.futures executors."""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from controllers.design.tuning import evaluate_move, sweep

# short, coarse moves: the sweep machinery is under test, not the arm
CASES = [{"ctrl": {"kp1": kp}, "ref": {"move_time": 0.2, "shaper": "none"}, "step": 5e-3}
         for kp in (100.0, 200.0)]


def test_sweep_in_processes_equals_a_loop():
    here = [evaluate_move(c) for c in CASES]
    there = sweep(evaluate_move, CASES, max_workers=2)
    assert [r["residual_vibration"] for r in there] == [r["residual_vibration"] for r in here]
    assert [r["ctrl"]["kp1"] for r in there] == [100.0, 200.0]
    with ThreadPoolExecutor(2) as pool:
        assert sweep(evaluate_move, CASES, pool) == there


def test_sweep_on_a_local_dask_cluster():
    pytest.importorskip("distributed")
    from controllers.design.tuning import dask_executor

    executor, client = dask_executor(n_workers=1, threads_per_worker=1, processes=False)
    try:
        got = sweep(evaluate_move, CASES[:1], executor)
    finally:
        client.close()
    assert got[0]["residual_vibration"] == evaluate_move(CASES[0])["residual_vibration"]


def test_sweep_reports_its_progress_in_case_order_and_prints_nothing(capsys):
    calls = []
    with ThreadPoolExecutor(2) as pool:
        got = sweep(abs, [-1.0, -2.0, -3.0], pool, progress=lambda done, total:
                    calls.append((done, total)))
    assert got == [1.0, 2.0, 3.0]
    assert calls == [(0, 3), (1, 3), (2, 3), (3, 3)]
    assert capsys.readouterr() == ("", "")
