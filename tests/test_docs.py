"""The documents' Python runs as written, and the guide's steps give what it says.

Convention: a fenced block whose info string is exactly ``python`` is executed; one with
more words after ``python`` (``python no-run``) is shown but not executed — for a block
too costly for the suite (a sweep over processes) or that writes a figure.  A fenced
block with no info string right after a runnable block is the output it prints: what
the block prints must be that text, but for line breaks and spaces (a block that prints
nothing may be followed by a warning's text, which is not compared).  A document's
blocks run in order, in one namespace, in a temporary working folder, each with its
printed output and its warnings recorded.  The checks are here, not in the documents:
the guide (``docs/control_design.md``) is checked step by step against the physics and
against independent computations; the other documents with runnable blocks only have to
run (:data:`RUNNABLE_DOCS`), and a document with a runnable block not listed there fails
:func:`test_every_runnable_block_is_run`.
"""
from __future__ import annotations

import contextlib
import io
import os
import re
import warnings
from pathlib import Path

import numpy as np
import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs"
GUIDE = "control_design.md"
#: The other documents whose runnable blocks this module runs.
RUNNABLE_DOCS = ("python_control.md",)

FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```\s*$", re.MULTILINE | re.DOTALL)


def python_blocks(text: str) -> list[tuple[int, str, bool]]:
    """``(line, code, runs)`` of each fenced Python block of ``text`` (module docstring)."""
    return [(line, code, runs) for line, code, runs, _ in fenced_python(text)]


def fenced_python(text: str) -> list[tuple[int, str, bool, str | None]]:
    """``(line, code, runs, shown)`` of each fenced Python block of ``text``: ``shown``
    the text of the plain fenced block right after it (only blank lines between), or
    None (module docstring)."""
    fences = list(FENCE.finditer(text))
    blocks = []
    for k, m in enumerate(fences):
        words = m.group(1).split()
        if words[:1] != ["python"]:
            continue
        after = fences[k + 1] if k + 1 < len(fences) else None
        shown = (after.group(2) if after is not None and not after.group(1).strip()
                 and not text[m.end():after.start()].strip() else None)
        blocks.append((text.count("\n", 0, m.start()) + 2, m.group(2), words == ["python"],
                       shown))
    return blocks


def run_document(name: str, folder: Path) -> dict:
    """Run the runnable blocks of ``docs/<name>`` in order in one namespace, in
    ``folder``: returns the namespace, each block's printed output, the warnings and ``folder``."""
    namespace: dict = {"__name__": f"docs.{name}"}
    printed, caught = [], []
    cwd = os.getcwd()
    os.chdir(folder)
    try:
        for line, code, runs in python_blocks((DOCS / name).read_text()):
            if not runs:
                continue
            out = io.StringIO()
            with contextlib.redirect_stdout(out), warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                # the document's own code, run as its reader would
                exec(compile(code, f"docs/{name}, block at line {line}", "exec"),  # noqa: S102
                     namespace)
            printed.append(out.getvalue())
            caught.extend(w)
    finally:
        os.chdir(cwd)
    return {"ns": namespace, "printed": printed, "warnings": caught, "folder": folder}


@pytest.fixture(scope="module")
def guide(tmp_path_factory):
    """The guide run once: its namespace, printed output and warnings."""
    return run_document(GUIDE, tmp_path_factory.mktemp("guide"))


def test_block_reader_follows_the_convention():
    text = "a\n```python\nx = 1\n```\n\n```python no-run\ny = 2\n```\n```\nout\n```\n"
    assert fenced_python(text) == [(3, "x = 1\n", True, None), (7, "y = 2\n", False, "out\n")]


def test_guide_prints_what_it_shows(guide):
    """Each runnable block of the guide that prints prints the output shown after it."""
    shown = [s for _, _, runs, s in fenced_python((DOCS / GUIDE).read_text()) if runs]
    assert len(shown) == len(guide["printed"])
    for k, (printed, expected) in enumerate(zip(guide["printed"], shown)):
        if printed:
            assert expected is not None, f"runnable block {k} prints but shows no output"
            assert printed.split() == expected.split(), f"runnable block {k}"


def test_every_runnable_block_is_run():
    """A document with a runnable block is the guide or listed in RUNNABLE_DOCS."""
    unrun = [p.name for p in DOCS.glob("*.md")
             if any(runs for _, _, runs in python_blocks(p.read_text()))
             and p.name not in (GUIDE, *RUNNABLE_DOCS)]
    assert unrun == [], "run them here (RUNNABLE_DOCS) or mark them 'python no-run'"


@pytest.mark.parametrize("name", RUNNABLE_DOCS)
def test_document_runs(name, tmp_path):
    run_document(name, tmp_path)          # raises where a block does


def test_guide_linearises_the_arm(guide):
    plant = guide["ns"]["plant"]
    assert plant.nstates == 12 and plant.dt == 0
    assert plant.input_labels == ["tau1", "tau2"]
    assert plant.output_labels[:4] == ["theta1", "theta2", "omega1", "omega2"]


def test_modal_table_has_the_multibody_models_frequencies(guide):
    """The modes of the linearised arm (its eigenvalues) are those of the modal analysis
    of the multibody model, an independent computation (mbdcore.multibody.modal)."""
    from controllers.design import arm_modal_analysis, modal_table

    rows = modal_table(guide["ns"]["plant"])
    assert sum(r["rigid"] for r in rows) == 4
    assert all(abs(r["damping"]) < 1e-12 for r in rows if not r["rigid"])   # undamped
    flexible = [r["frequency"] for r in rows if not r["rigid"]]
    reference = np.sort(np.asarray(arm_modal_analysis().frequencies))
    np.testing.assert_allclose(flexible, reference[-len(flexible):], rtol=1e-6)


def test_refusal_names_the_plants_phase(guide):
    assert "a PD cannot give 60 deg of phase margin at 1 Hz" in guide["printed"][2]
    assert "the plant's phase there is 0.0 deg" in guide["printed"][2]


def test_default_filter_warns_of_the_16_hz_crossover(guide):
    from controllers.design import DesignWarning

    messages = [str(w.message) for w in guide["warnings"] if w.category is DesignWarning]
    assert len(messages) == 1 and "at 16.1 Hz" in messages[0]
    assert guide["ns"]["first_try"].margins["phase_margin_deg"] < 30


@pytest.mark.parametrize("joint", ["joint1", "joint2"])
def test_tuned_margins_are_the_ones_asked_for(guide, joint):
    """Within 1 deg of 60 over the whole loop; and independently of the margins' grid
    search, |C P| = 1 with a phase of -120 deg at 0.4 Hz (python-control's response)."""
    import control as ct

    tuning = guide["ns"][joint]
    assert abs(tuning.margins["phase_margin_deg"] - 60.0) < 1.0
    L = complex(np.squeeze(ct.frequency_response(
        ct.series(tuning.plant, tuning.transfer_function), [2 * np.pi * 0.4]).complex))
    assert abs(abs(L) - 1.0) < 1e-9
    assert abs(np.degrees(np.angle(L)) + 120.0) < 1e-6


def test_controller_built_is_the_tuned_one(guide):
    """The block's parameters are the tuned gains, and its linearisation from a joint's
    measured angle and rate (rate = s angle) is the tuned C(s) with the feedback sign."""
    import control as ct

    from controllers.design import as_iosystem

    ns = guide["ns"]
    pd = ns["pd"]
    for i, tuning in ((1, ns["joint1"]), (2, ns["joint2"])):
        assert {k: pd.params[f"{k}{i}"] for k in ("kp", "kd", "tf")} == \
            {k: tuning.params[k] for k in ("kp", "kd", "tf")}
    sys = as_iosystem(pd)
    lin = ct.linearize(sys, np.zeros(sys.nstates), np.zeros(sys.ninputs), copy_names=True)
    w = 2 * np.pi * np.array([0.1, 0.4, 4.0, 40.0])

    def response(output, input):
        channel = lin[lin.output_labels.index(output), lin.input_labels.index(input)]
        return np.squeeze(ct.frequency_response(channel, w).complex)

    for i, tuning in ((1, ns["joint1"]), (2, ns["joint2"])):
        block = -(response(f"tau{i}", f"theta{i}") + 1j * w * response(f"tau{i}", f"omega{i}"))
        tuned = np.squeeze(ct.frequency_response(tuning.transfer_function, w).complex)
        # finite differences of a linear law: exact but for rounding of the gains' size
        np.testing.assert_allclose(block, tuned, rtol=1e-6)


def test_both_loops_closed_keep_their_margins(guide):
    """Loop at a time, the other closed: each loop keeps at least its tuned 60 deg
    (measured 85 and 72), no phase crossover, sensitivity peak below 1.2."""
    for loop in guide["ns"]["margins"]:
        assert loop["phase_margin_deg"] > 59.0
        assert loop["gain_margin_db"] == np.inf and loop["sensitivity_peak"] < 1.2


def test_validation_finds_the_soft_pd_unsettled(guide):
    from controllers.design import NOT_SETTLED

    tuned = guide["ns"]["tuned"]
    assert tuned["move_time"] == NOT_SETTLED and tuned["residual_vibration"] == NOT_SETTLED
    assert abs(tuned["final_error2"]) > 0.02


def test_lqg_and_shaping_leave_less_vibration_than_the_pd(guide):
    ns = guide["ns"]
    lqg, shaped, stiff, tuned = (ns[k]["residual_vibration"]
                                 for k in ("lqg", "shaped", "stiff", "tuned"))
    assert stiff > 0.1                       # the 0.43 Hz locked-joint mode swings
    assert lqg < 0.01 and shaped < 0.01
    assert lqg < stiff and lqg < tuned
    assert np.isfinite(ns["lqg"]["move_time"]) and ns["lqg"]["move_time"] < 2.5


def test_fmus_are_valid_and_carry_the_tuned_gains(guide):
    from fmpy import read_model_description
    from fmpy.validation import validate_fmu

    ns = guide["ns"]
    pd_fmu, lqg_fmu = (guide["folder"] / ns[k] for k in ("pd_fmu", "lqg_fmu"))
    for fmu in (pd_fmu, lqg_fmu):
        assert fmu.exists(), fmu
        assert validate_fmu(str(fmu)) == []
    start = {v.name: v.start for v in read_model_description(str(pd_fmu)).modelVariables}
    for name in ("kp1", "kd1", "tf1", "kp2", "kd2", "tf2"):
        assert float(start[name]) == ns["pd"].params[name]


def test_sweep_results_in_case_order(guide):
    ns = guide["ns"]
    results, cases = ns["results"], ns["cases"]
    assert [r["ctrl"] for r in results] == [c["ctrl"] for c in cases]
    assert np.isinf(results[0]["move_time"])
    assert np.isfinite(results[-1]["move_time"]) and results[-1]["residual_vibration"] < 0.02


def test_the_stiffer_pd_pays_in_margin(guide):
    """The swept PD that settles has less margin than the tuned one (44 and 33 deg)."""
    ns = guide["ns"]
    assert ns["stiffer"].params["kp1"] == 30 * ns["pd"].params["kp1"]
    for soft, stiff in zip(ns["margins"], ns["stiffer_margins"]):
        assert 20.0 < stiff["phase_margin_deg"] < soft["phase_margin_deg"] - 10.0
