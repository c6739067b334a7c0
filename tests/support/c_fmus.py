"""Compile the C models of tests/support/c (lag.c, stair.c, stair3.c, relay.c) with gcc into FMI
2.0 (and 3.0) co-simulation FMUs.

The FMU is not made by anything of ours in Python: a C model against the FMI headers
that fmpy ships (``fmpy/c-code``), a hand-written modelDescription.xml, zipped.
Builds are cached by a hash of the source, the description and the compiler command.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent / "c"   # the hand-written C models
SOURCE = HERE / "lag.c"
MODEL_IDENTIFIER = "FirstOrderLag"
GUID = "{8c4e810f-3df3-4a00-8276-176fa3c9f000}"

#: Exact step: x(t+h) = exp(-h/T) x + K (1 - exp(-h/T)) u; dx = (K u - x)/T.
MODEL_DESCRIPTION = f"""<?xml version="1.0" encoding="UTF-8"?>
<fmiModelDescription fmiVersion="2.0" modelName="{MODEL_IDENTIFIER}" guid="{GUID}"
    description="First-order lag T x' = K u - x, exact zero-order-hold step (C)"
    generationTool="flexcosim tests/support/c_fmus.py" variableNamingConvention="flat"
    numberOfEventIndicators="0">
  <CoSimulation modelIdentifier="{MODEL_IDENTIFIER}" canHandleVariableCommunicationStepSize="true"
      canGetAndSetFMUstate="true" canSerializeFMUstate="true" canNotUseMemoryManagementFunctions="false"/>
  <UnitDefinitions>
    <Unit name="s"><BaseUnit s="1"/></Unit>
    <Unit name="1/s"><BaseUnit s="-1"/></Unit>
  </UnitDefinitions>
  <DefaultExperiment startTime="0" stopTime="1" stepSize="0.001"/>
  <ModelVariables>
    <ScalarVariable name="u" valueReference="0" causality="input" variability="continuous"
        description="input, held over a communication step">
      <Real start="0" min="-100" max="100"/>
    </ScalarVariable>
    <ScalarVariable name="x" valueReference="1" causality="output" variability="continuous"
        initial="calculated" description="state (design range +-1e6)">
      <Real min="-1e6" max="1e6"/>
    </ScalarVariable>
    <ScalarVariable name="dx" valueReference="2" causality="output" variability="continuous"
        initial="calculated" description="state derivative (K u - x)/T">
      <Real unit="1/s"/>
    </ScalarVariable>
    <ScalarVariable name="T" valueReference="3" causality="parameter" variability="fixed"
        initial="exact" description="time constant">
      <Real start="0.1" unit="s" min="1e-300"/>
    </ScalarVariable>
    <ScalarVariable name="K" valueReference="4" causality="parameter" variability="fixed"
        initial="exact" description="static gain">
      <Real start="1"/>
    </ScalarVariable>
    <ScalarVariable name="x0" valueReference="5" causality="parameter" variability="fixed"
        initial="exact" description="initial state">
      <Real start="0"/>
    </ScalarVariable>
  </ModelVariables>
  <ModelStructure>
    <Outputs>
      <Unknown index="2" dependencies=""/>
      <Unknown index="3" dependencies="1 2"/>
    </Outputs>
    <InitialUnknowns>
      <Unknown index="2" dependencies="6"/>
      <Unknown index="3" dependencies="1 4 5 6"/>
    </InitialUnknowns>
  </ModelStructure>
</fmiModelDescription>
"""


def fmi2_headers() -> Path:
    """The folder of the FMI 2.0 headers shipped with fmpy."""
    import fmpy

    path = Path(fmpy.__file__).parent / "c-code"
    if not (path / "fmi2Functions.h").exists():
        raise FileNotFoundError(f"fmi2Functions.h not found in {path}")
    return path


def build_lag_fmu(out_dir: str | Path, cc: str = "gcc") -> Path:
    """Build ``FirstOrderLag.fmu`` in ``out_dir`` (reused when nothing changed) and return it."""
    return build_c_fmu(out_dir, SOURCE, MODEL_IDENTIFIER, GUID, MODEL_DESCRIPTION, cc)


STAIR_SOURCE = HERE / "stair.c"
STAIR_IDENTIFIER = "Stair"
STAIR_GUID = "{5b0b5c0e-6f53-4a51-9d1c-7a3e3f2a5a01}"

#: Like the Reference FMU Stair: an Integer counter, a String input that an output
#: depends on, and a request to terminate (fmi2Discard + fmi2Terminated) at stop_at.
STAIR_DESCRIPTION = f"""<?xml version="1.0" encoding="UTF-8"?>
<fmiModelDescription fmiVersion="2.0" modelName="{STAIR_IDENTIFIER}" guid="{STAIR_GUID}"
    description="counter, String input, asks to terminate at stop_at (C)"
    generationTool="flexcosim tests/support/c_fmus.py" variableNamingConvention="flat"
    numberOfEventIndicators="0">
  <CoSimulation modelIdentifier="{STAIR_IDENTIFIER}" canHandleVariableCommunicationStepSize="true"
      canGetAndSetFMUstate="false" canSerializeFMUstate="false"/>
  <DefaultExperiment startTime="0" stopTime="10" stepSize="0.2"/>
  <ModelVariables>
    <ScalarVariable name="counter" valueReference="0" causality="output" variability="discrete"
        initial="calculated" description="whole seconds elapsed">
      <Integer/>
    </ScalarVariable>
    <ScalarVariable name="label" valueReference="0" causality="input" variability="discrete"
        description="a String input (y depends on its length)">
      <String start="ab"/>
    </ScalarVariable>
    <ScalarVariable name="u" valueReference="1" causality="input" variability="continuous">
      <Real start="0"/>
    </ScalarVariable>
    <ScalarVariable name="y" valueReference="2" causality="output" variability="continuous"
        initial="calculated" description="u + strlen(label)">
      <Real/>
    </ScalarVariable>
    <ScalarVariable name="stop_at" valueReference="3" causality="parameter" variability="fixed"
        initial="exact" description="time at which the model asks to terminate">
      <Real start="1e300"/>
    </ScalarVariable>
  </ModelVariables>
  <ModelStructure>
    <Outputs>
      <Unknown index="1" dependencies=""/>
      <Unknown index="4" dependencies="2 3"/>
    </Outputs>
    <InitialUnknowns>
      <Unknown index="1" dependencies=""/>
      <Unknown index="4" dependencies="2 3"/>
    </InitialUnknowns>
  </ModelStructure>
</fmiModelDescription>
"""


def build_stair_fmu(out_dir: str | Path, cc: str = "gcc") -> Path:
    """Build ``Stair.fmu`` (tests/support/c/stair.c) in ``out_dir`` and return it."""
    return build_c_fmu(out_dir, STAIR_SOURCE, STAIR_IDENTIFIER, STAIR_GUID, STAIR_DESCRIPTION, cc)


RELAY_SOURCE = HERE / "relay.c"
RELAY_IDENTIFIER = "Relay"
RELAY_GUID = "{0c6f1a9e-3f1d-4f7e-9a55-2b1d4c8e7f10}"

#: relay.c: each output is its input, one of each type (direct feedthrough, no state).
RELAY_DESCRIPTION = f"""<?xml version="1.0" encoding="UTF-8"?>
<fmiModelDescription fmiVersion="2.0" modelName="{RELAY_IDENTIFIER}" guid="{RELAY_GUID}"
    description="outputs = inputs, a Real, an Integer and a Boolean (C)"
    generationTool="flexcosim tests/support/c_fmus.py" variableNamingConvention="flat"
    numberOfEventIndicators="0">
  <CoSimulation modelIdentifier="{RELAY_IDENTIFIER}" canHandleVariableCommunicationStepSize="true"
      canGetAndSetFMUstate="false" canSerializeFMUstate="false"/>
  <ModelVariables>
    <ScalarVariable name="r" valueReference="0" causality="input" variability="continuous">
      <Real start="0"/>
    </ScalarVariable>
    <ScalarVariable name="r_out" valueReference="1" causality="output" variability="continuous"
        initial="calculated">
      <Real/>
    </ScalarVariable>
    <ScalarVariable name="i" valueReference="0" causality="input" variability="discrete">
      <Integer start="0" min="-1000" max="1000"/>
    </ScalarVariable>
    <ScalarVariable name="i_out" valueReference="1" causality="output" variability="discrete"
        initial="calculated">
      <Integer/>
    </ScalarVariable>
    <ScalarVariable name="b" valueReference="0" causality="input" variability="discrete">
      <Boolean start="false"/>
    </ScalarVariable>
    <ScalarVariable name="b_out" valueReference="1" causality="output" variability="discrete"
        initial="calculated">
      <Boolean/>
    </ScalarVariable>
  </ModelVariables>
  <ModelStructure>
    <Outputs>
      <Unknown index="2" dependencies="1"/>
      <Unknown index="4" dependencies="3"/>
      <Unknown index="6" dependencies="5"/>
    </Outputs>
    <InitialUnknowns>
      <Unknown index="2" dependencies="1"/>
      <Unknown index="4" dependencies="3"/>
      <Unknown index="6" dependencies="5"/>
    </InitialUnknowns>
  </ModelStructure>
</fmiModelDescription>
"""


def build_relay_fmu(out_dir: str | Path, cc: str = "gcc") -> Path:
    """Build ``Relay.fmu`` (tests/support/c/relay.c) in ``out_dir`` and return it."""
    return build_c_fmu(out_dir, RELAY_SOURCE, RELAY_IDENTIFIER, RELAY_GUID, RELAY_DESCRIPTION,
                       cc)


STAIR3_SOURCE = HERE / "stair3.c"
STAIR3_GUID = "{9a4f1d2e-3b6c-4e8f-a1d7-2c5e8b0f6a13}"


def stair3_description(experiment: str = '<DefaultExperiment startTime="0" stopTime="10" '
                                         'stepSize="0.2"/>') -> str:
    """stair3.c's FMI 3.0 model description, with the ``DefaultExperiment`` element
    given (empty: none)."""
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<fmiModelDescription fmiVersion="3.0" modelName="{STAIR_IDENTIFIER}"
    instantiationToken="{STAIR3_GUID}"
    description="counter, String input, asks to terminate at stop_at (C, FMI 3.0)"
    generationTool="flexcosim tests/support/c_fmus.py" variableNamingConvention="flat">
  <CoSimulation modelIdentifier="{STAIR_IDENTIFIER}" canHandleVariableCommunicationStepSize="true"
      canGetAndSetFMUState="true" canSerializeFMUState="true" hasEventMode="false"/>
  {experiment}
  <ModelVariables>
    <Float64 name="time" valueReference="5" causality="independent" variability="continuous"/>
    <Int32 name="counter" valueReference="0" causality="output" variability="discrete"
        initial="calculated" description="whole seconds elapsed, plus one"/>
    <String name="label" valueReference="1" causality="input" variability="discrete"
        description="a String input (y depends on its length)"><Start value="ab"/></String>
    <Float64 name="u" valueReference="2" causality="input" variability="continuous" start="0"/>
    <Float64 name="y" valueReference="3" causality="output" variability="continuous"
        initial="calculated" description="u + strlen(label)"/>
    <Float64 name="stop_at" valueReference="4" causality="parameter" variability="fixed"
        start="1e300" description="time at which the model asks to terminate"/>
  </ModelVariables>
  <ModelStructure>
    <Output valueReference="0" dependencies=""/>
    <Output valueReference="3" dependencies="1 2"/>
    <InitialUnknown valueReference="0"/>
    <InitialUnknown valueReference="3"/>
  </ModelStructure>
</fmiModelDescription>
"""


def build_stair3_fmu(out_dir: str | Path, description: str | None = None,
                     cc: str = "gcc") -> Path:
    """Build the FMI 3.0 ``Stair.fmu`` (tests/support/c/stair3.c) in ``out_dir`` with
    ``description`` (default :func:`stair3_description`) and return it."""
    return build_c_fmu(out_dir, STAIR3_SOURCE, STAIR_IDENTIFIER, STAIR3_GUID,
                       description or stair3_description(), cc, fmi_version=3)


def build_c_fmu(out_dir: str | Path, source: Path, model_identifier: str, guid: str,
                model_description: str, cc: str = "gcc", fmi_version: int = 2) -> Path:
    """Compile ``source`` into ``<model_identifier>.fmu`` in ``out_dir`` with the given
    modelDescription.xml (reused when nothing changed) and return it."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    headers = fmi2_headers()        # fmpy's c-code: the FMI 2.0 and 3.0 headers
    cmd = [cc, "-std=c99", "-O2", "-fPIC", "-shared", "-Wall", "-Wextra", "-Werror",
           f"-I{headers}", f'-DMODEL_GUID="{guid}"', "-o", "{out}", str(source), "-lm"]
    key = hashlib.sha256(source.read_bytes() + model_description.encode()
                         + " ".join(cmd).encode()).hexdigest()[:16]
    fmu = out_dir / f"{model_identifier}.fmu"
    stamp = out_dir / f".{model_identifier}.{key}"
    if fmu.exists() and stamp.exists():
        return fmu
    if shutil.which(cc) is None:
        raise FileNotFoundError(f"C compiler {cc!r} not found")
    with tempfile.TemporaryDirectory() as tmp:
        lib = Path(tmp) / f"{model_identifier}.so"
        proc = subprocess.run([a.replace("{out}", str(lib)) for a in cmd],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"compiling {source.name} failed:\n{proc.stderr}")
        part = fmu.with_suffix(f".{os.getpid()}.part")
        with zipfile.ZipFile(part, "w", zipfile.ZIP_DEFLATED) as z:
            z.writestr("modelDescription.xml", model_description)
            platform = "linux64" if fmi_version == 2 else "x86_64-linux"
            z.write(lib, f"binaries/{platform}/{model_identifier}.so")
            z.write(source, f"sources/{source.name}")
        part.replace(fmu)
    for old in out_dir.glob(f".{model_identifier}.*"):
        old.unlink()
    stamp.touch()
    return fmu


if __name__ == "__main__":  # pragma: no cover
    import sys

    print(build_lag_fmu(sys.argv[1] if len(sys.argv) > 1 else "."))
