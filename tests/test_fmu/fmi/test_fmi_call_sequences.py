"""Property-based tests (Hypothesis) over FMI call sequences, against real Python and C FMUs.

Random sequences of: setting inputs (normal values, NaN, +-Inf, +-1e308), setting a fixed
parameter after initialisation (refused), fmi2DoStep at the right and at wrong
communication points and with good and bad step sizes, getting, setting, serializing and
deserializing states (also with a byte of the serialized state changed), fmi2Reset and
fmi2Terminate.  Invariants after every call:

* no crash (the instance lives in this process);
* an fmi2DoStep that returns fmi2OK leaves every output finite;
* a refused call (fmi2Error, fmi2Discard) leaves the instance usable: at the end of each
  sequence, valid inputs and a state saved earlier give a step with fmi2OK;
* after a state is restored, the same step gives bit-identical outputs.

Bounded so that the file runs in well under a minute: one instance per FMU for all examples
(each sequence starts with fmi2Reset), ``max_examples`` small, ``derandomize=True`` (the
same examples on every run, so CI is reproducible), ``deadline=None`` (a shared machine).
"""
from __future__ import annotations

import math
import struct

import pytest
from fmpy import extract, read_model_description
from fmpy.fmi1 import FMICallException
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from controllers.laws.joint_pd import JointPDController
from support.fmi import Instance
from fmu.fmi.build import build_fmu
from fmu.fmi.export_c import export_c_fmu
from mbdcore.cbuild import find_compiler
from mbdcore.models.manipulator import FlexibleManipulatorBlock

H = 1e-3
SETTINGS = settings(max_examples=40, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow,
                                           HealthCheck.function_scoped_fixture])

BAD_NUMBERS = (math.nan, math.inf, -math.inf, 1e308, -1e308, 1e200)
VALUES = st.one_of(st.floats(-10.0, 10.0), st.sampled_from(BAD_NUMBERS))


def _fmu(kind, model, tmp_path_factory):
    folder = tmp_path_factory.mktemp(f"{kind}_{model.__name__}")
    if kind == "python":
        return build_fmu(model, folder, model_name=f"{model.__name__}Py")
    if find_compiler() is None:
        pytest.skip("no C compiler")
    return export_c_fmu(model, folder, model_name=f"{model.__name__}C", platforms=("linux64",))


@pytest.fixture(scope="module", params=[
    ("python", JointPDController), ("python", FlexibleManipulatorBlock),
    ("c", JointPDController),
    ("c", FlexibleManipulatorBlock)],
    ids=["py-joint-pd", "py-arm", "c-joint-pd", "c-arm"])
def instance(request, tmp_path_factory):
    kind, model = request.param
    path = _fmu(kind, model, tmp_path_factory)
    md = read_model_description(str(path))
    inst = Instance(md, extract(str(path), str(tmp_path_factory.mktemp("unzipped"))), step=H)
    inst.inputs = [v.name for v in md.modelVariables if v.causality == "input"]
    inst.outputs = [v.name for v in md.modelVariables if v.causality == "output"]
    inst.fixed = next(v.name for v in md.modelVariables
                      if v.causality == "parameter" and v.type == "Real")
    yield inst
    inst.close()


ACTIONS = st.lists(st.one_of(
    st.tuples(st.just("input"), st.integers(0, 20), VALUES),
    st.tuples(st.just("input"), st.integers(0, 20), st.sampled_from(BAD_NUMBERS)),
    st.tuples(st.just("inputs"), st.lists(VALUES, min_size=12, max_size=12)),
    st.tuples(st.just("parameter"), VALUES),
    st.tuples(st.just("step"), st.sampled_from([H, 2 * H, 0.5 * H])),
    st.tuples(st.just("bad_step"), st.sampled_from(["early", "late", "nan_time", "zero",
                                                    "negative", "nan_size"])),
    st.tuples(st.just("save")),
    st.tuples(st.just("restore_and_repeat")),
    st.tuples(st.just("serialize_roundtrip")),
    st.tuples(st.just("corrupt"), st.integers(0, 10**6), st.integers(0, 255)),
    st.tuples(st.just("reset")),
    st.tuples(st.just("terminate")),
), max_size=15)


class Run:
    """One sequence on an instance, with the time and phase it must be at."""

    def __init__(self, inst):
        self.inst, self.fmu = inst, inst.fmu
        self.saved = None          # (fmi2FMUstate, time) of the last good save
        self.terminated = False
        self.restart()

    def restart(self):
        self.fmu.reset()
        self.fmu.setupExperiment(startTime=0.0)
        self.fmu.enterInitializationMode()
        self.fmu.exitInitializationMode()
        self.t, self.terminated = 0.0, False
        self.free_saved()

    def free_saved(self):
        if self.saved is not None:
            self.fmu.freeFMUstate(self.saved[0])
            self.saved = None

    def outputs(self):
        return self.fmu.getReal([self.inst.vr[n] for n in self.inst.outputs])

    def step(self, h):
        """True if the step passed (its outputs then finite), False if refused."""
        try:
            self.fmu.doStep(self.t, h)
        except FMICallException:
            return False
        self.t += h
        values = self.outputs()
        assert all(math.isfinite(v) for v in values), \
            f"fmi2OK with non-finite outputs {dict(zip(self.inst.outputs, values))}"
        return True

    def expect_refused(self, call, *args):
        with pytest.raises(FMICallException):
            call(*args)

    def do(self, action):
        kind, *args = action
        if self.terminated and kind not in ("reset",):
            return
        if kind == "input":
            name = self.inst.inputs[args[0] % len(self.inst.inputs)]
            try:
                self.fmu.setReal([self.inst.vr[name]], [args[1]])
            except FMICallException:
                assert not math.isfinite(args[1]) or abs(args[1]) > 1e10, \
                    f"{name} = {args[1]!r} refused"
        elif kind == "inputs":
            for i, value in enumerate(args[0][:len(self.inst.inputs)]):
                self.do(("input", i, value))
        elif kind == "parameter":        # fixed after initialisation: always refused
            self.expect_refused(self.fmu.setReal, [self.inst.vr[self.inst.fixed]], [args[0]])
        elif kind == "step":
            self.step(args[0])
        elif kind == "bad_step":
            t, h = {"early": (self.t - H, H), "late": (self.t + H, H),
                    "nan_time": (math.nan, H), "zero": (self.t, 0.0),
                    "negative": (self.t, -H), "nan_size": (self.t, math.nan)}[args[0]]
            self.expect_refused(self.fmu.doStep, t, h)
        elif kind == "save":
            self.free_saved()
            self.saved = (self.fmu.getFMUstate(), self.t)
        elif kind == "restore_and_repeat":
            self.restore_and_repeat()
        elif kind == "serialize_roundtrip":
            self.serialize_roundtrip()
        elif kind == "corrupt":
            self.corrupt(*args)
        elif kind == "reset":
            self.restart()
        elif kind == "terminate":
            self.fmu.terminate()
            self.terminated = True

    def restore_and_repeat(self):
        if self.saved is None:
            return
        state, t = self.saved
        self.fmu.setFMUstate(state)
        self.t = t
        first = self.step(H) and self.outputs()
        self.fmu.setFMUstate(state)
        self.t = t
        second = self.step(H) and self.outputs()
        assert _bits(first) == _bits(second), "the same step from the same state differs"

    def serialize_roundtrip(self):
        state = self.fmu.getFMUstate()
        data = bytes(self.fmu.serializeFMUstate(state))
        self.fmu.freeFMUstate(state)
        copy = self.fmu.deSerializeFMUstate(data)
        before = self.outputs_or_refused()
        self.fmu.setFMUstate(copy)
        self.fmu.freeFMUstate(copy)
        assert _bits(self.outputs_or_refused()) == _bits(before)

    def outputs_or_refused(self):
        """The outputs, or False where the FMU refuses them (non-finite: fmi2Error)."""
        try:
            return self.outputs()
        except FMICallException:
            return False

    def corrupt(self, where, byte):
        state = self.fmu.getFMUstate()
        data = bytearray(self.fmu.serializeFMUstate(state))
        self.fmu.freeFMUstate(state)
        data[where % len(data)] = byte
        try:
            copy = self.fmu.deSerializeFMUstate(bytes(data))
        except FMICallException:
            return
        try:
            self.fmu.setFMUstate(copy)
        except FMICallException:
            return
        finally:
            self.fmu.freeFMUstate(copy)
        # accepted (an edit a checksum-free format cannot tell, e.g. a digit of a number):
        # the outputs can be read (or are refused as non-finite); then back to a known
        # state, since its time is unknown
        self.outputs_or_refused()
        if self.saved is not None:
            self.fmu.setFMUstate(self.saved[0])
            self.t = self.saved[1]
        else:
            self.restart()

    def finish(self):
        """A refused call left the instance usable: valid inputs and a good state step OK."""
        if self.terminated:
            self.restart()
        if self.saved is not None:
            self.fmu.setFMUstate(self.saved[0])
            self.t = self.saved[1]
        for name in self.inst.inputs:
            self.fmu.setReal([self.inst.vr[name]], [0.0])
        assert self.step(H), f"no step passes at t = {self.t!r} s with valid inputs: " \
            f"{self.inst.messages[-3:]}"
        self.free_saved()


def _bits(values):
    return values if values is False else [struct.pack("<d", v) for v in values]


@SETTINGS
@given(actions=ACTIONS)
# the cases, always run: omega2_ref (joint PD) or tau2 (arm) = +-1e308, then a step
@example(actions=[("input", 4, 1e308), ("step", H)])
@example(actions=[("input", 1, -1e308), ("save",), ("step", H), ("restore_and_repeat",)])
def test_call_sequences_keep_the_invariants(instance, actions):
    run = Run(instance)
    # a good state to return to, taken at rest (every sequence may restore it)
    run.do(("save",))
    for action in actions:
        run.do(action)
    run.finish()
    instance.messages.clear()
