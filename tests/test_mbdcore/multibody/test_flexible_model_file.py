"""Flexible bodies in planar model files (issue 23, item 3): the modal, finite-segment
and ANCF beams of mbdcore.multibody are body types of the planar files, with markers by
arc length, written back by model_to_dict; a file's top-level ``outputs`` and
``method`` configure the block made of it, and a flexible model's block defaults to the
implicit method.  Before: ``bodies[1].type: unknown key``."""
import json

import numpy as np
import pytest

from mbdcore.dae.simulate import simulate
from mbdcore.models.mechanisms import HUB_BEAM, hub_beam
from mbdcore.multibody.ancf import ANCFBeam
from mbdcore.multibody.flexible import FiniteSegmentBeam, ModalBeam
from mbdcore.multibody.model_file import (MODEL_SCHEMA, ModelFileError, model_from_dict,
                                          model_to_dict, validate_model)
from mbdcore.multibody.system_block import SystemBlock

P = HUB_BEAM     # length 10 m, rho_a 1.2 kg/m, EI 1.4e4 N m^2, EA 2.8e7 N, T 15 s

#: each beam type: (its body in a file, the same body in Python)
BEAMS = {
    "modal_beam": (
        {"type": "modal_beam", "name": "beam", "length": P["length"], "rho_a": P["rho_a"],
         "ei": P["ei"], "n_modes": 3},
        lambda: ModalBeam("beam", P["length"], P["rho_a"], P["ei"], n_modes=3)),
    "finite_segment_beam": (
        {"type": "finite_segment_beam", "name": "beam", "length": P["length"],
         "rho_a": P["rho_a"], "ei": P["ei"], "n_segments": 6},
        lambda: FiniteSegmentBeam("beam", P["length"], P["rho_a"], P["ei"], n_segments=6)),
    "ancf_beam": (
        {"type": "ancf_beam", "name": "beam", "start": [0, 0], "end": [P["length"], 0],
         "n_elements": 4, "rho_a": P["rho_a"], "ei": P["ei"], "ea": P["ea"]},
        lambda: ANCFBeam("beam", (0.0, 0.0), (P["length"], 0.0), 4, P["rho_a"], P["ei"],
                         P["ea"])),
}


def hub_beam_file(beam: dict) -> dict:
    """docs/benchmarks.md §2 as a user writes it: mechanisms.hub_beam, element for
    element."""
    return {"format": "flexcosim-model", "version": 1,
            "ground": {"markers": {"axis": [0, 0]}},
            "bodies": [{"name": "hub", "mass": 1.0, "inertia": 1.0, "markers": {"axis": [0, 0]}},
                       beam],
            "joints": [{"type": "revolute", "name": "bearing", "a": "ground.axis",
                        "b": "hub.axis"},
                       {"type": "driver", "name": "spin", "a": "ground", "b": "hub",
                        "motion": {"type": "spin_up", "final_rate": 4.0,
                                   "spin_up_time": P["spin_up_time"]}},
                       {"type": "weld", "name": "clamp", "a": "hub.axis", "b": "beam.root"}]}


def assert_same_equations(a, b, seed=1):
    """Same unknowns, state, mass, forces and constraint terms, to the last bit."""
    assert a.coordinate_names() == b.coordinate_names()
    assert a.multiplier_names() == b.multiplier_names()
    for x, y in zip(a.initial_state(), b.initial_state()):
        np.testing.assert_array_equal(x, y)
    rng = np.random.default_rng(seed)
    q0, _ = a.initial_state()
    for _ in range(3):
        t = rng.uniform(0.0, 15.0)
        q = q0 + rng.normal(scale=0.02, size=q0.size)
        v = rng.normal(size=q0.size)
        np.testing.assert_array_equal(b.mass_matrix(q), a.mass_matrix(q))
        np.testing.assert_array_equal(b.forces(t, q, v), a.forces(t, q, v))
        for x, y in zip(a.constraint_terms(t, q, v), b.constraint_terms(t, q, v)):
            np.testing.assert_array_equal(y, x)


@pytest.mark.parametrize("kind", BEAMS)
def test_the_hub_beam_file_is_the_python_hub_beam(kind):
    """The file's system and mechanisms.hub_beam have the same equations bit for bit,
    and 0.5 s of the spin-up with generalized-alpha gives the same trajectory."""
    body, factory = BEAMS[kind]
    from_file = model_from_dict(hub_beam_file(body))
    in_python = hub_beam(lambda *args: factory())
    assert_same_equations(from_file, in_python)
    a = simulate(from_file, 0.5, 0.01, "generalized-alpha")
    b = simulate(in_python, 0.5, 0.01, "generalized-alpha")
    np.testing.assert_array_equal(a.q, b.q)
    assert np.ptp(a.q[:, in_python.coordinate_names().index("hub.phi")]) > 1e-4   # it spun


@pytest.mark.parametrize("kind", BEAMS)
def test_beams_are_written_back_and_load_with_the_same_equations(kind):
    """model_to_dict writes every key of the beam (defaults resolved) and a marker by
    arc length; the file validates against MODEL_SCHEMA's shape and loads again."""
    body, _ = BEAMS[kind]
    d = hub_beam_file({**body, "markers": {"mid": 5.0}})
    system = model_from_dict(d)
    written = json.loads(json.dumps(model_to_dict(system)))
    beam = written["bodies"][1]
    assert beam["type"] == kind and beam["markers"] == {"mid": 5.0}
    assert "type" not in written["bodies"][0]          # rigid bodies as before beams
    assert_same_equations(system, model_from_dict(written))
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.Draft202012Validator(MODEL_SCHEMA).validate(written)


def test_a_marker_by_arc_length_is_where_the_beam_is():
    """A point force at {"body": "beam", "arc_length": L} is the tip's; the named marker
    'mid' at L/2 lies at (L/2, 0) on the undeformed beam."""
    body, _ = BEAMS["modal_beam"]
    d = hub_beam_file({**body, "markers": {"mid": 5.0}})
    d["forces"] = [{"type": "point_force", "at": {"body": "beam", "arc_length": 10.0},
                    "force": [0.0, -1.0]}]
    system = model_from_dict(d)
    body_, loc = system.marker("beam.mid")
    q0, v0 = system.initial_state()
    np.testing.assert_allclose(system.view(q0, v0)[body_].point(loc)[0], [5.0, 0.0],
                               rtol=0, atol=1e-12)
    tip = model_from_dict({**d, "forces": [{"type": "point_force", "at": "beam.tip",
                                            "force": [0.0, -1.0]}]})
    np.testing.assert_array_equal(system.forces(0.0, q0, v0), tip.forces(0.0, q0, v0))


@pytest.mark.parametrize("change, words", [
    (lambda b: b.update(markers={"far": 11.0}),
     "bodies[1].markers.far: 11.0 is invalid: accepted values are arc lengths in [0, 10] m"),
    (lambda b: b.update(n_modes=11), "bodies[1].n_modes: 11 is invalid: accepted values are "
                                     "integers 1..10"),
    (lambda b: b.update(mode_shapes="free"), "bodies[1].mode_shapes: 'free' is invalid"),
    (lambda b: b.pop("ei"), "bodies[1].ei: missing required key"),
    (lambda b: b.update(mass=1.0), "bodies[1].mass: unknown key"),
])
def test_a_broken_beam_names_the_key_and_the_accepted_values(change, words):
    body = dict(BEAMS["modal_beam"][0])
    change(body)
    problems = validate_model(hub_beam_file(body))
    assert any(words in p for p in problems), problems


def test_a_point_on_a_beam_is_an_arc_length():
    d = hub_beam_file(dict(BEAMS["modal_beam"][0]))
    d["forces"] = [{"type": "point_force", "at": {"body": "beam", "point": [1, 0]},
                    "force": [0, 1]}]
    with pytest.raises(ModelFileError, match=r"forces\[0\]\.at: .*a point on the modal_beam "
                                             r"'beam' is written \{\"body\": name, "
                                             r"\"arc_length\": s\}"):
        model_from_dict(d)


# --- the block made of a file: inputs, outputs, method ---------------------------------------
def torque_hub_beam() -> dict:
    """A hub on a bearing driven by the input torque ``tau`` [N m], a modal beam clamped
    to it, the tip deflection (the first modal amplitudes' sum is the tip's: shapes
    normalised to a unit tip) and the hub angle as outputs."""
    d = hub_beam_file(dict(BEAMS["modal_beam"][0]))
    d["joints"] = [j for j in d["joints"] if j["type"] != "driver"]
    d["forces"] = [{"type": "torque", "name": "motor", "a": "ground", "b": "hub",
                    "input": "tau"}]
    d["inputs"] = {"tau": 2.0}
    d["outputs"] = ["hub.phi", "beam.delta1", "beam.delta2", "position.beam.tip.y"]
    return d


def test_the_tip_deflection_output_is_the_modal_amplitudes_sum():
    """Modal shapes are normalised to a unit tip deflection: at any state the output
    tip_deflection.beam is delta_1 + delta_2 + delta_3 (to the exact kinematics'
    foreshortening, second order in the deflection)."""
    d = {**torque_hub_beam(), "outputs": ["tip_deflection.beam", "beam.delta1",
                                          "beam.delta2", "beam.delta3"]}
    b = SystemBlock.for_model(d)()
    for k in range(30):
        b.do_step(k * 0.01, 0.01)
    out = b.outputs()
    modal = out["beam.delta1"] + out["beam.delta2"] + out["beam.delta3"]
    assert abs(modal) > 1e-5
    assert out["tip_deflection.beam"] == pytest.approx(modal, rel=1e-3)


def test_the_file_gives_the_block_its_signals_and_default_method():
    block = SystemBlock.for_model(torque_hub_beam())
    assert [s.name for s in block.OUTPUTS] == torque_hub_beam()["outputs"]
    assert [(s.name, s.unit, s.start) for s in block.INPUTS] == [("tau", "N.m", 2.0)]
    b = block()
    assert (b.params["method"], b.params["substeps"]) == ("generalized-alpha", 1)


def test_a_rigid_file_keeps_the_explicit_default():
    d = torque_hub_beam()
    d["bodies"] = d["bodies"][:1]
    d["joints"] = d["joints"][:1]
    d.pop("outputs")
    b = SystemBlock.for_model(d)()
    assert (b.params["method"], b.params["substeps"]) == ("rk4", 10)


def test_the_method_with_its_options_configures_the_block_and_round_trips():
    d = {**torque_hub_beam(), "method": {"name": "hht", "substeps": 2, "alpha": -0.1}}
    b = SystemBlock.for_model(d)()
    assert (b.params["method"], b.params["substeps"]) == ("hht", 2)
    assert b.integrator.alpha == -0.1
    assert model_to_dict(model_from_dict(d))["method"] == d["method"]
    d["method"] = {"name": "generalized-alpha", "rho_inf": 0.5}
    assert SystemBlock.for_model(d)().params["rho_inf"] == 0.5


@pytest.mark.parametrize("method, words", [
    ("rk5", "method.name: 'rk5' is invalid: accepted values are rk4, gill"),
    ({"name": "rk4", "rho_inf": 0.5}, "method.rho_inf: unknown key; accepted keys: name, "
                                      "substeps, baumgarte"),
    ({"name": "generalized-alpha", "substeps": 0}, "method.substeps: 0 is invalid: accepted "
                                                   "values are integers 1..100000"),
    ({"name": "generalized-alpha", "rho_inf": 2.0}, "method: "),
    ({"name": "generalized-alpha", "baumgarte": 5.0}, "method.baumgarte: the index-1 form's"),
])
def test_a_bad_method_names_the_key_and_the_accepted_values(method, words):
    problems = validate_model({**torque_hub_beam(), "method": method})
    assert any(words in p for p in problems), problems


def test_unknown_outputs_are_refused_listing_the_accepted():
    with pytest.raises(ValueError, match=r"unknown output\(s\) \['beam.delta9'\]"):
        SystemBlock.for_model({**torque_hub_beam(), "outputs": ["beam.delta9"]})
    assert "outputs: 'hub.phi' is invalid" in " ".join(
        validate_model({**torque_hub_beam(), "outputs": "hub.phi"}))


def test_the_block_with_its_default_method_follows_simulate():
    """The torque-driven hub-beam as a block with the file's defaults (generalized-alpha,
    one substep) equals simulate with that method, step and input to round-off."""
    d = torque_hub_beam()
    block = SystemBlock.for_model(d)()
    h, steps = 0.01, 50
    out = []
    for k in range(steps):
        block.set_inputs({"tau": 2.0})
        block.do_step(k * h, h)
        out.append(block.outputs()["hub.phi"])
    system = model_from_dict(d)
    ref = simulate(system, steps * h, h, "generalized-alpha", inputs=lambda t: {"tau": 2.0})
    phi = ref.q[1:, ref.coordinates.index("hub.phi")]
    np.testing.assert_allclose(out, phi, rtol=1e-9, atol=1e-12)
    # the physics: the torque is the only moment about the axis, so the angular momentum
    # is tau t (the flexible beam lags at first: the hub turns faster than a rigid one)
    momentum = [angular_momentum(system, q, v) for q, v in zip(ref.q, ref.v)]
    np.testing.assert_allclose(momentum, 2.0 * ref.t, rtol=0, atol=1e-6)
    j_total = 1.0 + P["rho_a"] * P["length"] ** 3 / 3.0
    assert out[-1] > 2.0 * (steps * h) ** 2 / (2 * j_total)


def angular_momentum(system, q, v) -> float:
    """About the origin [kg m^2/s]: the generalised momentum M v on the coordinate change
    of a rigid rotation (Noether): (-y, x, 1) on each body's frame (x, y, angle), nothing
    on the modal amplitudes."""
    names = system.coordinate_names()
    turn = np.zeros_like(q)
    for body in system.bodies:
        x, y = names.index(f"{body.name}.x"), names.index(f"{body.name}.y")
        turn[[x, y, y + 1]] = -q[y], q[x], 1.0
    return float((system.mass_matrix(q) @ v) @ turn)
