"""Model files with flexible bodies as FMUs (issue 23): a planar hub-beam file (a rigid
hub on a bearing, a modal beam clamped to it, a torque input, the tip deflection as an
output) and a spatial file with a revolute joint between a rigid hub and an ANCF beam,
each with its inputs, outputs and (no) method in the file, built into FMUs, loaded and
stepped by fmpy with their default method, equal to the Python block and to
``simulate`` on the same system.  Before: the planar file failed to load
(``bodies[1].type: unknown key``), the spatial one too (a revolute on a beam was
refused), and a flexible model's FMU defaulted to rk4 and failed its first step."""
import numpy as np
import pytest
from fmpy import read_model_description

from fmu.fmi.build import build_fmu
from mbdcore.dae.simulate import simulate
from mbdcore.models.model_block import ModelSystemBlock
from mbdcore.models.model_file import model_from_dict
from support.fmi import Instance, Unzipped

H, STEPS = 0.01, 30          # communication step [s], steps
TAU = 0.5                    # torque [N m]


def planar_hub_beam() -> dict:
    return {
        "format": "flexcosim-model", "version": 1,
        "description": "hub-beam: a torque on a hub turns a clamped modal beam",
        "ground": {"markers": {"axis": [0, 0]}},
        "bodies": [{"name": "hub", "mass": 1.0, "inertia": 0.5, "markers": {"axis": [0, 0]}},
                   {"type": "modal_beam", "name": "beam", "length": 2.0, "rho_a": 1.2,
                    "ei": 50.0, "n_modes": 2, "markers": {"mid": 1.0}}],
        "joints": [{"type": "revolute", "name": "bearing", "a": "ground.axis",
                    "b": "hub.axis"},
                   {"type": "weld", "name": "clamp", "a": "hub.axis", "b": "beam.root"}],
        "forces": [{"type": "torque", "name": "motor", "a": "ground", "b": "hub",
                    "input": "tau"}],
        "inputs": {"tau": TAU},
        "outputs": ["hub.phi", "tip_deflection.beam", "beam.delta1", "beam.delta2",
                    "position.beam.tip.y", "energy"]}


def spatial_hub_beam() -> dict:
    return {
        "format": "flexcosim-model", "version": 1, "dimension": 3,
        "description": "a rigid hub and an ANCF beam on a lag hinge",
        "ground": {"markers": {"axis": [0, 0, 0]}},
        "bodies": [{"type": "rigid_body", "name": "hub", "mass": 2.0,
                    "inertia": [0.05, 0.05, 0.08],
                    "markers": {"c": [0, 0, 0], "hinge": [0.2, 0, 0]}},
                   {"type": "beam", "name": "blade", "start": [0.2, 0, 0], "end": [1.2, 0, 0],
                    "n_elements": 3, "rho_a": 0.5, "ea": 1e5, "ei_xy": 20.0, "ei_xz": 20.0,
                    "gj": 10.0, "rho_yy": 1e-5, "rho_zz": 1e-5}],
        "joints": [{"type": "revolute", "name": "bearing", "a": "ground.axis", "b": "hub.c",
                    "axis": [0, 0, 1]},
                   {"type": "revolute", "name": "hinge", "a": "hub.hinge", "b": "blade.root",
                    "axis": [0, 0, 1]}],
        "forces": [{"type": "body_torque", "name": "motor", "body": "hub", "input": "tau",
                    "axis": [0, 0, 1]}],
        "inputs": {"tau": TAU},
        "outputs": ["angle.bearing", "angle.hinge", "tip_deflection.blade", "position.blade.tip.x",
                    "position.blade.tip.y", "energy", "violation"]}


FILES = {"planar": planar_hub_beam, "spatial": spatial_hub_beam}


@pytest.fixture(scope="module", params=list(FILES))
def built(request, tmp_path_factory):
    """(model dict, unzipped FMU) built as `flexcosim build` does."""
    d = FILES[request.param]()
    folder = tmp_path_factory.mktemp(request.param)
    name = f"HubBeam{request.param.capitalize()}"
    path = build_fmu(ModelSystemBlock, folder / f"{name}.fmu", model_name=name,
                     configuration={"model": d, "inputs": None, "outputs": None})
    return d, Unzipped(path, folder / "unzipped")


def test_the_fmu_declares_the_file_signals_and_the_implicit_default(built):
    d, fmu = built
    variables = {v.name: v for v in read_model_description(str(fmu.fmu_file)).modelVariables}
    assert [n for n, v in variables.items() if v.causality == "output"] == d["outputs"]
    assert variables["tau"].causality == "input" and float(variables["tau"].start) == TAU
    assert variables["method"].start == "generalized-alpha"
    assert int(variables["substeps"].start) == 1


def test_fmpy_steps_the_fmu_as_the_block_and_simulate(built):
    d, fmu = built
    instance = Instance(fmu.md, str(fmu.dir), step=H)     # every parameter its default
    assert instance.refused == {} and instance.exit_refused is None
    got = []
    for _ in range(STEPS):
        instance.step()
        got.append(instance.get(*d["outputs"]))
    instance.close()
    got = np.array(got)
    block = ModelSystemBlock.for_model(d)()
    expected = []
    for k in range(STEPS):
        block.do_step(k * H, H)
        expected.append([block.outputs()[o] for o in d["outputs"]])
    # the same Python code in the FMU and here: equal to round-off
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12)
    ref = simulate(model_from_dict(d), STEPS * H, H, "generalized-alpha",
                   inputs=lambda t: {"tau": TAU})
    np.testing.assert_allclose(block.q, ref.q[-1], rtol=0, atol=1e-10)
    energy = got[:, d["outputs"].index("energy")]
    assert energy[-1] > energy[0] + 1e-3          # the torque did work
    assert abs(got[-1, d["outputs"].index("tip_deflection." + block.system.bodies[1].name)]) \
        > 1e-6                                    # and bent the beam
