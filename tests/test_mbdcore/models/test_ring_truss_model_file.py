"""The ring truss as a model file (mbdcore.models.model_file): written and read back
it is the same system, equation for equation and step for step, motors, screw drives
and latches included; broken entries are refused with their key path and accepted
values; every other file still reads."""
import copy
import json

import numpy as np
import pytest

from mbdcore.dae.simulate import simulate
from mbdcore.models import model_file as models_format
from mbdcore.models.cable_net import add_cable_net
from mbdcore.models.model_file import (
    MODEL_SCHEMA,
    format_reference,
    load_model,
    model_from_dict,
    model_to_dict,
    save_model,
)
from mbdcore.models.ring_truss import ring_truss
from mbdcore.multibody.model_file import ModelFileError
from mbdcore.spatial import model_file as spatial_format
from mbdcore.spatial.system import SpatialSystem

N_BAYS = 4
FOLDED = 1.55           # [rad]: close enough to deployment that a latch engages in 0.3 s
VOLTS = 48.0            # [V] on every motor


@pytest.fixture(scope="module")
def truss():
    return ring_truss(n_bays=N_BAYS, folded_angle=FOLDED)


@pytest.fixture(scope="module")
def truss_dict(truss):
    return model_to_dict(truss.system, "4-bay ring truss")


def test_saving_and_loading_is_a_fixed_point_with_floats_exact(truss, truss_dict, tmp_path):
    """dict -> system -> dict is the identity, through a JSON file too (floats in their
    shortest exact form); the file holds every element of the truss."""
    path = save_model(truss.system, tmp_path / "truss.json", "4-bay ring truss")
    assert json.loads(path.read_text()) == truss_dict
    assert model_to_dict(load_model(path), "4-bay ring truss") == truss_dict
    assert model_to_dict(model_from_dict(truss_dict), "4-bay ring truss") == truss_dict
    kinds = [f["type"] for f in truss_dict["forces"]]
    assert [kinds.count(k) for k in ("motor_voltage", "screw_drive", "latch")] == [N_BAYS] * 3
    assert sum(b["type"] == "dc_motor" for b in truss_dict["bodies"]) == N_BAYS
    assert truss_dict["inputs"] == {f"voltage{k}": 0.0 for k in range(N_BAYS)}


def test_loaded_truss_keeps_the_rows_judged_at_deployment(truss, truss_dict):
    """The truss judges its dependent rows at full deployment; the file records them and
    the loaded system removes the same ones, where a check at the folded initial state
    would remove others (why the file carries ``removed_equations``)."""
    loaded = model_from_dict(truss_dict)
    assert loaded.redundancy_resolved
    assert loaded.redundant_equations == truss.system.redundant_equations
    assert loaded.m == truss.system.m
    at_start = model_from_dict(truss_dict)
    at_start.check_redundancy()            # judged again at the folded initial state
    assert len(at_start.redundant_equations) == len(truss.system.redundant_equations)
    assert at_start.redundant_equations != truss.system.redundant_equations


def _drive_run(system):
    return simulate(system, 0.3, 0.005, "generalized-alpha", sparse=True, rho_inf=0.6,
                    iteration="newton", geometric_stiffness=False,
                    inputs=lambda t: {f"voltage{k}": VOLTS for k in range(N_BAYS)})


def test_loaded_truss_deploys_bit_identically_through_latch_engagement(truss_dict, tmp_path):
    """60 implicit steps of a 48 V drive run from 1.55 rad: the truss built in Python
    and the one read from its file give the same q and v to the last bit, and their
    latches engage at the same step (the restart there included)."""
    built = ring_truss(n_bays=N_BAYS, folded_angle=FOLDED)
    loaded = load_model(save_model(built.system, tmp_path / "truss.json"))
    a, b = _drive_run(built.system), _drive_run(loaded)
    times = [f.latch_time for f in built.system.forces_list if f.kind == "latch"]
    assert all(t is not None and t < 0.3 for t in times)      # a latch engaged mid-run
    assert times == [f.latch_time for f in loaded.forces_list if f.kind == "latch"]
    assert np.array_equal(a.q, b.q) and np.array_equal(a.v, b.v)
    # the run is the deployment it should be: bays equal (gears), at pi/2 within the
    # latch's give, the aperture the designed one
    angles = built.bay_angles(a.q[-1])
    assert np.ptp(angles) < 1e-9 and abs(angles[0] - np.pi / 2) < 1e-3
    assert built.aperture_error(a.q[-1]) < 1e-5


def _with(d, change):
    d = copy.deepcopy(d)
    change(d)
    return d


def _force(d, kind, k=0):
    return [f for f in d["forces"] if f["type"] == kind][k]


def _body(d, name):
    return next(b for b in d["bodies"] if b["name"] == name)


def _index(d, kind, k=0):
    return d["forces"].index(_force(d, kind, k))


BROKEN = {
    "negative lead": (lambda d: _force(d, "screw_drive").update(lead=-0.002),
                      lambda d: f"forces[{_index(d, 'screw_drive')}].lead: -0.002 is invalid: "
                                "accepted values are finite numbers > 0 [m/rad]"),
    "unknown motor": (lambda d: _force(d, "screw_drive").update(motor="motor9"),
                      lambda d: f"forces[{_index(d, 'screw_drive')}].motor: body 'motor9' "
                                "does not exist; accepted: the name of a dc_motor body: "
                                "motor0, motor1, motor2, motor3"),
    "screw on a bar, not a motor": (
        lambda d: _force(d, "screw_drive").update(motor="thin0"),
        lambda d: f"forces[{_index(d, 'screw_drive')}].motor: body 'thin0' is a bar; "
                  "accepted: the name of a dc_motor body"),
    "latch on a missing body": (
        lambda d: _force(d, "latch").update(a="vertical9.top"),
        lambda d: f"forces[{_index(d, 'latch')}].a: marker 'vertical9.top' does not exist: "
                  "no body 'vertical9'"),
    "screw drive without its motor": (
        lambda d: _force(d, "screw_drive").pop("motor"),
        lambda d: f"forces[{_index(d, 'screw_drive')}].motor: missing required key (names "
                  "of dc_motor bodies)"),
    "supply naming a missing input": (
        lambda d: d["inputs"].update(voltage9=12.0),
        lambda d: "inputs.voltage9: unknown input; accepted: inputs declared by forces: "
                  "voltage0, voltage1, voltage2, voltage3"),
    "negative motor resistance": (
        lambda d: _body(d, "motor1").update(resistance=-3.07),
        lambda d: f"bodies[{d['bodies'].index(_body(d, 'motor1'))}].resistance: -3.07 is "
                  "invalid: accepted values are finite numbers in (0.0, 10000.0] [Ohm]"),
    "latch of zero length": (
        lambda d: _force(d, "latch", 2).update(deployed_length=0),
        lambda d: f"forces[{_index(d, 'latch', 2)}].deployed_length: 0 is invalid: accepted "
                  "values are finite numbers > 0 [m]"),
    "latch between two points of one body": (
        lambda d: _force(d, "latch").update(b="vertical0.bottom"),
        lambda d: f"forces[{_index(d, 'latch')}]: a and b are both on body 'vertical0'; "
                  "accepted: markers on two different bodies"),
}


@pytest.mark.parametrize("name", BROKEN)
def test_broken_entries_are_refused_with_key_path_and_accepted_values(truss_dict, name):
    change, expected = BROKEN[name]
    d = _with(truss_dict, change)
    with pytest.raises(ModelFileError) as err:
        model_from_dict(d)
    assert len(err.value.problems) == 1
    assert err.value.problems[0].startswith(expected(d)), err.value.problems


def test_every_problem_at_once_and_an_unknown_removed_equation(truss_dict):
    def breaks(d):
        _force(d, "screw_drive", 1).update(lead=-1.0, damping=-5.0)
        _body(d, "motor2").update(inductance="6.57e-3")
    d = _with(truss_dict, breaks)
    with pytest.raises(ModelFileError) as err:
        model_from_dict(d)
    assert [p.split(":")[0] for p in err.value.problems] == [
        f"bodies[{d['bodies'].index(_body(d, 'motor2'))}].inductance",
        f"forces[{_index(d, 'screw_drive', 1)}].lead",
        f"forces[{_index(d, 'screw_drive', 1)}].damping"]
    # an equation name no constraint has: found when the system is built
    d = _with(truss_dict, lambda d: d["removed_equations"].append("gear_top9.moment"))
    with pytest.raises(ModelFileError, match=r"removed_equations: no constraint equation\(s\) "
                                             r"\['gear_top9.moment'\]"):
        model_from_dict(d)


def test_every_other_file_reads_as_before(truss_dict):
    """Planar and spatial files are read by this reader as by theirs; the spatial
    reader refuses the truss's elements by name (they live a layer up)."""
    planar = "examples/models/four_bar.json"
    spatial = "examples/models/spatial/double_pendulum.json"
    assert model_to_dict(load_model(planar)) == spatial_format.model_to_dict(
        spatial_format.load_model(planar))
    d3 = model_to_dict(load_model(spatial))
    assert d3 == spatial_format.model_to_dict(spatial_format.load_model(spatial))
    assert isinstance(load_model(spatial), SpatialSystem)
    problems = spatial_format.validate_model(truss_dict)
    assert any("'dc_motor' is unknown" in p for p in problems)
    assert any("'screw_drive' is unknown" in p for p in problems)


def test_schema_and_reference_name_the_new_types_with_units():
    force_types = {entry["properties"]["type"]["const"]
                   for entry in MODEL_SCHEMA["$defs"]["force"]["oneOf"]}
    assert {"motor_voltage", "screw_drive", "latch", "point_force"} <= force_types
    motor = next(e for e in MODEL_SCHEMA["$defs"]["body"]["oneOf"]
                 if e["properties"]["type"]["const"] == "dc_motor")
    assert motor["properties"]["resistance"]["exclusiveMinimum"] == 0.0
    text = format_reference()
    assert "forces[] type 'screw_drive' (DiagonalScrewDrive)" in text
    assert "finite numbers > 0 [m/rad]" in text
    assert set(models_format.MODEL_TOP_KEYS) >= {"inputs", "removed_equations"}


def test_deployed_truss_with_its_cable_net_round_trips():
    """The net's pretensioned ANCF cables (straight, stress-free length shorter than the
    span) and ball joints are written too; the net's independent joints and the truss's
    dependent rows come back as they were, and two steps agree to the last bit."""
    truss = ring_truss(n_bays=N_BAYS, folded_angle=np.pi / 2, drive=False, latch=False)
    net = add_cable_net(truss)
    d = model_to_dict(truss.system)
    loaded = model_from_dict(d)
    assert model_to_dict(loaded) == d
    assert sum(b["type"] == "cable" for b in d["bodies"]) == len(net.cables)
    assert loaded.redundant_equations == truss.system.redundant_equations
    a = simulate(truss.system, 0.02, 0.01, "generalized-alpha", sparse=True)
    b = simulate(loaded, 0.02, 0.01, "generalized-alpha", sparse=True)
    assert np.array_equal(a.q, b.q)
    # pretensioned: the tensions of the loaded net are the form's
    np.testing.assert_allclose(net.tensions(b.q[0]), net.form.tension, rtol=1e-6)
