"""Fuzzing that stays (issue 22, "Build, beyond the fixes"): system files -- JSON mutated
at random, SSP descriptions with random component, connector and parameter names and
random typed values -- either load or are refused with an SSPError that names the file and
where in it; never another exception, a hang, a crash or a module imported.

The systems are of the project's own blocks (no FMU, nothing compiled), loaded with the
default ``allow_python_blocks`` (the project's blocks only): a mutated ``block`` must never
import anything else.  Bounded: a fixed number of derandomized examples, each under a
wall-clock alarm."""
from __future__ import annotations

import json
import signal
import sys
import unicodedata
import xml.etree.ElementTree as ET

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fmu.cosim.system import System
from fmu.cosim.file_rules import SSPError
from fmu.cosim.ssp import BLOCK_TYPE, SSC, SSD, SSV
from fmu.cosim.system_file import load_system, system_from_dict

from support.json_mutations import mutated

FUZZ = settings(max_examples=150, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
HANG = 30

PID = "controllers.laws.pid:PIDController"
NOTCH = "controllers.laws.notch:NotchFilter"

#: A valid JSON system: a PID law whose output goes through a notch filter and back
SYSTEM = {
    "components": [
        {"name": "pid", "block": PID, "parameters": {"kp": 2.0, "ki": 0.5, "u_max": 10.0,
                                                     "r": 1.0}},
        {"name": "notch", "block": NOTCH, "parameters": {"frequency": 0.5, "dt": 0.01}},
    ],
    "connections": [["pid.u", "notch.u"], ["notch.y", "pid.y"]],
    "experiment": {"start_time": 0.0, "stop_time": 1.0, "step": 0.01, "method": "jacobi",
                   "extrapolation": 0},
}


class Hang(Exception):
    pass


def _alarm(signum, frame):
    raise Hang(f"no answer within {HANG} s")


def _loads_or_refuses(load, label: str, what) -> None:
    modules = set(sys.modules)
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(HANG)
    try:
        system = load()
        assert isinstance(system, System)
    except SSPError as e:
        text = str(e)
        assert text.startswith(f"{label}: ") and len(text) > len(label) + 2, (text, what)
    except Exception as e:  # noqa: BLE001 - what the test is about
        raise AssertionError(f"{type(e).__name__}: {e!s:.300} after {what}") from e
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    imported = {m for m in set(sys.modules) - modules
                if not m.startswith(("mbdcore", "controllers", "fmu", "numpy", "scipy"))}
    assert not imported, (imported, what)


def test_the_seed_system_loads():
    system = system_from_dict(SYSTEM)
    assert [c.name for c in system.components] == ["pid", "notch"]


@FUZZ
@given(data=st.data())
def test_a_mutated_json_system_loads_or_is_refused_by_where(data, tmp_path_factory):
    doc, done = mutated(SYSTEM, data)
    _loads_or_refuses(lambda: system_from_dict(doc, label="fuzz"), "fuzz", done)
    try:
        text = json.dumps(doc)
    except (RecursionError, ValueError):
        return
    path = tmp_path_factory.mktemp("fuzz") / "system.json"
    path.write_text(text)
    _loads_or_refuses(lambda: load_system(path), str(path), done)


# -- SSP descriptions ------------------------------------------------------------------
_TYPES = ["Real", "Integer", "Boolean", "String", "Enumeration", "Float64", "Float32",
          "Int8", "UInt8", "Int16", "UInt16", "Int32", "UInt32", "Int64", "UInt64", "Bogus"]

#: Names: plain ones, and text with control characters, commas, formula starts, dots
#: (XML 1.0 cannot hold most C0 characters at all: those few make a file not well-formed)
_PRINTABLE = st.characters(blacklist_categories=("Cs", "Cc"))
names = st.one_of(st.sampled_from(["pid", "notch", "kp", "u", "y", "r", "pid2", "=1+1",
                                   "a,b", "a\nb", "a\tb", "\x85", "\x00", "\u202e", "",
                                   ".", "pid.kp", "@x", "-1"]),
                  st.text(_PRINTABLE, max_size=8))
#: Values: numbers in every lexical form, and text
values = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True, width=64).map(repr),
    st.integers(min_value=-(2**70), max_value=2**70).map(str),
    st.sampled_from(["1_0.5", " 1 ", "+.5", "1e", "INF", "-INF", "NaN", "true", "True",
                     "0x10", "\u0661", "1e400", "3.4028236e38", "", "1" * 5000]),
    st.text(_PRINTABLE, max_size=12))


def _parameter(parameters, name: str, kind: str, value: str) -> None:
    p = ET.SubElement(parameters, f"{{{SSV}}}Parameter", {"name": name})
    ET.SubElement(p, f"{{{SSV}}}{kind}", {"value": value})


@st.composite
def ssp_descriptions(draw) -> bytes:
    root = ET.Element(f"{{{SSD}}}SystemStructureDescription",
                      {"version": draw(st.sampled_from(["1.0", "2.0"])), "name": "s"})
    system = ET.SubElement(root, f"{{{SSD}}}System", {"name": "s"})
    elements = ET.SubElement(system, f"{{{SSD}}}Elements")
    components = []
    for source in draw(st.lists(st.sampled_from([PID, NOTCH]), min_size=1, max_size=3)):
        name = draw(names)
        components.append(name)
        comp = ET.SubElement(elements, f"{{{SSD}}}Component",
                             {"name": name, "type": BLOCK_TYPE, "source": f"python:{source}"})
        if draw(st.booleans()):
            conns = ET.SubElement(comp, f"{{{SSD}}}Connectors")
            for cname in draw(st.lists(names, max_size=2)):
                conn = ET.SubElement(conns, f"{{{SSD}}}Connector",
                                     {"name": cname, "kind": draw(st.sampled_from(
                                         ["input", "output", "parameter", "sideways"]))})
                ET.SubElement(conn, f"{{{SSC}}}Real")
        pset = ET.SubElement(ET.SubElement(ET.SubElement(ET.SubElement(
            comp, f"{{{SSD}}}ParameterBindings"), f"{{{SSD}}}ParameterBinding"),
            f"{{{SSD}}}ParameterValues"), f"{{{SSV}}}ParameterSet",
            {"version": "1.0", "name": "p"})
        parameters = ET.SubElement(pset, f"{{{SSV}}}Parameters")
        for _ in range(draw(st.integers(0, 3))):
            _parameter(parameters, draw(st.one_of(st.sampled_from(["kp", "ki", "frequency",
                                                                   "dt", "u_max"]), names)),
                       draw(st.sampled_from(_TYPES)), draw(values))
    if len(components) > 1 and draw(st.booleans()):
        connections = ET.SubElement(system, f"{{{SSD}}}Connections")
        ET.SubElement(connections, f"{{{SSD}}}Connection", {
            "startElement": components[0], "startConnector": draw(names),
            "endElement": components[-1], "endConnector": draw(names)})
    ET.SubElement(root, f"{{{SSD}}}DefaultExperiment",
                  {"startTime": "0", "stopTime": draw(values)})
    return ET.tostring(root, encoding="utf-8", xml_declaration=True)


@FUZZ
@given(xml=ssp_descriptions())
def test_a_random_ssp_description_loads_or_is_refused_by_element(xml, tmp_path_factory):
    path = tmp_path_factory.mktemp("fuzz") / "system.ssd"
    path.write_bytes(xml)
    _loads_or_refuses(lambda: load_system(path), str(path), xml[:2000])


def _control(ch: str) -> bool:
    return unicodedata.category(ch) in ("Cc", "Zl", "Zp") or "\u202a" <= ch <= "\u202e" \
        or "\u2066" <= ch <= "\u2069"


@FUZZ
@given(name=st.one_of(names, st.text(max_size=6)))
def test_a_component_name_loads_unless_empty_dotted_or_with_control_characters(name):
    try:
        system = system_from_dict({"components": [{"name": name, "block": PID}]}, label="f")
    except SSPError as e:
        if any(_control(c) for c in name):
            assert "holds the control character U+" in str(e), str(e)
        else:
            assert (not name or "." in name) and "non-empty names without '.'" in str(e)
        return
    assert name and "." not in name and not any(_control(c) for c in name)
    assert system.components[0].name == name
