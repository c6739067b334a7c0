"""Any multibody model (API or model file) as a block and as an FMU."""
import numpy as np
import pytest
from fmpy import read_model_description
from fmpy.validation import validate_fmu

from flexcosim.cli import main as cli
from fmu.cosim.fmu_component import FMUComponent
from mbdcore.blocks import ParameterError, StepError
from mbdcore.dae.simulate import simulate
from mbdcore.multibody.model_file import load_model, model_to_dict
from mbdcore.models.mechanisms import slider_crank
from mbdcore.multibody.system_block import SystemBlock, system_block

OUTPUTS = ["crank.phi", "der(crank.phi)", "slider.x", "reaction.O.x", "position.rod.B.x",
           "orientation.rod.A", "energy"]


def config():
    return {"model": model_to_dict(slider_crank()), "inputs": ["tau"], "outputs": OUTPUTS}


def test_block_reproduces_simulate_for_the_same_steps():
    block = SystemBlock.configured(config())(method="rk4", substeps=4)
    block.set_input("tau", 0.3)
    for k in range(200):
        block.do_step(k * 1e-2, 1e-2)
    r = simulate(slider_crank(), 2.0, 2.5e-3, "rk4", inputs=lambda t: {"tau": 0.3})
    out = block.outputs()
    assert out["crank.phi"] == pytest.approx(r["crank.phi"][-1], abs=1e-12)
    assert out["der(crank.phi)"] == pytest.approx(r["d(crank.phi)"][-1], abs=1e-11)
    assert out["energy"] == pytest.approx(r.energy[-1], abs=1e-11)
    assert out["position.rod.B.x"] == pytest.approx(out["slider.x"], abs=1e-12)


def test_implicit_method_through_the_parameter_agrees_with_explicit():
    a = SystemBlock.configured(config())(method="generalized-alpha", substeps=10, rho_inf=0.9)
    b = SystemBlock.configured(config())(method="rk4", substeps=10)
    for k in range(50):
        a.do_step(k * 1e-2, 1e-2)
        b.do_step(k * 1e-2, 1e-2)
    assert a.outputs()["crank.phi"] == pytest.approx(b.outputs()["crank.phi"], abs=2e-3)


def test_unknown_signals_are_named_with_the_accepted_ones():
    with pytest.raises(ParameterError, match=r"unknown output\(s\) \['crank.psi'\].*crank.phi"):
        system_block(slider_crank(), outputs=["crank.psi"])
    with pytest.raises(ParameterError, match="unknown input"):
        system_block(slider_crank(), inputs=["torque"])


def test_failed_step_keeps_the_state():
    block = system_block(slider_crank())(substeps=1)
    block.do_step(0.0, 1e-3)
    state = block.get_state()
    block.set_input("tau", 1e200)
    with pytest.raises(StepError, match="state kept"):
        block.do_step(1e-3, 1.0)
    np.testing.assert_array_equal(block.q, state["internal"]["q"])


def test_model_file_becomes_a_standard_clean_fmu_that_runs_like_the_block(tmp_path):
    model = "examples/models/slider_crank.json"
    assert cli(["build", model, "-o", str(tmp_path), "--name", "SliderCrankFile",
                "--inputs", "tau", "--outputs", ",".join(OUTPUTS)]) == 0
    path = tmp_path / "SliderCrankFile.fmu"
    assert validate_fmu(str(path)) == []
    units = {v.name: v.unit for v in read_model_description(str(path)).modelVariables}
    assert (units["crank.phi"], units["der(crank.phi)"], units["reaction.O.x"],
            units["energy"], units["tau"]) == ("rad", "rad/s", "N", "J", "N.m")
    block = system_block(load_model(model), inputs=["tau"], outputs=OUTPUTS)()
    fmu = FMUComponent("sc", path)
    fmu.initialize(0.0)
    try:
        for k in range(100):
            tau = 0.5 * np.sin(0.1 * k)
            block.set_input("tau", tau)
            fmu.set_inputs({"tau": tau})
            block.do_step(k * 1e-3, 1e-3)
            fmu.do_step(k * 1e-3, 1e-3)
        got = fmu.get_outputs()
        for name in OUTPUTS:
            assert got[name] == pytest.approx(block.outputs()[name], abs=1e-12), name
    finally:
        fmu.terminate()
