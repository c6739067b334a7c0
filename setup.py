"""The package's C, compiled when the package is built (``pip install .``, ``pip wheel .``):
nothing is compiled at run time, so the installed package and the FMUs it builds run on
a machine without a C compiler.  Everything else is in pyproject.toml.

* Each kernel of :data:`KERNELS` becomes a CPython extension module whose bindings
  ``mbdcore/cbuild.py`` generates from the C sources' API functions (the C is the one
  declaration of the interface).
* The FMI 2.0 wrapper of the Python FMUs (``fmu/fmi/native/flexcosim_fmi2.c``) becomes
  a shared library that ``fmu.fmi.build`` puts into every FMU as its binary (Linux).
"""
import importlib.util
import os
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent
# this repository's build module, by path: the package itself is not importable yet
_spec = importlib.util.spec_from_file_location("_flexcosim_cbuild", ROOT / "mbdcore" / "cbuild.py")
cbuild = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = cbuild          # dataclasses look their module up by name
_spec.loader.exec_module(cbuild)

FIXED_STEP = "mbdcore/integrators/native/fixed_step.h"

#: module -> (C sources compiled as one unit, in order; API macros; headers they include)
KERNELS = {
    "mbdcore.dae._newton": (["mbdcore/dae/native/newton.c"], ["NEWTON_API"], []),
    "mbdcore.multibody._beam_kinematics": (["mbdcore/multibody/native/beam_kinematics.c"],
                                           ["BEAM_API"], []),
    "mbdcore.multibody._ancf": (["mbdcore/multibody/native/ancf.c"], ["ANCF_API"], []),
    "mbdcore.multibody._constraint_plan": (["mbdcore/multibody/native/constraint_plan.c"],
                                           ["PLAN_API"], []),
    "mbdcore.multibody._system_terms": (["mbdcore/multibody/native/system_terms.c"],
                                        ["TERMS_API"], []),
    "mbdcore.spatial._ancf3d": (["mbdcore/spatial/native/ancf3d.c"], ["ANCF3D_API"], []),
    "mbdcore.models._arm": (["mbdcore/multibody/native/beam_kinematics.c",
                             "mbdcore/models/native/arm.c"], ["BEAM_API", "ARM_API"],
                            [FIXED_STEP]),
    "mbdcore.models._rigid_arm": (["mbdcore/models/native/rigid_arm.c"], ["RIGID_API"], []),
    "mbdcore.models._drive": (["mbdcore/models/native/drive.c"], ["DRIVE_API"], [FIXED_STEP]),
    "mbdcore.models._antenna_axis": (["mbdcore/models/native/drive.c",
                                      "mbdcore/models/native/antenna_axis.c"],
                                     ["DRIVE_API", "AXIS_API"], [FIXED_STEP]),
    "controllers.laws._joint_laws": (["mbdcore/models/native/rigid_arm.c",
                                      "controllers/laws/native/joint_laws.c"],
                                     ["RIGID_API", "LAWS_API"], []),
    "controllers.laws._pid": (["controllers/laws/native/pid.c"], ["LAWS_API"], []),
    "controllers.laws._lqg": (["mbdcore/models/native/rigid_arm.c",
                               "controllers/laws/native/lqg.c"], ["RIGID_API", "LAWS_API"], []),
    "controllers.laws._notch": (["controllers/laws/native/notch.c"], ["LAWS_API"], []),
    "controllers.laws._antenna_servo": (["controllers/laws/native/antenna_servo.c"],
                                        ["LAWS_API"], []),
    "fmu.cosim._log_proxy": (["fmu/cosim/native/log_proxy.c"], ["LOG_API"], []),
}

#: The FMI 2.0 wrapper of the Python FMUs: a shared library, not a Python module (it
#: starts or joins an interpreter through dlopen, so it links no libpython).
FMI_WRAPPER = "fmu.fmi._flexcosim_fmi2"


class BuildKernels(build_ext):
    """Writes each kernel's generated binding source before compiling it."""

    def build_extension(self, ext):
        if ext.name in KERNELS:
            sources, macros, headers = KERNELS[ext.name]
            unit = Path(self.build_temp) / "bindings" / (ext.name.replace(".", "_") + ".c")
            unit.parent.mkdir(parents=True, exist_ok=True)
            unit.write_text(cbuild.binding_source(ext.name, [ROOT / s for s in sources], macros,
                                                  [ROOT / h for h in headers]))
            ext.sources = [str(unit)]
        super().build_extension(ext)

    def get_export_symbols(self, ext):
        # the wrapper is no Python module: it exports the FMI functions, not PyInit_*
        return [] if ext.name == FMI_WRAPPER else super().get_export_symbols(ext)


def _kernel(name, sources, headers):
    folders = sorted({str(Path(p).parent) for p in (*sources, *headers)})
    # the generated unit is the only source; the listed files are its dependencies
    return Extension(name, sources=[sources[-1]], include_dirs=folders,
                     depends=[*sources, *headers],
                     extra_compile_args=["-O2", "-fvisibility=hidden"] if os.name != "nt" else [])


extensions = [_kernel(name, sources, headers) for name, (sources, _, headers) in KERNELS.items()]
if sys.platform.startswith("linux"):
    extensions.append(Extension(
        FMI_WRAPPER, sources=["fmu/fmi/native/flexcosim_fmi2.c"],
        include_dirs=["fmu/fmi/native", "fmu/fmi/native/fmi2"],
        depends=["fmu/fmi/native/fmi2/fmi2Functions.h"],
        extra_compile_args=["-O2", "-fvisibility=hidden", "-Wno-format-truncation"],
        extra_link_args=["-ldl", "-lpthread", "-Wl,-z,defs"]))

setup(ext_modules=extensions, cmdclass={"build_ext": BuildKernels})
