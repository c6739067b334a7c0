"""Fuzzing that stays (issue 22, "Build, beyond the fixes"): random mutations of valid
model files -- planar, spatial and the ring truss with its motors, screw drives and
latches -- either load or are refused with a ModelFileError whose every problem names its
key path; never another exception, a hang or a crash.

Bounded: a fixed number of examples, derandomized (the same cases on every run), each
under a wall-clock alarm that turns a hang into a failure."""
from __future__ import annotations

import json
import re
import signal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mbdcore.models.model_file import ModelFileError, load_model, model_to_dict
from mbdcore.models.ring_truss import ring_truss

from support import EXAMPLES
from support.json_mutations import mutated

MODELS = EXAMPLES / "models"

#: A problem starts with its key path: "bodies[1].mass", "(file)", "(top level)",
#: "ground.markers.O", "bodies[0].'': unknown key" (a key that is no plain name: its repr)
_SEGMENT = r"(?:[A-Za-z_][\w-]*|'[^']*'|\"[^\"]*\")"
KEY_PATH = re.compile(rf"(\(file\)|\(top level\)|{_SEGMENT}(?:\[\d+\]|\.{_SEGMENT})*): ")

FUZZ = settings(max_examples=100, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

#: Seconds one example may take before it counts as a hang
HANG = 30


class Hang(Exception):
    pass


def _alarm(signum, frame):
    raise Hang(f"no answer within {HANG} s")


def _documents() -> dict[str, dict]:
    docs = {p.stem: json.loads(p.read_text()) for p in
            [*MODELS.glob("*.json"), *(MODELS / "spatial").glob("*.json")]}
    docs["ring_truss4"] = model_to_dict(ring_truss(n_bays=4, folded_angle=1.2).system)
    return docs


DOCUMENTS = _documents()


def _check(load, source, done):
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(HANG)
    try:
        load(source)
    except ModelFileError as e:
        assert e.problems, done
        for problem in e.problems:
            assert KEY_PATH.match(problem), (problem, done)
    except Exception as e:  # noqa: BLE001 - what the test is about
        raise AssertionError(f"{type(e).__name__}: {e!s:.300} after {done}") from e
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@pytest.mark.parametrize("name", sorted(DOCUMENTS))
def test_the_seed_documents_load(name):
    load_model(DOCUMENTS[name])


@pytest.mark.parametrize("name", sorted(DOCUMENTS))
@FUZZ
@given(data=st.data())
def test_a_mutated_model_loads_or_is_refused_by_key_path(name, data, tmp_path_factory):
    doc, done = mutated(DOCUMENTS[name], data)
    _check(load_model, doc, done)
    try:
        text = json.dumps(doc)
    except (RecursionError, ValueError):   # too deep for json to write: the dict is enough
        return
    path = tmp_path_factory.mktemp("fuzz") / "model.json"
    path.write_text(text)
    _check(load_model, path, done)


@FUZZ
@given(text=st.one_of(st.text(max_size=200), st.binary(max_size=200).map(
    lambda b: b.decode("latin-1"))))
def test_any_text_as_a_model_file_is_refused_by_key_path(text, tmp_path_factory):
    path = tmp_path_factory.mktemp("fuzz") / "model.json"
    path.write_text(text, encoding="utf-8", errors="surrogateescape")
    _check(load_model, path, [f"text {text!r:.60}"])
