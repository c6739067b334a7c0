"""Model files describe the same mechanisms as the Python API, and say clearly what is wrong.

Round trips: a benchmark System saved and loaded again has the same equations (exactly)
and therefore the same simulation; the example files load and reproduce the closed-form
rigid crank; every kind of broken file is rejected with its key path and the accepted
values, all problems at once.
"""
import copy
import inspect
import json
import math
import sys

import numpy as np
import pytest

from mbdcore import models
from mbdcore.multibody.ancf import cantilever
from mbdcore.multibody.flexible import ModalBeam
from mbdcore.multibody.constraints import AngleDriver, polynomial_motion
from mbdcore.dae.simulate import simulate
from mbdcore.multibody.model_file import (BODY_TYPES, FORCE_TYPES, JOINT_TYPES, MODEL_SCHEMA,
    ModelFileError, format_reference, load_model, model_from_dict, model_to_dict, save_model,
    validate_model)
from support import EXAMPLES as EXAMPLE_FOLDER

EXAMPLES = EXAMPLE_FOLDER / "models"

BUILDERS = {
    "rigid_crank": models.rigid_crank,
    "slider_crank": models.slider_crank,
    "slider_crank_with_contact": models.slider_crank_with_contact,
    "four_bar": models.four_bar,
    "geared_bars": models.geared_bars,
    # a modal beam of three modes: the planar beams are body types since issue 23
    "hub_beam": lambda: models.hub_beam(
        lambda name, length, rho_a, ei, ea: ModalBeam(name, length, rho_a, ei, n_modes=3)),
}


def reload(system):
    """Save to a JSON string and load again: what a file on disk does."""
    return model_from_dict(json.loads(json.dumps(model_to_dict(system))))


def assert_same_equations(a, b, seed=0):
    """Same unknowns, initial state, inputs, mass, forces and constraint terms."""
    assert a.coordinate_names() == b.coordinate_names()
    assert a.multiplier_names() == b.multiplier_names()
    assert a.inputs == b.inputs
    for x, y in zip(a.initial_state(), b.initial_state()):
        np.testing.assert_array_equal(x, y)
    np.testing.assert_array_equal(a.mass_diagonal(), b.mass_diagonal())
    rng = np.random.default_rng(seed)
    q0, _ = a.initial_state()
    for _ in range(5):
        t = rng.uniform(0.0, 1.0)
        q = q0 + rng.normal(scale=0.05, size=q0.size)
        v = rng.normal(size=q0.size)
        for name in a.inputs:  # exercise the input-driven forces too
            val = rng.normal()
            a.set_input(name, val)
            b.set_input(name, val)
        np.testing.assert_allclose(b.forces(t, q, v), a.forces(t, q, v), rtol=0, atol=1e-14)
        for x, y in zip(a.constraint_terms(t, q, v), b.constraint_terms(t, q, v)):
            np.testing.assert_allclose(y, x, rtol=0, atol=1e-14)
        assert b.energy(t, q, v) == pytest.approx(a.energy(t, q, v), rel=0, abs=1e-14)


# --- round trips -----------------------------------------------------------------------------
@pytest.mark.parametrize("name", BUILDERS)
def test_saved_and_loaded_benchmark_has_the_same_equations(name):
    assert_same_equations(BUILDERS[name](), reload(BUILDERS[name]()))


@pytest.mark.parametrize("name", BUILDERS)
def test_saved_and_loaded_benchmark_simulates_identically(name):
    run = dict(t_end=0.05, h=1e-3, method="rk4")
    api = simulate(BUILDERS[name](), **run)
    loaded = simulate(reload(BUILDERS[name]()), **run)
    # same parameters to the last bit, same code: the same numbers, not just close ones
    np.testing.assert_array_equal(loaded.q, api.q)
    np.testing.assert_array_equal(loaded.lam, api.lam)
    assert loaded.multipliers == api.multipliers and loaded.units == api.units


def test_contact_round_trip_through_the_impact():
    """The rod reaches the post within 0.25 s: the contact force of the loaded model
    must act exactly like the original's."""
    run = dict(t_end=0.3, h=2e-4, method="rk4", record_every=50)
    api = simulate(models.slider_crank_with_contact(), **run)
    loaded = simulate(reload(models.slider_crank_with_contact()), **run)
    assert api["crank.phi"].min() > -1.0  # the crank was stopped by the post (free: -1.40)
    np.testing.assert_array_equal(loaded.q, api.q)


def test_saving_is_a_fixed_point_and_files_keep_floats_exact(tmp_path):
    d = model_to_dict(models.slider_crank(theta1=0.123456789012345))
    path = save_model(model_from_dict(d), tmp_path / "m.json")
    assert json.loads(path.read_text()) == d
    assert model_to_dict(load_model(path)) == d


def test_yaml_round_trip(tmp_path):
    pytest.importorskip("yaml")
    path = save_model(models.four_bar(), tmp_path / "four_bar.yaml")
    assert_same_equations(models.four_bar(), load_model(path))


def test_polynomial_driver_and_optional_elements_round_trip():
    s = models.four_bar()
    s.joints[-1] = AngleDriver("ground", "crank", polynomial_motion(0.3, 6.0, -1.5, 0.25),
                               name="drive")
    s.joints[-1].bind(s)
    d = model_to_dict(s)
    assert d["joints"][-1]["motion"] == {"type": "polynomial",
                                         "coefficients": [0.3, 6.0, -1.5, 0.25]}
    assert_same_equations(s, model_from_dict(d))


def test_every_element_type_round_trips():
    """One model with each joint and force type (built from a file, saved, loaded)."""
    d = {"format": "flexcosim-model", "version": 1, "gravity": [0.0, -9.81],
         "ground": {"markers": {"O": [0, 0], "P": [1, 0], "W": [2, 0]}},
         "bodies": [{"name": n, "mass": 1.0 + i, "inertia": 0.1, "position": [0.5 * i, 0.1],
                     "angle": 0.2 * i, "markers": {"A": [0.1, 0], "B": [-0.1, 0.05]}}
                    for i, n in enumerate(["b1", "b2", "b3", "b4", "b5"])],
         "joints": [
             {"type": "revolute", "a": "ground.O", "b": "b1.A"},
             {"type": "prismatic", "a": "ground.P", "b": "b2.A", "direction": [1, 1]},
             {"type": "weld", "a": "ground.W", "b": {"body": "b3", "point": [0.3, 0.2]},
              "angle": 0.1},
             {"type": "point_on_line", "line": "b1.B", "point": "b4.A", "direction": [0, 2]},
             {"type": "gear", "joint1": ["ground", "b1"], "joint2": ["b3", "b4"], "ratio": 2.5},
             {"type": "driver", "a": "ground", "b": "b5",
              "motion": {"type": "constant_rate", "angle0": 0.8, "rate": -2}}],
         "forces": [
             {"type": "spring", "a": "b1.B", "b": "b2.B", "stiffness": 50, "damping": 0.5},
             {"type": "torsion_spring", "a": "b2", "b": "b3", "stiffness": 3, "damping": 0.1},
             {"type": "torque", "a": "ground", "b": "b1", "input": "tau"},
             {"type": "constant_torque", "a": "b2", "b": "b4", "torque": 1.5},
             {"type": "linear_actuator", "a": "b3.A", "b": "b4.B", "input": "push",
              "direction": [0, 1]},
             {"type": "point_force", "at": "b5.A", "force": [1.0, -2.0]},
             {"type": "contact", "a": "b4.A", "b": "b5.B", "radius_a": 0.2, "radius_b": 0.1,
              "stiffness": 1e5, "damping": 10},
             {"type": "contact", "a": "b2.A", "b": "ground.O", "radius_a": 0.3,
              "line_direction": [1, 0], "stiffness": 1e5}],
         "inputs": {"push": 2.0}}
    s = model_from_dict(d)
    types = [e["type"] for e in model_to_dict(s)["joints"] + model_to_dict(s)["forces"]]
    assert types == [j["type"] for j in d["joints"] + d["forces"]]
    assert s.inputs == {"tau": 0.0, "push": 2.0}
    assert s.joints[0].name == "revolute1" and s.forces_list[7].name == "contact8"
    assert_same_equations(s, reload(s))


def test_a_beam_is_saved_and_loads_with_the_same_equations():
    """Before: refused ("the format has no beams"); now the planar beams are body types
    (issue 23), written back with every key."""
    system = cantilever()
    d = model_to_dict(system)
    assert d["bodies"][0]["type"] == "ancf_beam"
    assert_same_equations(system, reload(system))


def test_a_python_function_motion_cannot_be_saved():
    s = models.four_bar()
    s.joints[-1].motion = lambda t: (math.sin(t), math.cos(t), -math.sin(t))
    with pytest.raises(ModelFileError, match=r"joints\[4\] \(drive\).*constant_rate"):
        model_to_dict(s)


# --- example files ---------------------------------------------------------------------------
def example_files():
    return sorted(p for p in EXAMPLES.iterdir() if p.suffix in (".json", ".yaml", ".yml"))


@pytest.mark.parametrize("path", example_files(), ids=lambda p: p.name)
def test_example_file_loads_and_simulates(path):
    if path.suffix != ".json":
        pytest.importorskip("yaml")
    r = simulate(load_model(path), 0.02, 1e-3, "rk4")
    assert np.all(np.isfinite(r.q)) and r.violation.max() < 1e-8


@pytest.mark.parametrize("path", example_files(), ids=lambda p: p.name)
def test_example_file_is_the_benchmark_of_the_same_name(path):
    if path.suffix != ".json":
        pytest.importorskip("yaml")
    assert_same_equations(BUILDERS[path.stem](), load_model(path))


def test_rigid_crank_file_turns_at_236_rad_per_s2():
    alpha = 62.0 / (1.4 * 0.75**2 / 3)  # torque / (m L^2 / 3) = 236.19 rad/s^2
    r = simulate(load_model(EXAMPLES / "rigid_crank.json"), 0.5, 5e-4, "rk4", record_every=100)
    assert r["crank.phi"][-1] == pytest.approx(0.5 * alpha * 0.5**2, rel=1e-6)


def test_reference_lists_every_type_with_the_constructor_arguments():
    text = format_reference()
    flexible = {k: e for k, e in BODY_TYPES.items() if k != "rigid_body"}
    for registry in (JOINT_TYPES, FORCE_TYPES, flexible):
        for name, entry in registry.items():
            assert f"type {name!r}" in text
            # keys = constructor arguments, so a file reads like the Python call
            args = [p for p in inspect.signature(entry.cls.__init__).parameters if p != "self"]
            assert sorted(args) == sorted({"name", *entry.keys})


def test_example_files_satisfy_the_json_schema():
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.Draft202012Validator.check_schema(MODEL_SCHEMA)
    validator = jsonschema.Draft202012Validator(MODEL_SCHEMA)
    for path in EXAMPLES.glob("*.json"):
        validator.validate(json.loads(path.read_text()))
    bad = json.loads((EXAMPLES / "slider_crank.json").read_text())
    bad["bodies"][0]["mass"] = -1
    assert not validator.is_valid(bad)


# --- broken files ----------------------------------------------------------------------------
def base():
    return model_to_dict(models.slider_crank())


def broken(change):
    d = base()
    change(d)
    return d


BROKEN = {
    # name: (change, words the message must contain: the path and the accepted values)
    "wrong type": (lambda d: d["bodies"][0].update(mass="heavy"),
                   ["bodies[0].mass: 'heavy' is invalid", "finite numbers > 0 [kg]"]),
    "negative mass": (lambda d: d["bodies"][1].update(mass=-1.0),
                      ["bodies[1].mass: -1.0 is invalid: "
                       "accepted values are finite numbers > 0 [kg]"]),
    "unknown joint type": (lambda d: d["joints"][0].update(type="hinge"),
                           ["joints[0].type: 'hinge' is unknown: accepted revolute, prismatic, "
                            "weld, point_on_line, gear, driver"]),
    "unknown marker": (lambda d: d["joints"][2].update(a="crank.Q"),
                       ["joints[2].a: marker 'crank.Q' does not exist; markers of crank: O, A"]),
    "unknown body": (lambda d: d["forces"][1].update(b="crnak"),
                     ["forces[1].b: body 'crnak' does not exist; "
                      "bodies: ground, crank, rod, slider"]),
    "unknown key": (lambda d: d["forces"][0].update(stifness=1.0),
                    ["forces[0].stifness: unknown key; accepted keys: type, name, a, b, "
                     "stiffness, damping, rest_length"]),
    "missing key": (lambda d: d["bodies"][2].pop("inertia"),
                    ["bodies[2].inertia: missing required key", "finite numbers > 0 [kg m^2]"]),
    "duplicate body name": (lambda d: d["bodies"].append({"name": "rod", "mass": 1, "inertia": 1}),
                            ["bodies[3].name: 'rod' is a duplicate", "ground, crank, rod, slider"]),
    "non-finite number": (lambda d: d["bodies"][0].update(angle=float("inf")),
                          ["bodies[0].angle: inf is invalid: "
                           "accepted values are finite numbers [rad]"]),
    "wrong vector length": (lambda d: d.update(gravity=[0.0, -9.8, 0.0]),
                            ["gravity: [0.0, -9.8, 0.0] is invalid",
                             "lists of 2 finite numbers [m/s^2]"]),
    "wrong format": (lambda d: d.update(format="urdf"),
                     ["format: 'urdf' is invalid: accepted values are 'flexcosim-model'"]),
    "wrong version": (lambda d: d.update(version=2),
                      ["version: 2 is invalid: accepted values are 1"]),
    "unknown motion": (lambda d: d["joints"].append(
        {"type": "driver", "a": "ground", "b": "crank", "motion": {"type": "sine"}}),
        ["joints[4].motion.type: 'sine' is unknown: accepted constant_rate, polynomial"]),
    "unknown input": (lambda d: d["inputs"].update(force=1.0),
                      ["inputs.force: unknown input", "declared by forces: tau"]),
}


@pytest.mark.parametrize("name", BROKEN)
def test_broken_model_names_the_path_and_the_accepted_values(name):
    change, words = BROKEN[name]
    d = broken(change)
    with pytest.raises(ModelFileError) as err:
        model_from_dict(d)
    assert len(err.value.problems) == 1, err.value.problems
    for w in words:
        assert w in str(err.value)
    assert validate_model(d) == err.value.problems


def test_all_problems_of_a_file_are_reported(tmp_path):
    d = base()
    for name in ("negative mass", "unknown joint type", "unknown marker", "unknown key",
                 "wrong version"):
        BROKEN[name][0](d)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(d))
    with pytest.raises(ModelFileError) as err:
        load_model(path)
    assert len(err.value.problems) == 5
    assert str(path) in str(err.value) and "5 problems" in str(err.value)
    assert isinstance(err.value, ValueError)


@pytest.mark.parametrize("text, words", [
    ("{\"format\": \"flexcosim-model\",", ["not valid JSON", "line 1"]),
    ("<model/>", ["not valid JSON"]),
    ("[1, 2]", ["(top level): [1, 2] is invalid", "flexcosim-model"]),
    ('{"format": "flexcosim-model", "version": 1, "version": 2}', ["duplicate key(s) version"]),
])
def test_not_a_model_json_file(tmp_path, text, words):
    path = tmp_path / "model.json"
    path.write_text(text)
    with pytest.raises(ModelFileError) as err:
        load_model(path)
    for w in words:
        assert w in str(err.value)


def test_unknown_file_type(tmp_path):
    path = tmp_path / "model.xml"
    path.write_text("<model/>")
    with pytest.raises(ModelFileError, match=r"accepted file types are \.json, \.yaml, \.yml"):
        load_model(path)


def test_yaml_without_pyyaml_names_the_package(tmp_path, monkeypatch):
    path = tmp_path / "model.yaml"
    path.write_text("format: flexcosim-model\nversion: 1\n")
    monkeypatch.setitem(sys.modules, "yaml", None)  # import yaml now raises ImportError
    with pytest.raises(ModelFileError, match=r'PyYAML.*pip install "flexcosim\[yaml\]"'):
        load_model(path)
    with pytest.raises(ModelFileError, match="PyYAML"):
        save_model(models.rigid_crank(), path)


def test_yaml_reads_1e3_as_text_and_the_message_says_so(tmp_path):
    pytest.importorskip("yaml")
    path = tmp_path / "model.yaml"
    path.write_text((EXAMPLES / "geared_bars.yaml").read_text().replace("mass: 1.0", "mass: 1e3"))
    with pytest.raises(ModelFileError, match=r"bodies\[0\].mass: '1e3' is invalid.*1.0e-3"):
        load_model(path)


def test_same_body_on_both_sides_and_contact_alternatives():
    d = broken(lambda d: d["joints"][3].update(b="ground.O"))
    d["forces"].append({"type": "contact", "a": "ground.O", "b": "rod.A", "radius_a": 0.1,
                        "stiffness": 1e4})
    problems = validate_model(d)
    assert problems == [
        "joints[3]: a and b are both on body 'ground'; accepted: markers on two different bodies",
        "forces[2]: give exactly one of radius_b, line_direction (given: none)"]


def test_duplicate_element_names_and_inputs():
    d = base()
    d["joints"][1]["name"] = "O"
    d["forces"].append({"type": "torque", "a": "crank", "b": "rod", "input": "tau"})
    problems = validate_model(d)
    assert problems == [
        "joints[1].name: 'O' is a duplicate of joints[0]: names must be unique within joints",
        "forces[2].input: 'tau' is declared by forces[1] already: every input drives one element"]


def test_unchanged_base_is_valid_and_copies_are_independent():
    d = base()
    assert validate_model(d) == []
    model_from_dict(copy.deepcopy(d))
    assert d == base()


def test_40000_keys_with_a_duplicate_name_the_duplicate(tmp_path):
    # the duplicate-key check was quadratic (keys.count per key: 82 s for 40,000 keys)
    keys = [f'"k{i}": {i}' for i in range(40_000)] + ['"k123": 0']
    path = tmp_path / "wide.json"
    path.write_text("{" + ", ".join(keys) + "}")
    with pytest.raises(ModelFileError, match=r"duplicate key\(s\) k123 in one object"):
        load_model(path)


def test_yaml_aliases_are_refused_before_they_expand(tmp_path):
    pytest.importorskip("yaml")
    # "billion laughs": 9 levels of 9 aliases each expand to 9**9 strings
    lines = ['a0: &a0 "lol"']
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 10)]
    path = tmp_path / "laughs.yaml"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ModelFileError, match=r"anchors and aliases are not accepted"):
        load_model(path)
