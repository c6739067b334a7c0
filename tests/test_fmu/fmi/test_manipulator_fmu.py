"""The arm and its controller as FMUs, built here with pythonfmu and run by fmpy."""
from __future__ import annotations

import math

import numpy as np
import pytest
from fmpy import extract, read_model_description
from fmpy.fmi1 import FMICallException
from fmpy.validation import validate_fmu

from controllers.laws.joint_pd import JointPDController
from support.fmi import DISCARD, Instance
from flexcosim.cli import main as cli
from mbdcore.models.manipulator import FlexibleManipulator, bang_bang_torque

H = 1e-3  # communication step [s]
OUTPUTS = ("theta1", "theta2", "omega1", "omega2", "w1", "w2", "x_tip", "y_tip")


def test_the_command_line_builds_the_arm_fmu(tmp_path, arm_fmu):
    """``flexcosim build manipulator`` writes the same model as the session's FMU."""
    assert cli(["build", "manipulator", "-o", str(tmp_path)]) == 0
    built = read_model_description(str(tmp_path / "FlexibleManipulator.fmu"))
    shared = read_model_description(str(arm_fmu))
    assert [v.name for v in built.modelVariables] == [v.name for v in shared.modelVariables]


@pytest.fixture(scope="module")
def arm_md(arm_fmu):
    return read_model_description(str(arm_fmu))


@pytest.fixture(scope="module")
def arm_dir(arm_fmu, tmp_path_factory):
    return extract(str(arm_fmu), str(tmp_path_factory.mktemp("arm")))


@pytest.fixture
def arm(arm_md, arm_dir):
    made = []

    def make(**params):
        made.append(Instance(arm_md, arm_dir, name=f"arm{len(made)}", step=H, **params))
        return made[-1]

    yield make
    for inst in made:
        inst.close()


def test_model_description_is_standard_clean_with_units_and_experiment(arm_fmu, arm_md):
    assert validate_fmu(str(arm_fmu)) == []
    var = {v.name: v for v in arm_md.modelVariables}
    units = {"tau1": "N.m", "theta1": "rad", "omega2": "rad/s", "w1": "m", "x_tip": "m",
             "ei1": "N.m2", "rho_a2": "kg/m", "j_h1": "kg.m2"}
    for name, unit in units.items():
        assert var[name].unit == unit, name
    assert all(var[n].causality == "output" for n in OUTPUTS)
    assert {var["tau1"].causality, var["tau2"].causality} == {"input"}
    for n in ("l1", "ei1", "n_modes", "method", "substeps", "mode_shapes"):
        assert var[n].causality == "parameter"
    assert arm_md.defaultExperiment.stopTime == "3.0"
    # torques act through the dynamics only: no direct feedthrough
    assert all(not u.dependencies for u in arm_md.outputs)


def test_fmu_equals_the_in_process_simulation(arm):
    fmu = arm(substeps=10)
    model = FlexibleManipulator()
    _, x = model.simulate(bang_bang_torque, 0.8, H / 10)
    peak = 0.0
    for k in range(800):
        tau = bang_bang_torque(k * H)
        fmu.set("tau1", tau[0])
        fmu.set("tau2", tau[1])
        fmu.step()
        if (k + 1) % 100 == 0:
            expected = model.outputs(x[(k + 1) * 10])
            np.testing.assert_allclose(fmu.get(*OUTPUTS), [expected[n] for n in OUTPUTS],
                                       rtol=0, atol=1e-10)
            peak = max(peak, abs(expected["theta1"]))
    assert peak > 0.01  # the arm really moved


def test_parameters_reach_the_model(arm):
    fmu = arm(n_modes=3, method="gill", substeps=5, ei1=2.0, m_p=0.3)
    model = FlexibleManipulator(n_modes=3, ei1=2.0, m_p=0.3)
    _, x = model.simulate(bang_bang_torque, 0.2, H / 5, method="gill")
    for k in range(200):
        tau = bang_bang_torque(k * H)
        fmu.set("tau1", tau[0])
        fmu.set("tau2", tau[1])
        fmu.step()
    expected = model.outputs(x[-1])
    np.testing.assert_allclose(fmu.get(*OUTPUTS), [expected[n] for n in OUTPUTS], atol=1e-10)


def test_nan_torque_is_refused_with_a_log_and_the_state_is_kept(arm):
    fmu = arm()
    fmu.set("tau1", 0.2)
    for _ in range(20):
        fmu.step()
    before = fmu.get(*OUTPUTS)
    with pytest.raises(FMICallException) as rejected:
        fmu.set("tau1", math.nan)
    assert rejected.value.status == 3                 # fmi2Error, with a message naming it
    assert any("'tau1'" in m and "nan" in m for m in fmu.errors())
    with pytest.raises(FMICallException) as refused:
        fmu.fmu.doStep(fmu.t, H)
    assert refused.value.status == DISCARD
    assert fmu.get(*OUTPUTS) == before
    # a valid torque again: the run continues as if the NaN had never come
    fmu.set("tau1", 0.2)
    fmu.step()
    clean = arm()
    clean.set("tau1", 0.2)
    for _ in range(21):
        clean.step()
    assert fmu.get(*OUTPUTS) == clean.get(*OUTPUTS)


def test_divergence_is_reported_and_the_last_good_state_kept(arm):
    fmu = arm(substeps=1)
    fmu.set("tau1", 1e30)
    fmu.set("tau2", -1e30)
    with pytest.raises(FMICallException) as failed:
        for _ in range(1000):
            fmu.step()
    assert failed.value.status == DISCARD
    assert any("failed" in m for m in fmu.errors())
    assert all(math.isfinite(v) for v in fmu.get(*OUTPUTS))


def test_invalid_parameter_is_named_with_its_range(arm):
    fmu = arm(ei1=-1.0)
    assert fmu.refused == {"ei1": 3}                  # fmi2Error from fmi2SetReal
    assert any("'ei1'" in m and "(0.0, inf)" in m for m in fmu.errors())
    with pytest.raises(FMICallException):
        fmu.fmu.doStep(0.0, H)


def test_controller_fmu_declares_its_feedthrough(tmp_path):
    assert cli(["build", "joint-pd", "-o", str(tmp_path)]) == 0
    path = tmp_path / "JointPDController.fmu"
    assert validate_fmu(str(path)) == []
    md = read_model_description(str(path))
    inputs = {v.name for v in md.modelVariables if v.causality == "input"}
    for out in md.outputs:
        assert {d.name for d in out.dependencies} == inputs
    assert inputs == set(JointPDController.input_names())
