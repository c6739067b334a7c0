"""The deployable ring truss as a block and an FMU (mbdcore.models.ring_truss_block):
fmpy and the plain C host run it as the block runs in Python, its state round-trips,
bad parameters are refused by name, a state beyond the model is refused; the truss
written as a model file becomes an FMU by ``flexcosim build`` as well."""
import math
from pathlib import Path

import numpy as np
import pytest
from fmpy import read_model_description
from fmpy.validation import validate_fmu

from support.fmi import ERROR, OK, Unzipped, start
from support.fmi import Instance
from flexcosim.cli import main as cli
from fmu.fmi.build import build_fmu
from mbdcore.blocks import ParameterError, StepError
from mbdcore.models.model_block import ModelSystemBlock, model_system_block
from mbdcore.models.model_file import save_model
from mbdcore.models.ring_truss import ring_truss
from mbdcore.models.ring_truss_block import RingTrussBlock

N_BAYS = 4
H = 0.02                  # communication step [s]
FOLDED = 1.2              # initial bay angle [rad]
VOLTS = [48.0] * N_BAYS
Truss4 = RingTrussBlock.configured({"n_bays": N_BAYS})
OUTPUTS = Truss4.output_names()


@pytest.fixture(scope="module")
def truss_fmu(tmp_path_factory) -> Unzipped:
    folder = tmp_path_factory.mktemp("ring_truss_fmu")
    path = build_fmu(RingTrussBlock, folder, model_name="RingTruss4",
                     configuration={"n_bays": N_BAYS})
    return Unzipped(path, folder / "unzipped")


def python_run(steps: int) -> np.ndarray:
    block = Truss4(folded_angle=FOLDED)
    block.set_inputs({f"voltage{k}": v for k, v in enumerate(VOLTS)})
    rows = []
    for k in range(steps):
        block.do_step(k * H, H)
        rows.append([block.outputs()[n] for n in OUTPUTS])
    return np.array(rows)


@pytest.fixture(scope="module")
def in_python() -> np.ndarray:
    return python_run(4)


def fmpy_instance(unzipped: Unzipped, **params) -> Instance:
    fmu = Instance(unzipped.md, str(unzipped.dir), step=H, **{"folded_angle": FOLDED, **params})
    for k, v in enumerate(VOLTS):
        fmu.set(f"voltage{k}", v)
    return fmu


def test_signals_carry_units_and_the_fmu_validates(truss_fmu):
    assert validate_fmu(str(truss_fmu.fmu_file)) == []
    md = read_model_description(str(truss_fmu.fmu_file))
    units = {v.name: v.unit for v in md.modelVariables}
    assert {units[f"voltage{k}"] for k in range(N_BAYS)} == {"V"}
    assert {units[f"bay_angle{k}"] for k in range(N_BAYS)} == {"rad"}
    assert {units[f"motor_current{k}"] for k in range(N_BAYS)} == {"A"}
    assert units["latched_bays"] == "1"
    assert (units["deployment_ratio"], units["aperture_error"], units["aperture_diameter"],
            units["folded_angle"], units["screw_damping"]) == ("1", "m", "m", "rad", "N.s/m")


def test_block_deploys_synchronously_at_48_volts(in_python):
    """Physics of the run the FMU is compared with: the motors open the truss, the gears
    keep the bay angles equal and the aperture is D sin(theta) of the synchronous truss."""
    theta = in_python[:, [OUTPUTS.index(f"bay_angle{k}") for k in range(N_BAYS)]]
    ratio = in_python[:, OUTPUTS.index("deployment_ratio")]
    assert np.all(np.diff(theta[:, 0]) > 0) and theta[-1, 0] > FOLDED + 1e-3
    assert np.abs(theta - theta[:, :1]).max() < 1e-8
    np.testing.assert_allclose(ratio, np.sin(theta[:, 0]), rtol=0, atol=1e-8)


def test_fmu_in_fmpy_equals_the_block(truss_fmu, in_python):
    fmu = fmpy_instance(truss_fmu)
    got = []
    for _ in range(len(in_python)):
        fmu.step()
        got.append(fmu.get(*OUTPUTS))
    fmu.close()
    assert fmu.errors() == []
    np.testing.assert_allclose(got, in_python, rtol=0, atol=1e-9)


def test_fmu_state_round_trips_across_the_latching(truss_fmu):
    """Nearly deployed (1.562 rad): getFMUstate after a step, five steps in which the
    latches engage, setFMUstate, the same five steps: the same outputs, the latches open
    again after the restore (their state is saved), and locked at the designed aperture."""
    fmu = fmpy_instance(truss_fmu, folded_angle=1.562)
    fmu.step()
    saved, t_saved = fmu.fmu.getFMUstate(), fmu.t
    first = []
    for _ in range(5):
        fmu.step()
        first.append(fmu.get(*OUTPUTS))
    fmu.fmu.setFMUstate(saved)
    fmu.t = t_saved
    again = []
    for _ in range(5):
        fmu.step()
        again.append(fmu.get(*OUTPUTS))
    fmu.fmu.freeFMUstate(saved)
    fmu.close()
    assert np.array_equal(first, again)
    latched = np.array(first)[:, OUTPUTS.index("latched_bays")]
    assert latched[0] == 0 and latched[-1] == N_BAYS       # the latches engaged in between
    assert np.array(first)[-1, OUTPUTS.index("aperture_error")] < 1e-6


def test_c_host_runs_the_truss_with_an_empty_environment(host, truss_fmu, in_python, tmp_path):
    inputs = tmp_path / "voltages.txt"
    inputs.write_text("".join(" ".join(map(repr, VOLTS)) + "\n" for _ in range(len(in_python))))
    outputs = tmp_path / "outputs.csv"
    volts = truss_fmu.vrs(*(f"voltage{k}" for k in range(N_BAYS)))
    run = host(start(truss_fmu, params=f"set_real 0 {truss_fmu.vr['folded_angle']} {FOLDED!r}\n")
               + f"run 0 {H} {N_BAYS} {volts} {len(OUTPUTS)} {truss_fmu.vrs(*OUTPUTS)} "
               f"{inputs} {outputs}\nterminate 0\nfree 0\n")
    assert run.instantiated() == [True] and run.statuses("run") == [OK]
    np.testing.assert_allclose(np.loadtxt(outputs, delimiter=",", ndmin=2), in_python,
                               rtol=0, atol=1e-9)


def test_bad_parameters_are_refused_by_name(truss_fmu):
    """Out of its range at the setter (height, n_bays fixed at build); a combination the
    truss cannot have at fmi2ExitInitializationMode (a wall thicker than the tube's
    radius): fmi2Error with the parameter named."""
    for params, name in (({"height": -0.5}, "height"), ({"n_bays": 6}, "n_bays")):
        fmu = Instance(truss_fmu.md, str(truss_fmu.dir), step=H, **params)
        fmu.close()
        assert fmu.refused == {name: ERROR}
        assert any(f"'{name}'" in m for m in fmu.errors()), fmu.errors()
    fmu = Instance(truss_fmu.md, str(truss_fmu.dir), step=H, wall=0.02)
    fmu.close()
    assert fmu.refused == {} and fmu.exit_refused == ERROR
    assert any("parameter 'wall' = 0.02" in m and "tube_diameter" in m for m in fmu.errors())


def test_configuration_and_parameters_are_checked_in_python():
    with pytest.raises(ParameterError, match="'n_bays' = 5"):
        RingTrussBlock.configured({"n_bays": 5})
    with pytest.raises(ParameterError, match=r"unknown ring truss configuration key\(s\) \['bays'\]"):
        RingTrussBlock.configured({"bays": 4})
    with pytest.raises(ParameterError, match="'folded_angle' = 0.2 is invalid.*diagonal"):
        RingTrussBlock.configured({"n_bays": 6})(folded_angle=0.2, aperture=1.0, height=1.0)


def test_a_diagonal_beyond_its_tubes_is_refused_and_the_state_kept():
    """A state over-deployed beyond what the telescopic diagonal spans (bay angle 2.5
    rad: the thin tube would be out of the thick one) is refused, by name of the bay.
    Latch and screw made all but free, so that the step itself converges and what
    refuses it is the range check."""
    block = Truss4(folded_angle=FOLDED, latch_stiffness=1e-6, latch_damping=0.0,
                   screw_stiffness=1e-6, screw_damping=0.0)
    q, v = block.truss.coordinates(2.5), np.zeros(block.system.n)
    assert "bay 0's diagonal" in block.refused(0.0, q, v)
    assert block.refused(0.0, block.truss.coordinates(math.pi / 2), v) == ""
    names = block.vector_state().names
    block.vector_state().set(block, np.concatenate([q, v]))
    assert len(names) == 2 * block.system.n
    with pytest.raises(StepError, match="bay 0's diagonal is .* m long.*state kept"):
        block.do_step(0.0, H)
    np.testing.assert_array_equal(block.q, q)


def test_command_line_builds_the_truss_with_its_number_of_bays(tmp_path, capsys):
    assert cli(["build", "ring-truss", "--bays", "6", "-o", str(tmp_path)]) == 0
    path = tmp_path / "RingTruss6.fmu"
    assert validate_fmu(str(path)) == []
    md = read_model_description(str(path))
    inputs = [v.name for v in md.modelVariables if v.causality == "input"]
    assert inputs == [f"voltage{k}" for k in range(6)]
    assert {v.name: v.start for v in md.modelVariables}["n_bays"] == "6"
    assert cli(["build", "ring-truss", "--bays", "5", "-o", str(tmp_path)]) == 2
    assert "'n_bays' = 5" in capsys.readouterr().err
    assert cli(["build", "manipulator", "--bays", "4", "-o", str(tmp_path)]) == 2
    assert "--bays is for ring-truss" in capsys.readouterr().err


# -- the truss as a model file, built by `flexcosim build truss.json` ---------------------------
FILE_OUTPUTS = ["motor0.phi", "der(motor0.charge)", "angle.hinge_upper0_i",
                "angle.hinge_upper1_i", "energy"]
#: communication step [s] and substeps: RK4 (index 1) resolves the screw's 800 rad/s
#: mode; generalized-alpha (index 3, full Newton) damps it at the truss block's steps
FILE_STEPPING = {"rk4": (0.002, 10), "generalized-alpha": (0.01, 2)}


@pytest.fixture(scope="module")
def truss_file_fmu(tmp_path_factory) -> tuple[Path, Unzipped]:
    folder = tmp_path_factory.mktemp("ring_truss_file")
    path = save_model(ring_truss(n_bays=N_BAYS, folded_angle=FOLDED).system,
                      folder / "truss4.json")
    assert cli(["build", str(path), "-o", str(folder), "--outputs",
                ",".join(FILE_OUTPUTS)]) == 0
    return path, Unzipped(folder / "Truss4.fmu", folder / "unzipped")


@pytest.mark.parametrize("method", FILE_STEPPING)
def test_command_line_builds_a_truss_file_that_fmpy_steps_as_the_block(truss_file_fmu, method):
    """``flexcosim build truss4.json``: the file's motor voltages are the FMU's inputs [V];
    fmpy steps it as the Python block of the same file (to the last bit), and the motors
    open the truss with the gears keeping the bays together."""
    path, unzipped = truss_file_fmu
    assert validate_fmu(str(unzipped.fmu_file)) == []
    units = {v.name: v.unit for v in unzipped.md.modelVariables}
    assert {units[f"voltage{k}"] for k in range(N_BAYS)} == {"V"}
    assert (units["motor0.phi"], units["der(motor0.charge)"], units["angle.hinge_upper0_i"],
            units["energy"]) == ("rad", "C/s", "rad", "J")
    h, substeps = FILE_STEPPING[method]
    fmu = Instance(unzipped.md, str(unzipped.dir), step=h, method=method, substeps=substeps)
    assert fmu.refused == {} and fmu.exit_refused is None
    block = model_system_block(path, outputs=FILE_OUTPUTS)(method=method, substeps=substeps)
    assert isinstance(block, ModelSystemBlock)
    block.set_inputs({f"voltage{k}": v for k, v in enumerate(VOLTS)})
    for k, v in enumerate(VOLTS):
        fmu.set(f"voltage{k}", v)
    got, expected = [], []
    for k in range(5):
        fmu.step()
        got.append(fmu.get(*FILE_OUTPUTS))
        block.do_step(k * h, h)
        expected.append([block.outputs()[n] for n in FILE_OUTPUTS])
    fmu.close()
    got = np.array(got)
    np.testing.assert_array_equal(got, np.array(expected))
    out = {n: got[:, i] for i, n in enumerate(FILE_OUTPUTS)}
    assert np.all(np.diff(out["motor0.phi"]) > 0)                  # the motor turns ...
    assert np.all(np.diff(out["angle.hinge_upper0_i"]) > 0)        # ... and the bay opens
    np.testing.assert_allclose(out["angle.hinge_upper1_i"], out["angle.hinge_upper0_i"],
                               rtol=0, atol=1e-9)                  # bays geared together
    # the current below the stall value u/R (back-EMF and inductance hold it back)
    assert 0 < out["der(motor0.charge)"].max() < VOLTS[0] / 3.07

# --- the truss with its cable net -------------------------------------------------------------
TrussNet = RingTrussBlock.configured({"n_bays": N_BAYS, "net_rings": 1})
NET_OUTPUTS = TrussNet.output_names()
N_CABLES = 29                   # 4 bays, 1 ring: 16 radials, 8 hoops, 5 ties
#: a ground test of the deployed truss with its net: gravity loads the net from its form
NET_PARAMS = {"folded_angle": math.pi / 2, "gravity": 9.81}
NET_STEPS = 3


@pytest.fixture(scope="module")
def net_fmu(tmp_path_factory) -> Unzipped:
    folder = tmp_path_factory.mktemp("ring_truss_net_fmu")
    path = build_fmu(RingTrussBlock, folder, model_name="RingTruss4Net1",
                     configuration={"n_bays": N_BAYS, "net_rings": 1})
    return Unzipped(path, folder / "unzipped")


@pytest.fixture(scope="module")
def net_in_python():
    """Outputs of NET_STEPS steps of the block with the net, and the tensions
    CableNet.tensions gives at the block's state after each."""
    block = TrussNet(**NET_PARAMS)
    block.set_inputs({f"voltage{k}": 0.0 for k in range(N_BAYS)})
    rows, tensions = [], []
    for k in range(NET_STEPS):
        block.do_step(k * H, H)
        rows.append([block.outputs()[n] for n in NET_OUTPUTS])
        tensions.append(block.truss.net.tensions(block.q))
    return np.array(rows), np.array(tensions), block.truss.net.form.tension


def test_net_signals_name_every_cable_and_the_truss_without_a_net_is_unchanged(net_fmu):
    """One tension output [N] per cable, described by its end nodes and kind; the
    net's parameters settable; without a net (the default, or net_rings = 0) the
    signals and parameters are those of the truss alone."""
    assert validate_fmu(str(net_fmu.fmu_file)) == []
    md = read_model_description(str(net_fmu.fmu_file))
    variables = {v.name: v for v in md.modelVariables}
    tensions = [f"cable_tension{j}" for j in range(N_CABLES)]
    assert NET_OUTPUTS == OUTPUTS + tensions
    assert {variables[n].unit for n in tensions} == {"N"}
    assert variables["cable_tension0"].description.endswith(
        "front_rim0-front_ring1_0 (radial; 0 slack)")
    assert "front_centre-rear_centre (tie" in variables["cable_tension28"].description
    assert variables["cable_ea"].unit == "N" and variables["net_rings"].start == "1"
    plain = RingTrussBlock.configured({"n_bays": N_BAYS, "net_rings": 0})
    assert plain.output_names() == OUTPUTS
    assert [p.name for p in plain.PARAMETERS] == [p.name for p in Truss4.PARAMETERS]
    with pytest.raises(ParameterError, match="'net_rings' = -1"):
        RingTrussBlock.configured({"n_bays": N_BAYS, "net_rings": -1})


def test_net_tensions_are_the_cable_nets_and_gravity_loads_them(net_in_python):
    """The block's tension outputs are CableNet.tensions of its state (to the bit);
    gravity (9.81 m/s^2, the ground test) changes them from the form's pretension (0.76
    to 23 N) by more than 0.1 N and less than 10 % of the largest (measured 0.5-1.2 N;
    the net sags and swings), every cable stays taut."""
    rows, tensions, form = net_in_python
    at = NET_OUTPUTS.index("cable_tension0")
    np.testing.assert_array_equal(rows[:, at:at + N_CABLES], tensions)
    change = np.abs(tensions - form).max(axis=1)
    assert np.all(change > 0.1) and np.all(change < 0.1 * form.max())
    assert tensions.min() > 0.0
    assert np.all(rows[:, NET_OUTPUTS.index("latched_bays")] == N_BAYS)


def test_net_fmu_in_fmpy_equals_the_block_and_its_state_round_trips(net_fmu, net_in_python):
    """fmpy: the outputs (tensions included) of the Python block to 1e-9; getFMUstate
    after the first step, two steps, setFMUstate, the same two steps: equal."""
    rows, _, _ = net_in_python
    fmu = Instance(net_fmu.md, str(net_fmu.dir), step=H, **NET_PARAMS)
    for k in range(N_BAYS):
        fmu.set(f"voltage{k}", 0.0)
    got = []
    fmu.step()
    got.append(fmu.get(*NET_OUTPUTS))
    saved, t_saved = fmu.fmu.getFMUstate(), fmu.t
    for _ in range(NET_STEPS - 1):
        fmu.step()
        got.append(fmu.get(*NET_OUTPUTS))
    fmu.fmu.setFMUstate(saved)
    fmu.t = t_saved
    again = []
    for _ in range(NET_STEPS - 1):
        fmu.step()
        again.append(fmu.get(*NET_OUTPUTS))
    fmu.fmu.freeFMUstate(saved)
    fmu.close()
    assert fmu.errors() == []
    np.testing.assert_allclose(got, rows, rtol=0, atol=1e-9)
    assert np.array_equal(got[1:], again)
