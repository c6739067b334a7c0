"""Sweeps of closed-loop co-simulations: local processes by default, this process with
``workers=1``, any ``concurrent.futures`` executor (a Dask client's too); results in case
order and bit for bit the same whichever ran them; a failing case reported with its case,
the other results kept; Ctrl-C cancels."""
from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from controllers.design.tuning import evaluate_move
from mbdcore.sweep import CHUNKS_PER_WORKER, SweepError, chunk_size, sweep
from support import ROOT

# short, coarse moves: the sweep machinery is under test, not the arm
CASES = [{"ctrl": {"kp1": kp}, "ref": {"move_time": 0.2, "shaper": "none"}, "step": 5e-3}
         for kp in (100.0, 400.0)]


@pytest.fixture(scope="module")
def in_this_process():
    return sweep(evaluate_move, CASES, workers=1)


def test_processes_threads_and_this_process_give_the_same_results_in_case_order(
        in_this_process):
    """The same function on the same case: the same numbers to the last bit (repr of
    every float; a nan residual compares equal so), in case order."""
    assert [r["ctrl"]["kp1"] for r in in_this_process] == [100.0, 400.0]
    assert repr(sweep(evaluate_move, CASES, workers=2)) == repr(in_this_process)
    with ThreadPoolExecutor(2) as pool:
        assert repr(sweep(evaluate_move, CASES, pool)) == repr(in_this_process)


def test_results_come_in_case_order_whatever_order_the_cases_finish_in():
    """The first cases sleep longest, so they finish last."""
    delays = [0.03, 0.02, 0.01, 0.0]
    with ThreadPoolExecutor(4) as pool:
        assert sweep(_slept, delays, pool) == delays
    assert sweep(_slept, delays, workers=2, chunksize=3) == delays


def _slept(seconds: float) -> float:
    time.sleep(seconds)
    return seconds


@pytest.mark.parametrize("how", [{"workers": 1}, {"workers": 2}, {"workers": 2, "chunksize": 2}])
def test_a_failing_case_is_reported_with_its_case_and_the_others_are_kept(how):
    """math.sqrt(-1) raises: the sweep runs every case, then reports that one (its
    place, the case, the error, its traceback) with the results of the others, those
    of its own chunk included."""
    with pytest.raises(SweepError) as caught:
        sweep(math.sqrt, [4.0, -1.0, 9.0, -4.0, 16.0], **how)
    error = caught.value
    assert error.results == [2.0, None, 3.0, None, 4.0]
    assert [(f.index, f.case, f.error) for f in error.failures] == [
        (1, -1.0, "ValueError: math domain error"), (3, -4.0, "ValueError: math domain error")]
    assert "ValueError: math domain error" in error.failures[0].traceback
    assert str(error).startswith("2 of 5 cases failed")
    assert "the first, case 1 -1.0: ValueError: math domain error" in str(error)


def test_progress_counts_every_case_and_the_sweep_prints_nothing(capsys):
    calls = []
    with ThreadPoolExecutor(2) as pool:
        got = sweep(abs, [-1.0, -2.0, -3.0], pool, progress=lambda done, total:
                    calls.append((done, total)))
    assert got == [1.0, 2.0, 3.0]
    assert calls == [(0, 3), (1, 3), (2, 3), (3, 3)]
    calls.clear()
    sweep(abs, range(-10, 0), workers=2, chunksize=4, progress=lambda *a: calls.append(a))
    assert calls[0] == (0, 10) and calls[-1] == (10, 10) and len(calls) == 4
    assert capsys.readouterr() == ("", "")


def test_chunks_only_when_there_are_many_cases_per_worker():
    assert chunk_size(50, 2) == 1
    assert chunk_size(CHUNKS_PER_WORKER * 2 * 5, 2) == 5


@pytest.mark.parametrize("kwargs, words", [
    ({"workers": 0}, "workers = 0 is invalid: accepted values are an integer >= 1"),
    ({"workers": 2.0}, "workers = 2.0 is invalid"),
    ({"chunksize": 0}, "chunksize = 0 is invalid"),
    ({"workers": 2, "executor": ThreadPoolExecutor(1)}, "workers or executor, not both"),
])
def test_bad_arguments_are_refused_naming_them(kwargs, words):
    with pytest.raises(ValueError, match=words):
        sweep(abs, [1.0], **kwargs)


def test_a_dask_client_is_taken_as_it_is():
    pytest.importorskip("distributed")
    from mbdcore.sweep import dask_executor

    executor, client = dask_executor(n_workers=1, threads_per_worker=1, processes=False)
    try:
        assert repr(sweep(evaluate_move, CASES[:1], executor)) == repr(
            sweep(evaluate_move, CASES[:1], client)) == repr([evaluate_move(CASES[0])])
    finally:
        client.close()


#: a sweep of sleeping cases that says when its first cases are done; Ctrl-C comes then
INTERRUPTED = """
import signal, sys, time
# Ctrl-C raises KeyboardInterrupt, as in a terminal, even where this process inherited
# SIGINT ignored (a shell's background job): Python leaves an ignored SIGINT ignored
signal.signal(signal.SIGINT, signal.default_int_handler)
from mbdcore.sweep import sweep
def started(done, total):
    if done == 2:
        print("started", flush=True)
try:
    sweep(time.sleep, [0.3] * 40, workers=2, progress=started)
except KeyboardInterrupt:
    print("cancelled", flush=True)
    sys.exit(130)
print("not interrupted")
"""


def test_ctrl_c_cancels_the_cases_not_started():
    """40 cases of 0.3 s on 2 workers (6 s) interrupted after the first two, the signal
    to the whole process group as a terminal's Ctrl-C: the sweep ends after the cases
    that are running (0.3 s), with no worker's traceback."""
    proc = subprocess.Popen([sys.executable, "-c", INTERRUPTED], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=ROOT,
                            start_new_session=True)
    try:
        assert proc.stdout.readline() == "started\n"
        os.killpg(proc.pid, signal.SIGINT)    # as Ctrl-C: to the workers too
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130 and out == "cancelled\n", out + err
    assert "Traceback" not in err, err
