"""A Block built into an FMU behaves, under fmpy, exactly like the block in-process."""
from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import numpy as np
import pytest
from fmpy import extract, read_model_description, supported_platforms
from fmpy.fmi1 import FMICallException
from fmpy.validation import validate_fmu

import mbdcore
from fmu.fmi.build import build_fmu
from fmu.fmi.slave import _from_plain, _to_plain, si_base_exponents
from support.blocks import DampedOscillator
from support.fmi import DISCARD, ERROR, Instance

H = 0.01  # communication step [s]


@pytest.fixture(scope="module")
def fmu_file(tmp_path_factory) -> Path:
    return build_fmu(DampedOscillator, tmp_path_factory.mktemp("fmu"), model_name="Oscillator")


@pytest.fixture(scope="module")
def unzipped(fmu_file, tmp_path_factory) -> str:
    return extract(str(fmu_file), str(tmp_path_factory.mktemp("unzipped")))


@pytest.fixture(scope="module")
def md(fmu_file):
    return read_model_description(str(fmu_file))


@pytest.fixture
def instance(md, unzipped):
    created = []

    def make(**params):
        created.append(Instance(md, unzipped, name=f"osc{len(created)}", **params))
        return created[-1]

    yield make
    for inst in created:
        inst.close()


OUTPUTS = ("position", "velocity", "acceleration")


def force_history(n):
    """A force [N] that changes every step, so feedthrough and state both matter."""
    return [20.0 * math.sin(0.37 * k) + 3.0 for k in range(n)]


# -- model description ---------------------------------------------------------------

def test_model_description_is_standard_clean(fmu_file):
    assert validate_fmu(str(fmu_file)) == []


def test_every_real_has_a_defined_si_unit(md):
    units = {u.name: u.baseUnit for u in md.unitDefinitions}
    reals = [v for v in md.modelVariables if v.type == "Real"]
    assert reals and all(v.unit in units for v in reals)
    newton = units["N"]
    assert (newton.kg, newton.m, newton.s) == (1, 1, -2)
    damping = units["N.s/m"]
    assert (damping.kg, damping.m, damping.s) == (1, 0, -1)


def test_ranges_and_starts_come_from_the_block(md):
    v = {v.name: v for v in md.modelVariables}
    assert v["force"].causality == "input" and v["force"].start == "0.0"
    assert (float(v["force"].min), float(v["force"].max)) == (-1e4, 1e4)
    assert v["mass"].causality == "parameter" and v["mass"].variability == "fixed"
    assert float(v["mass"].start) == 2.0 and "kg" == v["mass"].unit
    assert v["substeps"].type == "Integer" and v["method"].type == "String"
    assert v["position"].initial == "calculated" and v["position"].start is None
    assert md.defaultExperiment.stopTime == "5.0" and md.defaultExperiment.stepSize == "0.01"
    assert md.coSimulation.canGetAndSetFMUstate and md.coSimulation.canSerializeFMUstate


def test_model_structure_states_the_feedthrough(md):
    deps = {u.variable.name: [d.name for d in u.dependencies] for u in md.outputs}
    assert deps == {"position": [], "velocity": [], "acceleration": ["force"]}
    initial = {u.variable.name: {d.name for d in u.dependencies} for u in md.initialUnknowns}
    parameters = {p.name for p in DampedOscillator.PARAMETERS}
    assert set(initial) == set(OUTPUTS)
    assert initial["position"] == parameters
    assert initial["acceleration"] == parameters | {"force"}


@pytest.mark.parametrize("unit, exponents", [
    ("N.m.s/rad", {"kg": 1, "m": 2, "s": -1, "rad": -1}),
    ("kg.m2", {"kg": 1, "m": 2}),
    ("rad/s2", {"rad": 1, "s": -2}),
    ("N.m2", {"kg": 1, "m": 3, "s": -2}),
    ("s-1", {"s": -1}),
    ("1", {}),
    ("", {}),
])
def test_unit_strings_parse_to_si_base_exponents(unit, exponents):
    assert si_base_exponents(unit) == exponents


def test_unknown_unit_is_refused():
    with pytest.raises(ValueError, match="mm"):
        si_base_exponents("mm/s")


def test_state_encoding_round_trips_arrays_and_tuples_bit_for_bit():
    state = {"time": 0.1, "internal": {"y": np.array([[0.1, 1 / 3], [math.pi, -0.0]]),
                                       "pair": (1, 2.5), "n": np.int64(3), "empty": np.zeros((0, 3))}}
    back = _from_plain(_to_plain(state))
    assert back["internal"]["y"].tobytes() == state["internal"]["y"].tobytes()
    assert back["internal"]["pair"] == (1, 2.5) and back["internal"]["empty"].shape == (0, 3)


# -- simulation ------------------------------------------------------------------------

def test_fmu_steps_like_the_block_in_process(instance):
    fmu = instance(mass=1.5, damping=0.3)
    block = DampedOscillator(mass=1.5, damping=0.3)
    assert fmu.get(*OUTPUTS) == [block.outputs()[n] for n in OUTPUTS]
    for k, force in enumerate(force_history(300)):
        fmu.set("force", force)
        block.set_input("force", force)
        block.do_step(k * H, H)
        fmu.step()
        np.testing.assert_allclose(fmu.get(*OUTPUTS), [block.outputs()[n] for n in OUTPUTS],
                                   rtol=0, atol=1e-12)
    assert fmu.errors() == []


def test_nan_input_is_rejected_logged_and_harmless(instance):
    fmu = instance()
    fmu.set("force", 5.0)
    for _ in range(10):
        fmu.step()
    before = fmu.get(*OUTPUTS)

    with pytest.raises(FMICallException) as rejected:
        fmu.set("force", math.nan)
    assert rejected.value.status == ERROR                     # the setter says so ...
    assert any("'force'" in m and "nan" in m for m in fmu.errors())  # ... with a message
    with pytest.raises(FMICallException) as refused:
        fmu.fmu.doStep(fmu.t, H)
    assert refused.value.status == DISCARD
    assert any("step refused" in m and "'force'" in m for m in fmu.errors())
    assert fmu.get(*OUTPUTS) == before  # the force is still 5 N, the state as before
    assert fmu.get("force") == [5.0]

    fmu.set("force", 5.0)
    fmu.step()
    reference = DampedOscillator()
    reference.set_input("force", 5.0)
    for k in range(11):
        reference.do_step(k * H, H)
    assert fmu.get(*OUTPUTS) == [reference.outputs()[n] for n in OUTPUTS]


def test_out_of_range_input_names_the_range(instance):
    fmu = instance()
    with pytest.raises(FMICallException) as rejected:
        fmu.set("force", 2e4)
    assert rejected.value.status == ERROR
    assert any("'force'" in m and "outside its range" in m for m in fmu.errors())
    assert fmu.get("force") == [0.0]


def test_failing_step_is_discarded_and_leaves_the_state(instance):
    fmu = instance(position_limit=0.5)
    for _ in range(5):
        fmu.step()
    before = fmu.get(*OUTPUTS)
    fmu.set("force", 1e4)  # 10 kN on 2 kg for 0.5 s ends far beyond 0.5 m
    with pytest.raises(FMICallException) as failed:
        fmu.fmu.doStep(fmu.t, 0.5)
    assert failed.value.status == DISCARD
    assert any("beyond the limit" in m and "state kept" in m for m in fmu.errors())
    fmu.set("force", 0.0)
    assert fmu.get("position", "velocity") == before[:2]
    fmu.step()  # and it carries on


def test_parameter_out_of_range_is_named_and_stops_the_run(instance):
    fmu = instance(mass=-1.0)
    assert fmu.refused == {"mass": ERROR}         # fmi2SetReal returned fmi2Error
    assert any("'mass'" in m and "-1.0" in m and "(0.0, inf)" in m for m in fmu.errors())
    # fmi2ExitInitializationMode builds the block: it fails, naming the parameter, and the
    # instance stays in initialization mode, where fmi2DoStep is not allowed
    assert fmu.exit_refused == ERROR
    assert any("cannot be built" in m and "'mass'" in m for m in fmu.errors())
    with pytest.raises(FMICallException) as refused:
        fmu.fmu.doStep(0.0, H)
    assert refused.value.status == ERROR
    assert any("fmi2DoStep is not allowed in state \"initialization mode\"" in m for m in fmu.errors())
    fmu.set("mass", 3.0)                               # a valid value, and it runs
    fmu.fmu.exitInitializationMode()
    fmu.step()


def test_parameters_set_by_the_host_are_used(instance):
    fmu = instance(x0=0.25, substeps=7, stiffness=80.0)
    block = DampedOscillator(x0=0.25, substeps=7, stiffness=80.0)
    for k in range(20):
        block.do_step(k * H, H)
        fmu.step()
    assert fmu.get(*OUTPUTS) == [block.outputs()[n] for n in OUTPUTS]
    with pytest.raises(FMICallException):  # fixed parameter after initialisation: refused
        fmu.set("mass", 3.0)
    assert any("fixed after initialization" in m for m in fmu.errors())


def run(fmu, forces):
    out = []
    for force in forces:
        fmu.set("force", force)
        fmu.step()
        out.append(fmu.get(*OUTPUTS))
    return out


def test_fmu_state_rolls_back_bit_for_bit(instance):
    fmu = instance()
    run(fmu, force_history(17))
    saved, t_saved = fmu.fmu.getFMUstate(), fmu.t
    later = force_history(40)[17:]
    first = run(fmu, later)
    fmu.fmu.setFMUstate(saved)
    fmu.t = t_saved
    assert run(fmu, later) == first
    fmu.fmu.freeFMUstate(saved)


def test_serialized_state_continues_bit_for_bit_in_another_instance(instance):
    a, b = instance(), instance()
    run(a, force_history(23))
    blob = a.fmu.serializeFMUstate(a.fmu.getFMUstate())
    later = force_history(50)[23:]
    expected = run(a, later)
    state = b.fmu.deSerializeFMUstate(blob)
    b.fmu.setFMUstate(state)
    b.t = 23 * H
    assert run(b, later) == expected
    b.fmu.freeFMUstate(state)


def test_two_instances_in_one_process_are_independent(instance):
    a, b = instance(), instance(mass=4.0)
    block_a, block_b = DampedOscillator(), DampedOscillator(mass=4.0)
    for k, force in enumerate(force_history(50)):
        a.set("force", force)
        b.set("force", -force)
        block_a.set_input("force", force)
        block_b.set_input("force", -force)
        a.step()
        b.step()
        block_a.do_step(k * H, H)
        block_b.do_step(k * H, H)
    assert a.get(*OUTPUTS) == [block_a.outputs()[n] for n in OUTPUTS]
    assert b.get(*OUTPUTS) == [block_b.outputs()[n] for n in OUTPUTS]


def test_fmu_runs_on_its_embedded_sources(fmu_file, tmp_path):
    """In a fresh interpreter, the FMU imports mbdcore and fmu from its resources."""
    script = textwrap.dedent(f"""
        import sys
        from fmpy import simulate_fmu
        result = simulate_fmu({str(fmu_file)!r}, stop_time=0.1, output_interval=0.01,
                              start_values={{'force': 1.0}})
        print(result['position'][-1])
        print(sys.modules['mbdcore.blocks'].__file__)
        print(sys.modules['fmu.fmi.slave'].__file__)
    """)
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    position, blocks_file, slave_file = done.stdout.split()[-3:]
    assert "resources" in blocks_file and "resources" in slave_file
    block = DampedOscillator()
    block.set_input("force", 1.0)
    for k in range(10):
        block.do_step(k * H, H)
    assert float(position) == pytest.approx(block.output("position"), abs=1e-12)


def test_misuse_by_the_host_is_logged_not_fatal(instance):
    fmu = instance()
    for vr in (fmu.vr["substeps"], 9999):    # an Integer, not a Real; no variable at all
        with pytest.raises(FMICallException) as refused:
            fmu.fmu.getReal([vr])
        assert refused.value.status == ERROR
        assert any(f"no Real variable has value reference {vr}" in m for m in fmu.errors())
    with pytest.raises(FMICallException):  # outputs cannot be set: fmi2Error, logged
        fmu.set("position", 1.0)
    assert any("value reference" in m for m in fmu.errors())
    assert any("output 'position' cannot be set" in m for m in fmu.errors())
    fmu.step()  # the instance is alive and well


def test_build_to_a_file_name_with_the_default_model_name(tmp_path):
    path = build_fmu(DampedOscillator, tmp_path / "oscillator.fmu")
    assert path == tmp_path / "oscillator.fmu" and path.is_file()
    assert read_model_description(str(path)).coSimulation.modelIdentifier == "DampedOscillator"
    with pytest.raises(ValueError, match="importable module"):
        build_fmu(DampedOscillator, tmp_path, model_name="numpy")


def test_refused_fmu_state_leaves_the_instance_as_it_was(instance):
    """A state that fails while being applied is refused before the slave changes."""
    fmu, twin = instance(), instance()
    for one in (fmu, twin):
        one.set("force", 1.0)
        for _ in range(10):
            one.step()
    handle = fmu.fmu.getFMUstate()
    state = json.loads(bytes(fmu.fmu.serializeFMUstate(handle)))
    fmu.fmu.freeFMUstate(handle)
    state["block_state"]["inputs"]["force"] = 5000.0        # would push the mass off its limit
    state["block_state"]["internal"] = {"y": "not a state"}  # fails after time and inputs
    bad = fmu.fmu.deSerializeFMUstate(json.dumps(state).encode())
    with pytest.raises(FMICallException) as refused:
        fmu.fmu.setFMUstate(bad)
    fmu.fmu.freeFMUstate(bad)
    assert refused.value.status == ERROR
    assert any("FMU state not restored" in m and "unchanged" in m for m in fmu.errors())
    for _ in range(20):                                     # the force is still 1 N
        fmu.step()
        twin.step()
    assert fmu.get(*OUTPUTS) == twin.get(*OUTPUTS)


def test_the_fmu_ships_linux_binaries_only(fmu_file):
    """pythonfmu's win64 DLL is not shipped: the FMU runs on 64-bit Linux only."""
    assert supported_platforms(str(fmu_file)) == ["linux64"]
    with zipfile.ZipFile(fmu_file) as fmu_zip:
        binaries = [n for n in fmu_zip.namelist() if n.startswith("binaries/") and not n.endswith("/")]
    assert binaries == ["binaries/linux64/Oscillator.so"]


def test_other_sources_of_an_embedded_package_are_reported(md, unzipped, tmp_path):
    """In a process that imported mbdcore from elsewhere (this one: the project's), the FMU
    runs that mbdcore: a warning names both folders if its sources differ from the FMU's."""
    same = Instance(md, unzipped, name="same")
    same.close()
    assert not [m for m in same.warnings() if "sources differ" in m]

    other = Path(shutil.copytree(unzipped, tmp_path / "other"))
    record = other / "resources" / "flexcosim_env.txt"
    record.write_text("".join(line.split("=")[0] + "=" + "0" * 64 + "\n" if line.startswith("digest.mbdcore=")
                              else line + "\n" for line in record.read_text().splitlines()))
    differing = Instance(md, str(other), name="differing")
    differing.close()
    [warning] = [m for m in differing.warnings() if "sources differ" in m]
    assert "'mbdcore'" in warning and str(Path(mbdcore.__file__).resolve().parent) in warning
    assert str((other / "resources" / "mbdcore").resolve()) in warning



USER_PACKAGE_BLOCK = '''
from mbdcore.blocks import Block, Parameter, Signal


class Doubler(Block):
    """y = gain * u: a block of a user's own package."""

    INPUTS = (Signal("u", "m", "input"),)
    OUTPUTS = (Signal("y", "m", "output"),)
    PARAMETERS = (Parameter("gain", 2.0, "1", "gain"),)
    FEEDTHROUGH = {"y": ("u",)}

    def outputs(self):
        return {"y": self.params["gain"] * self.inputs["u"]}
'''


def test_a_block_of_a_users_own_package_builds_and_runs_without_it(tmp_path):
    """A block in ``userpkg/plant.py`` (a package the FMU does not embed): the build
    imported the generated script with ``from plant import Doubler`` where only
    ``userpkg.plant`` was importable, and failed with ModuleNotFoundError; the FMU then
    runs in a fresh interpreter that cannot import ``userpkg`` at all."""
    package = tmp_path / "src" / "userpkg"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "plant.py").write_text(USER_PACKAGE_BLOCK)
    build = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(package.parent)!r})
        from userpkg.plant import Doubler
        from fmu.fmi.build import build_fmu
        print(build_fmu(Doubler, {str(tmp_path / "out")!r}, model_name="UserDoubler"))
    """)
    done = subprocess.run([sys.executable, "-c", build], cwd=tmp_path, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    fmu_file = done.stdout.split()[-1]
    run = textwrap.dedent(f"""
        from fmpy import simulate_fmu
        r = simulate_fmu({fmu_file!r}, stop_time=0.02, step_size=0.01,
                         start_values={{"u": 1.5, "gain": 3.0}})
        print(r["y"][-1])
    """)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    done = subprocess.run([sys.executable, "-c", run], cwd=elsewhere, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert float(done.stdout.split()[-1]) == 4.5


def test_an_fmu_run_in_this_process_does_not_block_building_it_again(md, unzipped, tmp_path):
    """An FMU instantiated in this process puts its resources folder, with the generated
    script ``Oscillator.py``, on ``sys.path``: building the same model again under the
    same name was refused as "the name of an importable module" (its own earlier script),
    which made ``flexcosim build manipulator`` fail after an in-process arm FMU run and a
    build (test_native_host then test_manipulator_fmu in one worker)."""
    fmu = Instance(md, unzipped, name="rebuild")
    fmu.step()
    fmu.close()
    for again in ("first", "second"):   # a build takes the loaded script out of sys.modules
        rebuilt = build_fmu(DampedOscillator, tmp_path / again, model_name="Oscillator")
        assert read_model_description(str(rebuilt)).modelName == "Oscillator"
    # a module of that name that is not one of our FMU scripts is still refused
    (tmp_path / "NotAnFmu.py").write_text("x = 1\n")
    sys.path.insert(0, str(tmp_path))
    try:
        with pytest.raises(ValueError, match="name of an importable module"):
            build_fmu(DampedOscillator, tmp_path / "out", model_name="NotAnFmu")
    finally:
        sys.path.remove(str(tmp_path))


def test_the_source_digest_orders_paths_as_strings_as_the_wrappers_helper(tmp_path):
    """The wrapper's helper (flexcosim_fmi2.c) sorts the relative paths as strings; the
    build sorted Path objects, which put "native/x.h" before "native.py" -- a package
    with a folder and a module of one stem (mbdcore's native.py and native/) was
    reported as "sources differ" by every FMU built from it."""
    import hashlib
    from fmu.fmi.build import source_digest
    (tmp_path / "native").mkdir()
    for name, text in (("native.py", "a"), ("native/x.h", "b"), ("b.c", "c")):
        (tmp_path / name).write_text(text)
    expected = hashlib.sha256()
    for rel in sorted(["native.py", "native/x.h", "b.c"]):
        expected.update(rel.encode() + b"\0" + (tmp_path / rel).read_bytes() + b"\0")
    assert source_digest(tmp_path) == expected.hexdigest()
