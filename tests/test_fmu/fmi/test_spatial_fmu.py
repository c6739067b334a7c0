"""Spatial (3D) model files as blocks and FMUs: ``flexcosim build model3d.json``, run in
fmpy and in the plain C host, equal to ``simulate`` on the same file."""
import numpy as np
import pytest
from fmpy import read_model_description
from fmpy.validation import validate_fmu

from support.fmi import OK, Unzipped
from support.fmi import Instance
from flexcosim.cli import main as cli
from mbdcore.blocks import ParameterError
from mbdcore.dae.simulate import simulate
from mbdcore.spatial import SpatialSystem, SpatialSystemBlock, load_model, spatial_system_block

MODEL = "examples/models/spatial/double_pendulum.json"
H, SUBSTEPS, STEPS = 0.01, 4, 50        # communication step [s], substeps, steps (0.5 s)
COORDS = ["box.x", "box.y", "box.z", "box.ux", "box.wz", "rod.xi", "rod.yj", "rod.zj"]
OUTPUTS = COORDS + ["der(box.wz)", "der(rod.zj)", "position.box.pivot.x",
                    "position.box.hook.x", "position.box.hook.y", "position.box.hook.z",
                    "position.rod.middle.z", "reaction.pivot.z", "energy", "violation"]


@pytest.fixture(scope="module")
def pendulum(tmp_path_factory) -> Unzipped:
    folder = tmp_path_factory.mktemp("pendulum3d")
    assert cli(["build", MODEL, "-o", str(folder), "--name", "DoublePendulum3D",
                "--outputs", ",".join(OUTPUTS)]) == 0
    return Unzipped(folder / "DoublePendulum3D.fmu", folder / "unzipped")


def test_spatial_model_file_is_a_standard_fmu_with_units(pendulum):
    assert validate_fmu(str(pendulum.fmu_file)) == []
    units = {v.name: v.unit for v in read_model_description(str(pendulum.fmu_file)).modelVariables}
    assert (units["box.x"], units["box.ux"], units["der(box.wz)"], units["position.box.hook.z"],
            units["reaction.pivot.z"], units["energy"]) == ("m", "1", "1/s", "m", "N", "J")


@pytest.mark.parametrize("method", ["rk4", "generalized-alpha"])
def test_fmu_in_fmpy_equals_simulate_on_the_same_file(pendulum, method):
    """Index-1 (RK4) and index-3 (generalized-alpha) paths: the FMU at every
    communication point equals simulate with the same method and step; the joints hold."""
    ref = simulate(load_model(MODEL), STEPS * H, H / SUBSTEPS, method)
    system = load_model(MODEL)
    columns = [system.coordinate_names().index(c) for c in COORDS]
    fmu = Instance(pendulum.md, str(pendulum.dir), step=H, method=method, substeps=SUBSTEPS)
    assert fmu.refused == {} and fmu.exit_refused is None
    got = []
    for _ in range(STEPS):
        fmu.step()
        got.append(fmu.get(*OUTPUTS))
    fmu.close()
    got = np.array(got)
    rows = np.arange(1, STEPS + 1) * SUBSTEPS
    np.testing.assert_allclose(got[:, :len(COORDS)], ref.q[rows][:, columns], rtol=0, atol=1e-9)
    energy = got[:, OUTPUTS.index("energy")]
    np.testing.assert_allclose(energy, ref.energy[rows], rtol=0, atol=1e-9)
    out = dict(zip(OUTPUTS, got[-1]))
    # the ball joints: pivot at the origin, the hook on the rod's end i (to the violation)
    assert abs(out["position.box.pivot.x"]) < 1e-8
    hook = [out[f"position.box.hook.{c}"] for c in "xyz"]
    rod_i = ref.q[rows[-1]][[system.coordinate_names().index(f"rod.{c}i") for c in "xyz"]]
    np.testing.assert_allclose(hook, rod_i, rtol=0, atol=1e-8)
    assert out["violation"] < 1e-8
    assert np.ptp(got[:, 0]) > 1e-3 or np.ptp(got[:, COORDS.index("rod.zj")]) > 1e-3  # it moved


def test_c_host_runs_the_spatial_fmu_like_fmpy(host, pendulum):
    """No Python in the host, an environment with nothing but PATH: same outputs."""
    names = ["box.x", "rod.zj", "position.box.hook.z", "energy"]
    script = (f"load {pendulum.binary}\n"
              f"instantiate 0 pendulum {pendulum.guid} {pendulum.uri()} 0\n"
              f"init 0 0\nset_integer 0 {pendulum.vr['substeps']} {SUBSTEPS}\nexit_init 0\n"
              + "".join(f"step 0 {k * H!r} {H!r}\n" for k in range(20))
              + f"get_real 0 {pendulum.vrs(*names)}\nterminate 0\nfree 0\n")
    run = host(script)
    assert run.instantiated() == [True] and set(run.statuses("step")) == {OK}
    fmu = Instance(pendulum.md, str(pendulum.dir), step=H, substeps=SUBSTEPS)
    for _ in range(20):
        fmu.step()
    expected = fmu.get(*names)
    fmu.close()
    np.testing.assert_allclose(run.values()[-1], expected, rtol=0, atol=1e-12)


HINGE = {"format": "flexcosim-model", "version": 1, "dimension": 3,
         "gravity": [0, 0, -9.81],
         "ground": {"markers": {"O": [0, 0, 0]}},
         "bodies": [{"type": "rigid_body", "name": "link", "mass": 1.0,
                     "inertia": [0.1, 0.1, 0.02], "center_of_mass": [0, 0, -0.5],
                     "position": [0, 0, 0], "orientation": [[1, 0, 0], [0, 1, 0], [0, 0, 1]],
                     "markers": {"pin": [0, 0, 0], "tip": [0, 0, -1]}},
                    {"type": "bar", "name": "rod", "mass": 0.5, "end_i": [0, 0, -1],
                     "end_j": [0, 0, -2]}],
         "joints": [{"type": "revolute", "name": "hinge", "a": "ground.O", "b": "link.pin",
                     "axis": [0, 1, 0]},
                    {"type": "driver", "joint": "hinge",
                     "motion": {"type": "constant_rate", "angle0": 0, "rate": 0.8}},
                    {"type": "revolute", "name": "knee", "a": "link.tip", "b": {"body": "rod", "arc_length": 0},
                     "axis": [0, 0, 1]}]}


def test_hinge_angles_of_a_driven_spatial_link():
    """angle.<joint> of a hinge driven at 0.8 rad/s is 0.8 t; the hinge whose other side
    is a bar (no frame across its axis) has no angle output; positions have a z."""
    hinge = {**HINGE, "joints": HINGE["joints"][:2], "bodies": HINGE["bodies"][:1]}
    block_class = spatial_system_block(hinge, outputs=["angle.hinge", "position.link.tip.x",
                                                       "position.link.tip.z"])
    assert issubclass(block_class, SpatialSystemBlock)
    assert {s.name: s.unit for s in block_class.OUTPUTS}["angle.hinge"] == "rad"
    block = block_class(method="rk4", substeps=10)
    for k in range(100):
        block.do_step(k * 0.01, 0.01)
    out = block.outputs()
    # rotation about +y by 0.8 t: the tip (0, 0, -1) goes to (-sin, 0, -cos)
    assert out["angle.hinge"] == pytest.approx(0.8, abs=1e-9)
    assert out["position.link.tip.x"] == pytest.approx(-np.sin(0.8), abs=1e-9)
    assert out["position.link.tip.z"] == pytest.approx(-np.cos(0.8), abs=1e-9)
    with pytest.raises(ParameterError, match=r"unknown output\(s\) \['angle.knee'\].*angle.hinge"):
        spatial_system_block(HINGE, outputs=["angle.knee"])
    assert isinstance(load_model(HINGE), SpatialSystem)
