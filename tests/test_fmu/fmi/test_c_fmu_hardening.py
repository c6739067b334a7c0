"""C-source FMUs under the attacks of issue 22: outputs checked after a step, every piece
of state restored on a Discard, saved states checked field by field and by checksum, the
communication point kept exactly, and fmi2Terminated answered so that fmpy stops cleanly.

Every test drives a real FMU exported by ``fmu.fmi.export_c`` and compiled here, through
fmpy or the plain C host (``tests/c_host/host.c``).  The model for the wrapper's own
checks is :class:`Growth`, a block small enough to reason about exactly: a discrete level
``z`` that integrates its input, an output ``level = z`` with a declared range and an
output ``growth = exp(2 z)`` that overflows at z > 354.9, and a hard limit on z.
"""
from __future__ import annotations

import math
import struct

import fmpy
import numpy as np
import pytest

from controllers.laws import ArmLQGController, JointPDController
from support.fmi import DISCARD, ERROR, OK, Instance, Unzipped, start
from fmu.fmi.export_c import export_c_fmu
from mbdcore.blocks import Block, Parameter, Signal, StepError
from mbdcore.codegen import CModel
from mbdcore.models.drive import DCMotorBlock
from mbdcore.models.manipulator import FlexibleManipulatorBlock

pytestmark = pytest.mark.gcc

#: fmi2StatusKind values (FMI 2.0 fmi2FunctionTypes.h)
FMI2_LAST_SUCCESSFUL_TIME, FMI2_TERMINATED = 2, 3


class Growth(Block):
    """z' = rate (a discrete integrator, z += rate h per step); level = z,
    growth = exp(2 z); a step that ends with z beyond ``hard_limit`` fails."""

    INPUTS = (Signal("rate", "1/s", "growth rate of the level", min=-1e3, max=1e3),)
    OUTPUTS = (Signal("level", "", "the level z", min=-500.0, max=500.0),
               Signal("growth", "", "exp(2 z): overflows beyond z = 354.9"))
    PARAMETERS = (Parameter("hard_limit", 1e3, "", "a step ending beyond it fails",
                            min=0.0, max=1e3),)
    DEFAULT_STOP_TIME = 10.0
    DEFAULT_STEP_SIZE = 1.0

    def __init__(self, **params):
        super().__init__(**params)
        self.z = 0.0

    def outputs(self) -> dict:
        return {"level": self.z, "growth": math.exp(min(2 * self.z, 709.0))}

    def do_step(self, t: float, h: float) -> None:
        z = self.z + self.inputs["rate"] * h
        if z > self.params["hard_limit"]:
            raise StepError(f"level {z} beyond the hard limit")
        self.z = z
        self.time = t + h

    def c_model(self) -> CModel:
        return CModel("""
int model_setup(ModelData *d, char *msg, size_t n) { (void)d; (void)msg; (void)n; return 0; }
void model_initial(ModelData *d) { Z(0) = 0.0; }
void model_derivatives(const ModelData *d, const double *x, double *dx) { (void)d; (void)x; (void)dx; }
void model_update(ModelData *d, double h) { Z(0) += IN_rate * h; }
void model_outputs(ModelData *d) { OUT_level = Z(0); OUT_growth = exp(2.0 * Z(0)); }
int model_validity(const ModelData *d, char *msg, size_t n) {
    if (Z(0) > PAR_hard_limit) {
        snprintf(msg, n, "level %g beyond the hard limit %g", Z(0), PAR_hard_limit);
        return 2;
    }
    return 0;
}
""", n_discrete=1, state_names=("z",))


@pytest.fixture(scope="module")
def growth(tmp_path_factory):
    folder = tmp_path_factory.mktemp("growth")
    fmu = export_c_fmu(Growth, folder, model_name="GrowthC", platforms=("linux64",))
    return Unzipped(fmu, folder / "x")


@pytest.fixture(scope="module")
def drive(tmp_path_factory):
    folder = tmp_path_factory.mktemp("drive")
    return Unzipped(export_c_fmu(DCMotorBlock, folder, model_name="DriveC",
                                 platforms=("linux64",)), folder / "x")


def _instance(unzipped: Unzipped, step=1.0, **params) -> Instance:
    return Instance(unzipped.md, str(unzipped.dir), step=step, **params)


def _discarded(instance: Instance, h=None) -> bool:
    try:
        instance.step(h)
    except fmpy.fmi1.FMICallException as exc:
        assert exc.status == DISCARD, exc.status     # Instance.t stays, as the FMU's time
        return True
    return False


# ------------------------------------------------------------ 1, 2: outputs, recovery --
def test_a_non_finite_or_out_of_range_output_is_a_discarded_step_and_the_state_comes_back(growth):
    """Issue 22, items 1 and 2 (failed before the fix: both steps returned fmi2OK, with
    growth = inf and level = 600 outside [-500, 500], and the level stayed there, so every
    later step gave inf: the discrete state was never restored).  Now each is fmi2Discard
    naming the output and its value, the discrete state is what it was before the step,
    and with a valid rate again the FMU goes on as if the bad steps had not been tried."""
    fmu = _instance(growth)
    fmu.set("rate", 100.0)
    fmu.step()
    assert fmu.get("level", "growth") == [100.0, math.exp(200.0)]
    fmu.set("rate", 300.0)                       # z = 400: exp(800) overflows
    assert _discarded(fmu)
    assert any("output growth = inf is not finite" in m for s, m in fmu.messages if s == DISCARD)
    assert fmu.get("level", "growth") == [100.0, math.exp(200.0)]
    fmu.set("rate", 500.0)                       # z = 600, beyond the level's range
    assert _discarded(fmu)
    assert any("output level = 600 is outside its range [-500, 500]" in m
               for s, m in fmu.messages if s == DISCARD), fmu.messages
    assert fmu.get("level") == [100.0]
    fmu.set("rate", -1.0)
    for k in range(100):
        fmu.step()
    assert fmu.get("level", "growth") == [0.0, 1.0]
    assert fmu.fmu.getRealStatus(FMI2_LAST_SUCCESSFUL_TIME) == 101.0
    fmu.close()


def test_inputs_and_parameters_beyond_their_physical_range_are_refused_by_name(tmp_path):
    """Issue 22, item 1 (failed before the fix: the LQG took omega1 = 1e308 and returned
    tau1 = NaN with fmi2OK, the joint PD the same with omega1_ref = +-1e308, and the drive
    took coulomb_friction = 1e300, inside its declared range "any finite double", and
    spun up to 4.6e298 rad/s with fmi2OK).  The declared ranges are physical now
    (controllers.laws.joint_pd.JOINT_RATE_LIMIT, the motor's parameters), in the Python
    blocks and so in both FMU kinds; each refusal names the variable and the range."""
    lqg = Unzipped(export_c_fmu(ArmLQGController, tmp_path, model_name="LQGC",
                                platforms=("linux64",)), tmp_path / "l")
    pd = Unzipped(export_c_fmu(JointPDController, tmp_path, model_name="PDC",
                               platforms=("linux64",)), tmp_path / "p")
    motor = Unzipped(export_c_fmu(DCMotorBlock, tmp_path, model_name="MotorC",
                                  platforms=("linux64",)), tmp_path / "m")
    for unzipped, name, value in ((lqg, "omega1", 1e308), (pd, "omega1_ref", 1e308),
                                  (pd, "omega1_ref", -1e308), (lqg, "w1", 1e300)):
        fmu = _instance(unzipped, step=1e-3)
        with pytest.raises(fmpy.fmi1.FMICallException) as refused:
            fmu.set(name, value)
        assert refused.value.status == ERROR
        assert any(f"input {name} = " in e and "refused: accepted [" in e
                   for e in fmu.errors()), fmu.errors()
        fmu.step()
        assert all(math.isfinite(v) for v in fmu.get("tau1", "tau2"))
        fmu.close()
    fmu = _instance(motor, step=1e-3, coulomb_friction=1e300)
    assert fmu.refused == {"coulomb_friction": ERROR}
    assert any("parameter coulomb_friction = 1e+300 refused: accepted [0, 1000] N.m" in e
               for e in fmu.errors()), fmu.errors()
    fmu.close()
    # the Python blocks refuse the same values (one declaration for both FMU kinds)
    with pytest.raises(ValueError, match="omega1_ref"):
        JointPDController().set_input("omega1_ref", 1e308)
    with pytest.raises(ValueError, match="coulomb_friction"):
        DCMotorBlock(coulomb_friction=1e300)


def test_the_lqg_fmu_goes_on_after_a_bad_input_as_if_it_had_not_come(tmp_path):
    """Issue 22, item 2 (failed before the fix: after omega1 = 1e308 and one step, 100 of
    100 later steps with valid inputs gave tau = NaN, the estimator state ruined).  Now the
    value is refused (or, were it taken, the step discarded with the estimator restored):
    the next 100 steps equal, bit for bit, a run that never saw it."""
    unzipped = Unzipped(export_c_fmu(ArmLQGController, tmp_path, model_name="LQGC",
                                     platforms=("linux64",)),
                        tmp_path / "x")

    def run(bad: bool) -> list:
        fmu = _instance(unzipped, step=1e-3)
        fmu.set("theta1_ref", 0.1)
        outputs = []
        for k in range(101):
            if bad and k == 0:
                try:
                    fmu.set("omega1", 1e308)
                except fmpy.fmi1.FMICallException:
                    pass
                if not _discarded(fmu):
                    outputs.append(fmu.get("tau1", "tau2"))
                fmu.set("omega1", 0.0)
                continue
            fmu.set("theta1", 0.001 * k)
            fmu.step()
            outputs.append(fmu.get("tau1", "tau2"))
        fmu.close()
        return outputs

    clean, disturbed = run(False), run(True)
    assert all(math.isfinite(v) for row in disturbed for v in row)
    assert disturbed[-100:] == clean[-100:]


# ------------------------------------------------------------------- 4: saved states --
HEADER = 4 + 4 + 64          # StateHeader: magic, size, GUID


def _fnv1a(data: bytes) -> int:
    h = 14695981039346656037
    for byte in data:
        h = ((h ^ byte) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return h


def _sealed(payload: bytearray) -> bytes:
    """A serialized state with its checksum made right again (an attacker's edit)."""
    body = bytes(payload[:-8])
    return body + struct.pack("<Q", _fnv1a(body))


def _offsets(unzipped: Unzipped) -> dict:
    """Where fields sit in a serialized state (flexcosim_model.h, ModelData)."""
    n_vars = len(unzipped.md.modelVariables)
    data = HEADER
    return {"time": data, "start_time": data + 8, "steps": data + 16,
            "r": data + 24, "i": data + 24 + 8 * n_vars}


def _saved_drive_state(host, drive, folder, steps=5):
    blob = folder / "state.bin"
    script = start(drive) + f"set_real 0 {drive.vr['voltage']} 10\n" + "".join(
        f"step 0 {k * 1e-3!r} 0.001\n" for k in range(steps)) + f"get_state 0 0\nserialize 0 0 {blob}\n"
    run = host(script)
    assert set(run.statuses("step") + run.statuses("serialize")) == {OK}
    return bytearray(blob.read_bytes())


def _try_state(host, drive, folder, states: list[bytes]):
    """Deserialize each state (bytes) into one instance; the host's run."""
    script = start(drive)
    for k, payload in enumerate(states):
        path = folder / f"edit{k}.bin"
        path.write_bytes(payload)
        script += f"deserialize 0 {path} 1\n"
    return host(script)


def test_a_saved_state_is_checked_field_by_field_and_by_its_checksum(host, drive, tmp_path):
    """Issue 22, item 4 (failed before the fix: substeps = 2147483647 behind a valid header
    was accepted, and its next step ran for over 20 s; time = NaN was accepted and switched
    the time check off; 281-300 of 300 random edits were accepted).  Now: any edit without
    the checksum made right is refused (checksum); edits with it made right are refused
    by the field checks -- substeps outside [1, 100000], a time that is not finite or does
    not follow from the start and the step count, a parameter outside its range, derived
    numbers that do not follow from the parameters, where "auto" starts its doubling
    (auto_substeps outside [1, 4096]) -- each with fmi2Error and a message."""
    saved = _saved_drive_state(host, drive, tmp_path)
    where = _offsets(drive)
    t = 5e-3
    edits = {}
    substeps = bytearray(saved)
    struct.pack_into("<i", substeps, where["i"] + 4 * drive.vr["substeps"], 2147483647)
    edits["substeps"] = _sealed(substeps)
    nan_time = bytearray(saved)
    struct.pack_into("<d", nan_time, where["time"], math.nan)
    edits["time"] = _sealed(nan_time)
    back = bytearray(saved)
    struct.pack_into("<q", back, where["steps"], -3)
    edits["steps"] = _sealed(back)
    friction = bytearray(saved)
    struct.pack_into("<d", friction, where["r"] + 8 * drive.vr["coulomb_friction"], 1e300)
    edits["coulomb_friction"] = _sealed(friction)
    resistance = bytearray(saved)            # in range, but w was made from the old value
    struct.pack_into("<d", resistance, where["r"] + 8 * drive.vr["resistance"], 1.5)
    edits["derived numbers w"] = _sealed(resistance)
    auto = bytearray(saved)                  # the last field of ModelData: 1 .. 4096
    struct.pack_into("<q", auto, len(saved) - 16, 0)
    edits["auto_substeps"] = _sealed(auto)
    unsealed = bytearray(saved)
    unsealed[where["r"] + 3] ^= 0x40
    edits["checksum"] = bytes(unsealed)
    run = _try_state(host, drive, tmp_path, list(edits.values()))
    assert run.statuses("deserialize") == [ERROR] * len(edits)
    errors = run.errors()
    assert len(errors) == len(edits)
    for (what, _), message in zip(edits.items(), errors):
        assert "fmi2DeSerializeFMUstate" in message and what in message, (what, message)
    assert "substeps = 2147483647 is outside [1, 100000]" in errors[0]
    assert "time nan s" in errors[1]
    assert "auto_substeps = 0 is outside [1, 4096]" in errors[-2]

    # the state itself is accepted and continues
    good = tmp_path / "good.bin"
    good.write_bytes(bytes(saved))
    run = host(start(drive) + f"deserialize 0 {good} 1\nset_state 0 1\nstep 0 {t!r} 0.001\n")
    assert run.statuses("deserialize") + run.statuses("set_state") + run.statuses("step") == [OK] * 3


def test_random_edits_of_a_saved_state_never_step_to_a_non_finite_result(host, drive, tmp_path):
    """Issue 22, item 4 (failed before the fix: 281-300 of 300 random edits accepted, up to 9
    then stepped with fmi2OK to non-finite outputs).  300 random byte edits: all refused;
    the same edits with the checksum made right: those the field checks let through (a
    changed input or state value in range) step to finite outputs or are discarded."""
    saved = _saved_drive_state(host, drive, tmp_path)
    rng = np.random.default_rng(22)
    plain, sealed = [], []
    for _ in range(300):
        edit = bytearray(saved)
        at = int(rng.integers(HEADER, len(saved) - 8))
        edit[at] = (edit[at] + int(rng.integers(1, 256))) % 256
        plain.append(bytes(edit))
        sealed.append(_sealed(edit))
    run = _try_state(host, drive, tmp_path, plain)
    assert run.statuses("deserialize") == [ERROR] * 300
    outs = drive.vrs("speed1", "current1", "torque1", "angle1", "gear_torque1", "axis_torque")
    script = start(drive)
    for k, payload in enumerate(sealed):
        path = tmp_path / f"sealed{k}.bin"
        path.write_bytes(payload)
        script += (f"free_state 0 1\ndeserialize 0 {path} 1\nset_state 0 1\n"
                   f"step 0 0.005 0.001\nget_real 0 {outs}\n")
    run = host(script)
    lines = run.lines
    accepted_steps = 0
    for k, line in enumerate(lines):
        if line == f"step status {OK}":
            values = next(l for l in lines[k:] if l.startswith("values"))
            assert all(math.isfinite(float(v)) for v in values.split()[1:]), values
            accepted_steps += 1
    # refused: edits of a parameter, the time, the step count, the derived numbers;
    # let through: finite values of the inputs and the continuous state
    refused = run.statuses("deserialize").count(ERROR)
    assert 0 < refused < 300 and accepted_steps > 0


# -------------------------------------------------------------------- 6: exact time --
def test_the_communication_point_is_the_fmus_time_exactly(host, growth):
    """Issue 22, item 6 (failed before the fix: the check was relative, 1e-9 (1 + |t|),
    so at t = 1e6 s the same step was accepted three times, and at t = 1e12 s a step
    500 s back).  The FMU keeps its time as the double sum of the steps the host gave, and
    accepts that exactly, or start + n h for its step count n; anything else is fmi2Error
    naming both times.  Hosts that accumulate t += h, or compute start + n h (fmpy), run."""
    rate = growth.vr["rate"]
    run = host(start(growth).replace("init 0 0", "init 0 1000000")
               + f"set_real 0 {rate} 0\n"
               + "step 0 1000000 0.001\nstep 0 1000000 0.001\nstep 0 1000000 0.001\n")
    assert run.statuses("step") == [OK, ERROR, ERROR]
    assert any("fmi2DoStep at t = 1000000 s, but the FMU is at t = 1000000.001 s" in e
               for e in run.errors()), run.errors()
    run = host(start(growth).replace("init 0 0", "init 0 1000000000000")
               + "step 0 1000000000000 1\nstep 0 999999999501 1\n"
               + "step 0 1000000000001.0002 1\nstep 0 1000000000001 1\n")
    assert run.statuses("step") == [OK, ERROR, ERROR, OK]
    # a host accumulating t += h from t0 = 0.1, and one computing t0 + n h
    accumulate, t = "", 0.1
    for _ in range(1000):
        accumulate += f"step 0 {t!r} 0.001\n"
        t += 0.001
    grid = "".join(f"step 0 {0.1 + n * 0.001!r} 0.001\n" for n in range(1000))
    for script in (accumulate, grid):
        run = host(start(growth).replace("init 0 0", "init 0 0.1") + script)
        assert run.statuses("step") == [OK] * 1000
    result = fmpy.simulate_fmu(str(growth.fmu_file), start_time=0.1, stop_time=100.1,
                               output_interval=0.001, start_values={"rate": 0.5})
    assert result["time"][-1] == pytest.approx(100.1) and len(result) == 100001
    assert result["level"][-1] == pytest.approx(50.0, rel=1e-12)


# ------------------------------------------------------ 7: fmi2Terminated, fmpy runs --
def test_after_a_discard_fmi2terminated_says_whether_the_model_can_go_on(growth):
    """Issue 22, item 7 (failed before the fix: fmi2GetBooleanStatus answered fmi2Error).
    fmi2False after a step a smaller one may mend; fmi2True after a step beyond the
    model's hard limit, and after the host retried the very step just discarded (the
    model is deterministic: it would be discarded again); fmi2False after a good step."""
    fmu = _instance(growth, hard_limit=300.0)
    fmu.set("rate", 200.0)
    fmu.step()
    fmu.set("rate", 150.0)                      # z = 350 > 300: the hard limit
    assert _discarded(fmu)
    assert fmu.fmu.getBooleanStatus(FMI2_TERMINATED) is True or \
        fmu.fmu.getBooleanStatus(FMI2_TERMINATED) == 1
    assert fmu.fmu.getRealStatus(FMI2_LAST_SUCCESSFUL_TIME) == 1.0
    fmu.close()

    fmu = _instance(growth)
    fmu.set("rate", 200.0)
    assert _discarded(fmu, h=2.0)               # z = 400: exp(800) overflows
    assert not fmu.fmu.getBooleanStatus(FMI2_TERMINATED)
    assert _discarded(fmu, h=2.0)               # the same step again
    assert fmu.fmu.getBooleanStatus(FMI2_TERMINATED)
    fmu.step(1.0)                               # a smaller step: z = 200
    assert not fmu.fmu.getBooleanStatus(FMI2_TERMINATED)
    assert fmu.get("level") == [200.0]
    fmu.close()


@pytest.mark.parametrize("hard_limit, stops_at", [(1e3, 3.0), (250.0, 2.0)])
def test_fmpy_stops_cleanly_at_a_discard(growth, hard_limit, stops_at):
    """Issue 22, item 7 (failed before the fix: fmpy's simulate_fmu asks fmi2Terminated
    after a Discard and raised on the fmi2Error answer).  The level grows by 100 per step:
    growth = exp(2 z) overflows at the step to z = 400 (fmpy retries that step once, then
    hears fmi2Terminated) or, with hard_limit = 250, the step to z = 300 is beyond the
    hard limit (fmi2Terminated at once); either way fmpy returns the run up to the last
    good step, which it records at fmi2LastSuccessfulTime."""
    result = fmpy.simulate_fmu(str(growth.fmu_file), stop_time=10.0, output_interval=1.0,
                               start_values={"rate": 100.0, "hard_limit": hard_limit})
    assert result["time"][-1] == stops_at
    assert result["level"][-1] == 100.0 * stops_at
    assert np.all(np.isfinite(result["growth"]))


# ------------------------------------------- 3: substeps = 0, "auto", in the C wrapper --
@pytest.fixture(scope="module")
def arm(tmp_path_factory):
    folder = tmp_path_factory.mktemp("arm")
    return Unzipped(export_c_fmu(FlexibleManipulatorBlock, folder, model_name="ArmC",
                                 platforms=("linux64",)),
                    folder / "x")


def test_an_unreachable_tolerance_is_a_discarded_step_and_fmpy_stops_cleanly(arm):
    """Issue 22 item 3, the C side (failed before: the C arm stepped a fixed 10 substeps
    whatever rtol and atol said, and this step returned fmi2OK).  With rtol = 1e-14 and
    atol = 1e-300 a 0.1 s step misses the tolerance still at 4096 substeps (the estimate is
    1.7e4 times it): fmi2Discard with the Python block's message, the state kept,
    fmi2Terminated false (a smaller step may pass, and 1 ms steps do); fmpy retries the
    step once, hears fmi2Terminated and returns the run so far."""
    fmu = _instance(arm, step=0.1, rtol=1e-14, atol=1e-300)
    fmu.set("tau1", 0.2)
    fmu.set("tau2", 0.05)
    before = fmu.get("theta1", "omega1", "w1")
    assert _discarded(fmu)
    message = "error estimate 1.71e+04 times the tolerance (rtol = 1e-14, atol = 1e-300) " \
              "with 4096 substeps, the most substeps = 0 takes; shorten the communication " \
              "step or loosen rtol/atol"
    assert any(message in m for s, m in fmu.messages if s == DISCARD), fmu.messages
    assert fmu.get("theta1", "omega1", "w1") == before
    assert not fmu.fmu.getBooleanStatus(FMI2_TERMINATED)
    assert fmu.fmu.getRealStatus(FMI2_LAST_SUCCESSFUL_TIME) == 0.0
    for _ in range(3):
        fmu.step(1e-3)
    assert fmu.get("omega1")[0] > 0.0
    fmu.close()
    python = FlexibleManipulatorBlock(rtol=1e-14, atol=1e-300)
    python.set_inputs({"tau1": 0.2, "tau2": 0.05})
    with pytest.raises(StepError, match=message.replace("(", r"\(").replace(")", r"\)")
                       .replace("+", r"\+")):
        python.do_step(0.0, 0.1)

    signals = np.array([(0.0, 0.2, 0.05), (1.0, 0.2, 0.05)],
                       dtype=[("time", float), ("tau1", float), ("tau2", float)])
    logged = []
    result = fmpy.simulate_fmu(str(arm.fmu_file), stop_time=0.5, step_size=0.1,
                               output_interval=0.1, input=signals, output=["theta1"],
                               start_values={"rtol": 1e-14, "atol": 1e-300},
                               logger=lambda *args: logged.append(args[-1].decode()))
    assert np.all(result["time"] == 0.0) and np.all(result["theta1"] == 0.0)
    assert sum(message in m for m in logged) == 2
    assert "(the same step again: fmi2Terminated)" in logged[-1]


def test_an_arm_state_saved_under_auto_carries_where_the_doubling_starts(arm):
    """substeps = 0 keeps where its doubling starts in the FMU state (auto_substeps).  At
    rtol = 1e-11, atol = 1e-14 "auto" takes 4 to 16 substeps per 1 ms step here, raising
    and lowering n as the Python block does (8, then 4, 2 at steps 78-79, 4 again): 100
    steps (torque reversed at step 70) equal the Python block's to 1e-12.  The state saved
    after step 78 (n = 2), serialized and set again after step 99 (n = 4 there), gives
    the same last 21 steps bit for bit; had it not carried n, step 79 would start at 4
    and take 8 substeps instead of 4."""
    tolerances = {"rtol": 1e-11, "atol": 1e-14}

    def torques(k):
        return {"tau1": 0.2 if k < 70 else -0.2, "tau2": 0.05}

    def steps(fmu, ks):
        rows = []
        for k in ks:
            for name, value in torques(k).items():
                fmu.set(name, value)
            fmu.step()
            rows.append(fmu.get("theta1", "omega1", "w1", "w2"))
        return rows

    python = FlexibleManipulatorBlock(**tolerances)
    rows, seen = [], []
    for k in range(100):
        python.set_inputs(torques(k))
        python.do_step(k * 1e-3, 1e-3)
        rows.append([python.outputs()[n] for n in ("theta1", "omega1", "w1", "w2")])
        seen.append(python._auto_substeps)
    assert seen[78] == 2 and seen[79] == 2 and seen[99] == 4

    fmu = _instance(arm, step=1e-3, **tolerances)
    head = steps(fmu, range(79))
    blob = fmu.fmu.serializeFMUstate(fmu.fmu.getFMUstate())
    t = fmu.t
    tail = steps(fmu, range(79, 100))
    np.testing.assert_allclose(np.array(head + tail), np.array(rows), rtol=0, atol=1e-12)
    fmu.fmu.setFMUstate(fmu.fmu.deSerializeFMUstate(blob))
    fmu.t = t
    assert steps(fmu, range(79, 100)) == tail
    fmu.close()
