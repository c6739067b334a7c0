"""Model files as C-source FMUs that step themselves (issue 23, build item 1): a
SystemBlock's ``c_model()`` (mbdcore.multibody.compiled_model) — the whole
generalized-alpha step in C over the system's compiled terms, written out with their
structures (mbdcore.cimage) — inside the C wrapper's one mechanism for a model with its
own step (``CModel.own_step``, ``model_step``).  The hub-beam (mechanisms.hub_beam with
an ANCF beam, written as a file: its spin-up driver evaluated in C), the example
four-bar file (driven at a constant rate) and the four-bar turned by an input torque
that jumps, with a spring-damper and a torsion spring-damper, and the spatial double
pendulum's bodies with a DC motor's screw drive (force elements that depend on the
state, compiled as measure elements; the motor's C from models/native/drive.c), and a
3D ANCF cable and beam (the body kernels of spatial/native/ancf3d.c): each
FMU in fmpy equals its Python block (same method, substeps, rho_inf
and Newton tolerance 1e-12) to 1e-9 and validates; the sources compile alone with
-pedantic without a warning and export only fmi2*; an absurd torque is a discarded step
naming the Newton failure, the state kept; a file with a part that has no compiled form
is refused naming it.  The spatial double pendulum's file (without its input torque)
likewise, and the hub with a 60-element ANCF beam, solved sparse (the C step's sparse
path), whose saved state continues bit for bit in another instance."""
from __future__ import annotations

import json
import subprocess
import zipfile
from pathlib import Path

import fmpy
import numpy as np
import pytest
from fmpy.validation import validate_fmu

from support.fmi import DISCARD, OK, Instance, Unzipped, start
from flexcosim.cli import main
from fmu.fmi.export_c import GCC_COMMAND, export_c_fmu
from mbdcore.codegen import CModelError
from mbdcore.models.mechanisms import hub_beam
from mbdcore.models.model_block import ModelSystemBlock
from mbdcore.models.model_file import MODEL_FORMAT
from mbdcore.multibody.ancf import ANCFBeam

pytestmark = pytest.mark.gcc

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "models"
METHOD = {"name": "generalized-alpha", "substeps": 2, "rho_inf": 0.8, "tol": 1e-12}
HUB_ANCF = {
    "format": "flexcosim-model", "version": 1,
    "description": "a hub with a 2 m ANCF beam clamped to it, turned by an input torque",
    "gravity": [0.0, 0.0], "ground": {"markers": {"axis": [0.0, 0.0]}},
    "bodies": [
        {"name": "hub", "mass": 1.0, "inertia": 0.5, "position": [0.0, 0.0], "angle": 0.0,
         "velocity": [0.0, 0.0], "omega": 0.0, "markers": {"axis": [0.0, 0.0]}},
        {"type": "ancf_beam", "name": "beam", "start": [0.0, 0.0], "end": [2.0, 0.0],
         "n_elements": 3, "rho_a": 1.2, "ei": 500.0, "ea": 1e5}],
    "joints": [{"type": "revolute", "name": "bearing", "a": "ground.axis", "b": "hub.axis"},
               {"type": "weld", "name": "clamp", "a": "hub.axis", "b": "beam.root",
                "angle": 0.0}],
    "forces": [{"type": "torque", "name": "motor", "a": "ground", "b": "hub",
                "input": "tau"}],
    "inputs": {"tau": 0.0}, "outputs": ["hub.phi", "der(hub.phi)"], "method": METHOD}


def hub_beam_file():
    """mechanisms.hub_beam with a 3-element ANCF beam written as a file: the hub driven by
    its spin-up (here to 6 rad/s in 1 s, so that the short run moves)."""
    system = hub_beam(lambda nm, L, ra, ei, ea: ANCFBeam(nm, (0.0, 0.0), (L, 0.0), 3, ra,
                                                         ei, ea), 6.0)
    model = MODEL_FORMAT.to_dict(system)
    spin, = [j for j in model["joints"] if j["name"] == "spin"]
    spin["motion"]["spin_up_time"] = 1.0
    # full Newton: the Python reference's own modified and full Newton differ by 1.4e-9
    # m/s on this beam's nodal velocities whatever the tolerance (its convergence test's
    # floor, 16 eps |q| for q up to 10 m, times c_v = 400 /s, over the run), and the C
    # step, a fresh matrix at every step, follows full Newton (1.2e-12 m/s in process)
    model.update(method={**METHOD, "iteration": "newton"},
                 outputs=["beam.n3.dx", "beam.n3.dy", "der(beam.n3.dy)", "hub.phi"])
    return model


def four_bar_file():
    """The example four-bar file as it is (crank driven at a constant rate, gravity)."""
    model = json.loads((EXAMPLES / "four_bar.json").read_text())
    model.update(method=METHOD, outputs=["crank.phi", "rocker.phi", "der(rocker.phi)",
                                         "der(coupler.x)"])
    return model


def four_bar_by_torque():
    """The example four-bar with its crank turned by an input torque, not driven, with a
    spring-damper from a ground anchor to the coupler and a torsion spring-damper
    between crank and rocker (state-dependent force elements, compiled as measure
    elements)."""
    model = json.loads((EXAMPLES / "four_bar.json").read_text())
    model["joints"] = [j for j in model["joints"] if j["type"] != "driver"]
    model["ground"]["markers"]["anchor"] = [0.2, 0.4]
    model["forces"] = [{"type": "torque", "name": "motor", "a": "ground", "b": "crank",
                        "input": "tau"},
                       {"type": "spring", "name": "spring", "a": "ground.anchor",
                        "b": "coupler.Q", "stiffness": 200.0, "damping": 2.0,
                        "rest_length": 0.2},
                       {"type": "torsion_spring", "name": "torsion", "a": "crank",
                        "b": "rocker", "stiffness": 0.5, "damping": 0.01}]
    model.update(inputs={"tau": 0.0}, method=METHOD,
                 outputs=["crank.phi", "der(crank.phi)", "rocker.phi", "der(coupler.x)"])
    return model


def spatial_pendulum_file():
    """The example spatial double pendulum (natural-coordinate rigid bodies, spherical
    and revolute joints, gravity) without its torque on the box (with it:
    spatial_pendulum_torque_file)."""
    model = json.loads((EXAMPLES / "spatial" / "double_pendulum.json").read_text())
    model["forces"] = []
    model.pop("inputs", None)
    model["method"] = METHOD
    return model


def spatial_pendulum_torque_file():
    """The example spatial double pendulum as it is, with its constant torque on the box:
    a force linear in q (its forces on the box's unit vectors), ``linear_t`` in C."""
    model = json.loads((EXAMPLES / "spatial" / "double_pendulum.json").read_text())
    model["method"] = METHOD
    return model


def spatial_screw_motor_file():
    """The spatial double pendulum's bodies and joints with a DC motor whose screw pulls
    the rod towards a ground anchor, its supply voltage the input ``tau`` [V] clipped to
    0.4 V (the 0.5 V of the first steps clipped in C as in Python), and a latch on the
    same line that engages in the third step (0.5102, 0.5111, 0.5117 m after the first
    three without it): the motor body (C of models/native/drive.c), the screw drive (the
    gear law) and the latch with its discrete state switched in C."""
    model = spatial_pendulum_file()
    model["ground"]["markers"]["anchor"] = [0.6, 0.4, -0.5]
    model["bodies"].append({"type": "dc_motor", "name": "m", "speed": 30.0, "current": 0.2,
                            "voltage_limit": 0.4})
    model["forces"] = [
        {"type": "motor_voltage", "name": "supply", "motor": "m", "input": "tau"},
        {"type": "screw_drive", "name": "screw", "motor": "m", "a": "ground.anchor",
         "b": "rod.middle", "lead": 0.001, "ratio": 5.0, "stiffness": 2000.0,
         "damping": 20.0},
        {"type": "latch", "name": "latch", "a": "ground.anchor", "b": "rod.middle",
         "deployed_length": 0.5114, "stiffness": 2e3, "damping": 5.0}]
    # full Newton, as the C step (see hub_beam_file): the motor's rates of up to 30
    # rad/s carry the Python reference's modified-Newton floor otherwise
    model.update(inputs={"tau": 0.0}, outputs=["m.phi", "der(m.phi)", "der(m.charge)"],
                 method={**METHOD, "iteration": "newton"})
    return model


def spatial_ancf_file():
    """A damped 3D ANCF cable on a ball joint with a rigid body on its tip, and a damped
    fully parameterised ANCF beam clamped to the ground, under gravity: the spatial ANCF
    body kernels (native/ancf3d.c) in the C image.  Five substeps of 2 ms: the beam's
    sections (rho_yy = 1e-4 kg m against the section stiffness EA) ring at about 1e4
    rad/s, and at 5 ms the C step's modified Newton (fresh blocks per step, rebuilt where
    the contraction is slow, no halving) diverges at the first step where the Python
    block's full Newton converges."""
    return {
        "format": "flexcosim-model", "version": 1, "dimension": 3,
        "description": "a 3D ANCF cable with a body on its tip and an ANCF beam",
        "gravity": [0, 0, -9.81],
        "ground": {"markers": {"O": [0, 0, 0], "M": [0.5, 0.1, 0.0]}},
        "bodies": [
            {"type": "cable", "name": "c", "start": [0, 0, 0], "end": [1.0, 0.2, 0.0],
             "n_elements": 3, "rho_a": 0.4, "ea": 1e4, "ei": 2.0, "damping": 0.01,
             "markers": {"mid": 0.5}},
            {"type": "rigid_body", "name": "r", "mass": 0.5, "inertia": [0.02, 0.02, 0.03],
             "position": [1.0, 0.2, 0.0], "markers": {"p": [0, 0, 0]}},
            {"type": "beam", "name": "b", "start": [0.5, 0.1, 0.0], "end": [1, 1, 0.3],
             "n_elements": 2, "rho_a": 1.0, "ea": 1e4, "ei_xy": 1.0, "ei_xz": 4.0,
             "gj": 0.5, "rho_yy": 1e-4, "rho_zz": 1e-4, "damping": 0.02}],
        "joints": [
            {"type": "spherical", "name": "pin", "a": "ground.O", "b": "c.root"},
            {"type": "spherical", "name": "tip", "a": "c.tip", "b": "r.p"},
            {"type": "fixed", "name": "clamp", "a": "ground.M", "b": "b.root"}],
        "forces": [], "outputs": ["c.n3.rz", "der(c.n3.rz)", "b.n2.rz", "der(b.n2.ry)"],
        # full Newton, as the C step (see hub_beam_file)
        "method": {**METHOD, "substeps": 5, "iteration": "newton"}}


def _cable_held_inside():
    """The cable of spatial_ancf_file held at its middle by a ball joint to the ground:
    refused as a C FMU (a joint inside a spatial ANCF body; module docstring of
    mbdcore.multibody.compiled_model)."""
    model = spatial_ancf_file()
    model["joints"].append({"type": "spherical", "name": "middle", "a": "ground.M",
                            "b": "c.mid"})
    return model


def crank_on_stops_file():
    """The example rigid crank falling under gravity and a constant load at its tip (a
    point force on a rigid body's point: its work as a measure) onto two penalty stops:
    its tip's circle onto the ground's line (exponent 1.5) and a ground post's circle
    onto the crank's own line (exponent 1, the normal turning with the crank); both
    engage near 0.15 s (9 and 1.2 mm deep at 0.16 s) and let go by 0.17 s: contact with
    a line, compiled as a projected measure element."""
    model = json.loads((EXAMPLES / "rigid_crank.json").read_text())
    model["gravity"] = [0.0, -9.81]
    model["ground"]["markers"].update({"floor": [0.5, -0.3], "post": [0.25, -0.112]})
    model["forces"] = [
        {"type": "contact", "name": "floor", "a": "crank.tip", "b": "ground.floor",
         "radius_a": 0.05, "stiffness": 1e5, "exponent": 1.5, "damping": 500.0,
         "line_direction": [1.0, 0.0]},
        {"type": "contact", "name": "stop", "a": "ground.post", "b": "crank.O",
         "radius_a": 0.02, "stiffness": 1e5, "exponent": 1.0, "damping": 300.0,
         "line_direction": [-1.0, 0.0]},
        {"type": "point_force", "name": "load", "at": "crank.tip", "force": [2.0, -3.0]}]
    model.update(method=METHOD, outputs=["crank.phi", "der(crank.phi)", "der(crank.x)"])
    return model


def hub_ancf_sparse_file():
    """The hub with its ANCF beam in 60 elements (247 coordinates): solved sparse by
    default (``sparse = "auto"``), so its C model steps on the sparse path (the Newton
    matrix in a pattern fixed at export, factored by sparse_lu.c, factors kept across
    steps)."""
    model = json.loads(json.dumps(HUB_ANCF))
    model["bodies"][1]["n_elements"] = 60
    # full Newton in the Python reference (see hub_beam_file): with modified Newton its
    # tip velocity differs from the C step's by 1.05e-9 m/s under another BLAS kernel
    # (OpenBLAS Haswell), the convergence test's floor over the run
    model["method"] = {**METHOD, "iteration": "newton"}
    model["outputs"] = ["hub.phi", "der(hub.phi)", "beam.n60.dy", "der(beam.n60.dy)"]
    return model


MODELS = {"hub_beam": hub_beam_file, "four_bar": four_bar_file,
          "hub_sparse": hub_ancf_sparse_file,
          "four_bar_torque": four_bar_by_torque, "spatial_pendulum": spatial_pendulum_file,
          "spatial_screw_motor": spatial_screw_motor_file, "spatial_ancf": spatial_ancf_file,
          "crank_on_stops": crank_on_stops_file,
          "spatial_pendulum_torque": spatial_pendulum_torque_file}
H, STEPS = 0.01, 30


def torque(t):
    return 0.5 if t < 0.1 else -0.3


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """name -> (block class, FMU path, the compiler's messages, the binary), each
    exported with its sources only and compiled once, alone, by the documented command
    with -pedantic, the binary put into the FMU."""
    folder = tmp_path_factory.mktemp("multibody")
    out = {}
    for name, model in MODELS.items():
        path = folder / f"{name}.json"
        path.write_text(json.dumps(model()))
        block = ModelSystemBlock.for_model(path)
        fmu = export_c_fmu(block, folder, model_name=name, compile=False)
        unzipped = folder / name
        with zipfile.ZipFile(fmu) as z:
            z.extractall(unzipped)
        (unzipped / "binaries" / "linux64").mkdir(parents=True)
        done = subprocess.run(GCC_COMMAND.format(id=name).split() + ["-pedantic"],
                              cwd=unzipped, capture_output=True, text=True)
        binary = unzipped / "binaries" / "linux64" / f"{name}.so"
        with zipfile.ZipFile(fmu, "a") as z:
            z.write(binary, f"binaries/linux64/{name}.so")
        out[name] = (block, fmu, done.stderr if done.returncode == 0 else "failed", binary)
    return out


@pytest.mark.parametrize("name", list(MODELS))
def test_the_c_fmu_equals_the_python_block_in_fmpy(name, exported):
    """Over 0.3 s (a torque that jumps at 0.1 s where there is an input: the C model
    restarts its history there as the Python block does)."""
    block_class, fmu = exported[name][:2]
    inputs = [s.name for s in block_class.INPUTS]
    signal = np.array([(0.0, 0.5), (0.1, 0.5), (0.1, -0.3), (1.0, -0.3)],
                      dtype=[("time", float), ("tau", float)]) if inputs else None
    result = fmpy.simulate_fmu(str(fmu), stop_time=STEPS * H, output_interval=H,
                               input=signal)
    block = block_class()
    rows = []
    for k in range(STEPS):
        if inputs:
            block.inputs["tau"] = torque(k * H)
        block.do_step(k * H, H)
        rows.append([block.outputs()[s.name] for s in block_class.OUTPUTS])
    c = np.array([result[s.name] for s in block_class.OUTPUTS]).T[1:]
    assert np.abs(np.array(rows)).max() > 1e-2          # it moved
    assert np.abs(c - np.array(rows)).max() <= 1e-9


@pytest.mark.parametrize("name", list(MODELS))
def test_the_sources_compile_alone_warning_free_export_only_fmi2_and_validate(name,
                                                                             exported):
    _, fmu, compiler_said, binary = exported[name]
    assert compiler_said == ""
    symbols = subprocess.run(["nm", "-D", "--defined-only", str(binary)],
                             capture_output=True, text=True).stdout.split()[2::3]
    assert symbols and all(s.startswith("fmi2") for s in symbols)
    assert validate_fmu(str(fmu)) == []


def test_a_newton_failure_is_a_discarded_step_with_the_solver_message(exported, tmp_path):
    fmu = exported["four_bar_torque"][1]
    unzipped = Unzipped(fmu, tmp_path / "x")
    instance = Instance(unzipped.md, str(unzipped.dir), step=H)
    instance.set("tau", 0.5)
    instance.step()
    before = instance.get("crank.phi", "der(crank.phi)")
    instance.set("tau", 1e12)
    with pytest.raises(fmpy.fmi1.FMICallException) as failed:
        instance.step()
    assert failed.value.status == DISCARD
    assert any("generalized-alpha: Newton did not converge at t = " in m and
               "; the state is kept at t = 0.01" in m
               for s, m in instance.messages if s == DISCARD), instance.messages
    assert instance.get("crank.phi", "der(crank.phi)") == before
    instance.set("tau", 0.5)
    instance.step()                 # and it goes on from there
    instance.fmu.terminate()
    instance.fmu.freeInstance()


@pytest.mark.parametrize("file, part", [
    ("hub_beam.json", "body 'beam' (ModalBeam: no compiled form)"),
    (_cable_held_inside, "joint 'middle' (at 0.5 m along 'c': a C image of a joint "
                         "inside a spatial ANCF body diverges")])
def test_a_file_with_a_part_without_compiled_form_is_refused_naming_it(file, part):
    model = file() if callable(file) else json.loads((EXAMPLES / file).read_text())
    model["method"] = METHOD
    block = ModelSystemBlock.configured({"model": model})()
    with pytest.raises(CModelError, match=part.replace("(", r"\(").replace(")", r"\)")):
        block.c_model()


def test_a_linear_actuator_is_refused_naming_it():
    """Its compiled law reads its input before each solve in process; a C model takes
    inputs only as forces independent of the state."""
    model = four_bar_by_torque()
    model["forces"].append({"type": "linear_actuator", "name": "jack", "a": "crank.P",
                            "b": "coupler.Q", "input": "push", "direction": [0.0, 1.0]})
    model["inputs"]["push"] = 0.0
    block = ModelSystemBlock.configured({"model": model})()
    assert block.system.compiled_terms() is not None
    with pytest.raises(CModelError, match=r"force 'jack' \(JointForce: its compiled form "
                       "reads an input or a load in time"):
        block.c_model()


def test_export_c_takes_a_model_file_and_refuses_one_naming_the_part(tmp_path, capsys):
    """``flexcosim export-c MODEL.json`` (build item 2): a file whose every part has a
    compiled form becomes a C FMU named after the file; one with a part that has none is
    one error line naming it, exit code 2."""
    path = tmp_path / "hub_ancf.json"
    path.write_text(json.dumps(HUB_ANCF))
    assert main(["-q", "export-c", str(path), "-o", str(tmp_path), "--no-compile"]) == 0
    fmu = tmp_path / "HubAncfC.fmu"
    assert capsys.readouterr().out.strip() == str(fmu)
    with zipfile.ZipFile(fmu) as z:
        assert "sources/newton.c" in z.namelist()
    assert main(["-q", "export-c", str(EXAMPLES / "hub_beam.json"), "-o",
                 str(tmp_path)]) == 2
    line, = capsys.readouterr().err.splitlines()
    assert line.startswith("flexcosim export-c: error: ") and \
        "body 'beam' (ModalBeam: no compiled form)" in line, line


def _steps(fmu: Unzipped, slot: int, k0: int, k1: int, outputs) -> str:
    return "".join(f"set_real {slot} {fmu.vr['tau']} {torque(k * H)!r}\n"
                   f"step {slot} {k * H!r} {H!r}\nget_real {slot} {fmu.vrs(*outputs)}\n"
                   for k in range(k0, k1))


@pytest.mark.parametrize("name", ["four_bar_torque", "hub_sparse"])
def test_the_c_host_runs_it_in_a_bare_environment_and_saved_states_continue(
        host, exported, tmp_path, name):
    """The torque-driven four-bar, and the hub-beam on the sparse path, in the project's
    C host with an empty environment (``env -i``): the values fmpy gets from the same
    binary, bit for bit, so the Python block's to 1e-9; a state saved after 12 steps
    (history, held inputs, where the kept sparse factors were made and all), set again
    in place and, serialized, in a second instance, continues bit for bit."""
    block_class, fmu = exported[name][:2]
    outputs = [s.name for s in block_class.OUTPUTS]
    unzipped = Unzipped(fmu, tmp_path / "x")
    blob = tmp_path / "state.bin"
    run = host(start(unzipped) + _steps(unzipped, 0, 0, 12, outputs)
               + f"get_state 0 0\nserialize 0 0 {blob}\n"
               + _steps(unzipped, 0, 12, STEPS, outputs)
               + "set_state 0 0\n" + _steps(unzipped, 0, 12, STEPS, outputs)
               + f"instantiate 1 other {unzipped.guid} {unzipped.uri()} 0\ninit 1 0\n"
               f"exit_init 1\ndeserialize 1 {blob} 1\nset_state 1 1\n"
               + _steps(unzipped, 1, 12, STEPS, outputs)
               + "free_state 0 0\nfree_state 1 1\nfree 0\nfree 1\n", bare=True)
    assert set(run.statuses("step")) == {OK}
    assert set(run.statuses("get_state") + run.statuses("set_state")
               + run.statuses("serialize") + run.statuses("deserialize")) == {OK}
    values = run.values()
    first, again, restored = values[12:STEPS], values[STEPS:2 * STEPS - 12], \
        values[2 * STEPS - 12:]
    assert again == first and restored == first
    instance = Instance(unzipped.md, str(unzipped.dir), step=H)
    in_fmpy = []
    for k in range(STEPS):
        instance.set("tau", torque(k * H))
        instance.step()
        in_fmpy.append(instance.get(*outputs))
    instance.fmu.terminate()
    instance.fmu.freeInstance()
    assert values[:STEPS] == in_fmpy


def test_on_the_sparse_path_a_saved_state_continues_bit_for_bit_elsewhere(exported,
                                                                           tmp_path):
    """The sparse path keeps its factors across steps; where they were made is FMU state,
    so a state saved after 5 steps and serialized into a fresh instance (other memory,
    no factors yet) continues with the same bits as the first instance; an absurd
    torque is a discarded step naming the Newton failure, the state kept."""
    unzipped = Unzipped(exported["hub_sparse"][1], tmp_path / "x")
    outputs = ("hub.phi", "der(hub.phi)", "beam.n60.dy", "der(beam.n60.dy)")

    def steps(instance, k):
        out = []
        for _ in range(k):
            instance.step()
            out.append(instance.get(*outputs))
        return out
    first = Instance(unzipped.md, str(unzipped.dir), step=H)
    first.set("tau", 0.5)
    steps(first, 5)
    saved = first.fmu.serializeFMUstate(first.fmu.getFMUstate())
    run = steps(first, 5)
    assert np.abs(np.diff(np.array(run)[:, 0])).min() > 0        # it turns
    second = Instance(unzipped.md, str(unzipped.dir), name="second", step=H)
    second.set("tau", 0.5)
    second.fmu.setFMUstate(second.fmu.deSerializeFMUstate(saved))
    second.t = 5 * H
    assert steps(second, 5) == run
    before = second.get(*outputs)
    second.set("tau", 1e12)
    with pytest.raises(fmpy.fmi1.FMICallException) as failed:
        second.step()
    assert failed.value.status == DISCARD
    assert any("generalized-alpha: Newton did not converge at t = " in m
               for s, m in second.messages if s == DISCARD), second.messages
    assert second.get(*outputs) == before
    for instance in (first, second):
        instance.fmu.terminate()
        instance.fmu.freeInstance()


@pytest.mark.slow
def test_the_ring_truss_on_the_sparse_path_equals_its_python_block(tmp_path):
    """The 4-bay ring truss with its drives and latches (224 coordinates, 654 unknowns
    with GGL), nearly deployed (1.55 rad), every supply at 48 V, as a model file solved
    sparse: its C FMU steps on the sparse path and equals the Python block (its sparse
    path) to 1e-9 in fmpy over 250 steps of 1 ms, in which the four latches engage (at
    0.212 s, in C as in Python).  About 25 s: the export's compilation."""
    from mbdcore.models.model_file import model_to_dict
    from mbdcore.models.ring_truss import ring_truss
    h, steps, volts = 1e-3, 250, 48.0
    model = model_to_dict(ring_truss(n_bays=4, folded_angle=1.55).system, "4-bay truss")
    outputs = ["motor0.phi", "der(motor0.phi)", "der(motor0.charge)", "vertical1.x",
               "der(vertical1.x)"]
    model.update(outputs=outputs, method={"name": "generalized-alpha", "substeps": 1,
                                          "rho_inf": 0.6, "sparse": True,
                                          "iteration": "newton", "tol": 1e-12})
    path = tmp_path / "truss.json"
    path.write_text(json.dumps(model))
    block_class = ModelSystemBlock.for_model(path)
    unzipped = Unzipped(export_c_fmu(block_class, tmp_path, model_name="truss"),
                        tmp_path / "x")
    instance = Instance(unzipped.md, str(unzipped.dir), step=h)
    block = block_class()
    for u in block.inputs:
        instance.set(u, volts)
        block.inputs[u] = volts
    c, python = [], []
    for k in range(steps):
        instance.step()
        c.append(instance.get(*outputs))
        block.do_step(k * h, h)
        python.append([block.outputs()[o] for o in outputs])
    instance.fmu.terminate()
    instance.fmu.freeInstance()
    latched = {f.latch_time for f in block.system.forces_list
               if type(f).__name__ == "DiagonalLatch" and f.latched}
    assert len(latched) == 1 and 0.0 < latched.pop() < steps * h
    assert np.abs(np.array(c) - np.array(python)).max() <= 1e-9


def test_a_saved_state_holds_whether_the_latch_has_engaged(exported, tmp_path):
    """The latch's engaged flag is FMU state.  Saved before it engages (t = 0.01 s), five
    steps in which it does (at 0.025 s), restored: the same five steps bit for bit.  Saved
    engaged (t = 0.04 s) and serialized into a new instance (whose law starts open):
    the next steps equal the first instance's."""
    unzipped = Unzipped(exported["spatial_screw_motor"][1], tmp_path / "x")

    def steps(instance, k):
        out = []
        for _ in range(k):
            instance.step()
            out.append(instance.get("m.phi", "der(m.phi)", "der(m.charge)"))
        return out
    first = Instance(unzipped.md, str(unzipped.dir), step=H)
    first.set("tau", 0.5)
    first.step()
    saved = first.fmu.getFMUstate()
    run = steps(first, 3)
    engaged = first.fmu.serializeFMUstate(first.fmu.getFMUstate())
    run += steps(first, 2)
    first.fmu.setFMUstate(saved)
    first.t = H
    assert steps(first, 5) == run
    second = Instance(unzipped.md, str(unzipped.dir), name="second", step=H)
    second.set("tau", 0.5)
    second.fmu.setFMUstate(second.fmu.deSerializeFMUstate(engaged))
    second.t = 4 * H
    assert steps(second, 2) == run[3:]
    for instance in (first, second):
        instance.fmu.terminate()
        instance.fmu.freeInstance()


@pytest.mark.parametrize("name", ["hub_beam", "spatial_screw_motor"])
def test_the_image_does_not_read_what_freed_memory_held(name, tmp_path):
    """The kernels' work buffers (an ANCF body's forces and element tangents) are part of
    the image the C model is written from; made with np.empty they held whatever the
    memory held before, and a model built after arrays of NaN were freed (numpy reuses
    them) was refused, "table IMAGE: non-finite values cannot be compiled" -- in the
    suite, depending on which tests had run before in that process.  Zeroed, the image is
    the same whatever ran before."""
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(MODELS[name]()))
    clean = ModelSystemBlock.for_model(path)().c_model()
    junk = [np.full(k, np.nan) for k in range(1, 2000) for _ in range(4)]
    del junk
    after = ModelSystemBlock.for_model(path)().c_model()
    assert all(np.array_equal(after.tables[k], clean.tables[k]) for k in clean.tables)
