"""The package's C, compiled when the package is built (``pip install .``, ``pip wheel .``):
nothing is compiled at run time, so the installed package and the FMUs it builds run on
a machine without a C compiler.  Everything else is in pyproject.toml.

* Each kernel of :data:`KERNELS` becomes a CPython extension module whose bindings
  ``mbdcore/cbuild.py`` generates from the C sources' API functions (the C is the one
  declaration of the interface).
* The FMI 2.0 wrapper of the Python FMUs (``fmu/fmi/native/flexcosim_fmi2.c``) becomes
  a shared library that ``fmu.fmi.build`` puts into every FMU as its binary (Linux).
* The code of the C-source FMUs kept in ``fmu/fmi/native/prebuilt/<model>/`` (written by
  ``python -m flexcosim.prebuilt``) becomes a binary that reads the numbers of an export
  from the FMU's resources, named by the digest of its code: ``fmu.fmi.export_c`` puts it
  into an export of the same code on a machine without a C compiler.
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
#: the macros of the numeric tables' one declaration (mbdcore.native.TableLayout)
TABLE_LAYOUT = "mbdcore/native/table_layout.h"

#: module -> (C sources compiled as one unit, in order; API macros; headers they include)
KERNELS = {
    "mbdcore.integrators._fixed_step": (["mbdcore/integrators/native/fixed_step.c"],
                                        ["FIXED_STEP_API"], [FIXED_STEP]),
    "mbdcore.dae._newton": (["mbdcore/dae/native/newton.c"], ["NEWTON_API"], [TABLE_LAYOUT]),
    "mbdcore.dae._sparse_lu": (["mbdcore/dae/native/sparse_lu.c"], ["SLU_API"], []),
    "mbdcore.multibody._beam_kinematics": (["mbdcore/multibody/native/beam_kinematics.c"],
                                           ["BEAM_API"], [TABLE_LAYOUT]),
    "mbdcore.multibody._ancf": (["mbdcore/multibody/native/ancf.c"], ["ANCF_API"],
                                [TABLE_LAYOUT]),
    "mbdcore.multibody._constraint_plan": (["mbdcore/multibody/native/constraint_plan.c"],
                                           ["PLAN_API"], [TABLE_LAYOUT]),
    "mbdcore.multibody._system_terms": (["mbdcore/multibody/native/system_terms.c"],
                                        ["TERMS_API"], [TABLE_LAYOUT]),
    "mbdcore.multibody._redundancy": (["mbdcore/multibody/native/redundancy.c"],
                                      ["RANK_API"], []),
    "mbdcore.spatial._ancf3d": (["mbdcore/spatial/native/ancf3d.c"], ["ANCF3D_API"], []),
    "mbdcore.models._arm": (["mbdcore/multibody/native/beam_kinematics.c",
                             "mbdcore/models/native/arm.c"], ["BEAM_API", "ARM_API"],
                            [FIXED_STEP, TABLE_LAYOUT]),
    "mbdcore.models._rigid_arm": (["mbdcore/models/native/rigid_arm.c"], ["RIGID_API"],
                                  [TABLE_LAYOUT]),
    "mbdcore.models._drive": (["mbdcore/models/native/drive.c"], ["DRIVE_API"],
                              [FIXED_STEP, TABLE_LAYOUT]),
    "mbdcore.models._linear": (["mbdcore/models/native/linear.c"], ["LINEAR_API"],
                               [FIXED_STEP, TABLE_LAYOUT]),
    "mbdcore.models._antenna_axis": (["mbdcore/models/native/drive.c",
                                      "mbdcore/models/native/antenna_axis.c"],
                                     ["DRIVE_API", "AXIS_API"], [FIXED_STEP, TABLE_LAYOUT]),
    "controllers.laws._joint_laws": (["mbdcore/models/native/rigid_arm.c",
                                      "controllers/laws/native/joint_laws.c"],
                                     ["RIGID_API", "LAWS_API"], [TABLE_LAYOUT]),
    "controllers.laws._pid": (["controllers/laws/native/pid.c"], ["LAWS_API"], [TABLE_LAYOUT]),
    "controllers.laws._lqg": (["mbdcore/models/native/rigid_arm.c",
                               "controllers/laws/native/lqg.c"], ["RIGID_API", "LAWS_API"],
                              [TABLE_LAYOUT]),
    "controllers.laws._notch": (["controllers/laws/native/notch.c"], ["LAWS_API"],
                                [TABLE_LAYOUT]),
    "controllers.laws._antenna_servo": (["controllers/laws/native/antenna_servo.c"],
                                        ["LAWS_API"], [TABLE_LAYOUT]),
    "fmu.cosim._log_proxy": (["fmu/cosim/native/log_proxy.c"], ["LOG_API"], [TABLE_LAYOUT]),
    "fmu.cosim._cosim_loop": (["fmu/cosim/native/cosim_loop.c"], ["LOOP_API"], [TABLE_LAYOUT]),
}

#: The FMI 2.0 wrapper of the Python FMUs: a shared library, not a Python module (it
#: starts or joins an interpreter through dlopen, so it links no libpython).
FMI_WRAPPER = "fmu.fmi._flexcosim_fmi2"


#: The files every C-source FMU shares (its sources/ folder), by their name there.
CFMU_SHARED = {"fmi2_cs.c": "fmu/fmi/native/cfmu/fmi2_cs.c",
               "cfmu_core.h": "fmu/fmi/native/cfmu/cfmu_core.h",
               "cfmu_state.h": "fmu/fmi/native/cfmu/cfmu_state.h",
               "flexcosim_model.h": "fmu/fmi/native/cfmu/flexcosim_model.h",
               "fixed_step.h": FIXED_STEP, "table_layout.h": TABLE_LAYOUT,
               "fmi_resources.h": "fmu/fmi/native/fmi_resources.h",
               **{h: f"fmu/fmi/native/fmi2/{h}" for h in ("fmi2Functions.h",
                                                         "fmi2FunctionTypes.h",
                                                         "fmi2TypesPlatform.h")}}
PREBUILT = ROOT / "fmu" / "fmi" / "native" / "prebuilt"


#: The package's C files by name, for the kernels a C FMU's model.c includes (a model's
#: C files travel into its FMU's sources/ under their own names, which are distinct).
PACKAGE_C = {p.name: p for package in ("mbdcore", "controllers", "fmu")
             for p in sorted((ROOT / package).rglob("native/*.c"))}


def _cfmu_files(folder: Path) -> dict:
    """The code files of an export of the code kept in ``folder`` (its model_config.h
    and model.c), by their names in the export's sources/ (cbuild.code_files)."""
    files = {name: ROOT / path for name, path in CFMU_SHARED.items()}
    files.update({name: folder / name for name in ("model_config.h", "model.c")})
    for line in (folder / "model.c").read_text().splitlines():
        if line.startswith('#include "') and line.endswith('.c"'):
            files[line[10:-1]] = PACKAGE_C[line[10:-1]]
    return files


#: module (named by the digest of its code, which export_c looks up) -> its folder
PREBUILT_CFMUS = {f"fmu.fmi._cfmu_{cbuild.skeleton_digest(_cfmu_files(folder))}": folder
                  for folder in sorted(PREBUILT.glob("*")) if (folder / "model.c").is_file()}


class BuildKernels(build_ext):
    """Writes each kernel's generated binding source, and stages each prebuilt C FMU's
    sources as an export lays them out, before compiling."""

    def build_extension(self, ext):
        if ext.name in PREBUILT_CFMUS:
            # the sources/ folder of an export, so that each build has its own objects
            staged = Path(self.build_temp) / "cfmu" / ext.name
            staged.mkdir(parents=True, exist_ok=True)
            for name, path in _cfmu_files(PREBUILT_CFMUS[ext.name]).items():
                (staged / name).write_bytes(path.read_bytes())
            ext.sources = [str(staged / "fmi2_cs.c"), str(staged / "model.c")]
            ext.include_dirs = [str(staged)]
        elif ext.name in KERNELS:
            sources, macros, headers = KERNELS[ext.name]
            unit = Path(self.build_temp) / "bindings" / (ext.name.replace(".", "_") + ".c")
            unit.parent.mkdir(parents=True, exist_ok=True)
            unit.write_text(cbuild.binding_source(ext.name, [ROOT / s for s in sources], macros,
                                                  [ROOT / h for h in headers]))
            ext.sources = [str(unit)]
        super().build_extension(ext)

    def get_export_symbols(self, ext):
        # the wrappers are no Python modules: they export the FMI functions, not PyInit_*
        if ext.name == FMI_WRAPPER or ext.name in PREBUILT_CFMUS:
            return []
        return super().get_export_symbols(ext)


def _kernel(name, sources, headers):
    folders = sorted({str(Path(p).parent) for p in (*sources, *headers)})
    # the generated unit is the only source; the listed files are its dependencies
    # -ffp-contract=off: no fused multiply-adds, as the C FMUs' -std=c99 build, so that a
    # kernel and its C FMU give the same bits on every CPU (FMA is baseline on aarch64)
    return Extension(name, sources=[sources[-1]], include_dirs=folders,
                     depends=[*sources, *headers],
                     extra_compile_args=["-O2", "-fvisibility=hidden", "-ffp-contract=off"]
                     if os.name != "nt" else [])


extensions = [_kernel(name, sources, headers) for name, (sources, _, headers) in KERNELS.items()]
if sys.platform.startswith("linux"):
    extensions.append(Extension(
        FMI_WRAPPER, sources=["fmu/fmi/native/flexcosim_fmi2.c"],
        include_dirs=["fmu/fmi/native", "fmu/fmi/native/fmi2"],
        depends=["fmu/fmi/native/fmi2/fmi2Functions.h"],
        extra_compile_args=["-O2", "-fvisibility=hidden", "-Wno-format-truncation"],
        extra_link_args=["-ldl", "-lpthread", "-Wl,-z,defs"]))
    for name, folder in PREBUILT_CFMUS.items():
        digest = name.rsplit("_", 1)[1]
        extensions.append(Extension(
            name, sources=[(folder / "model.c").relative_to(ROOT).as_posix()],
            depends=[p.relative_to(ROOT).as_posix() for p in _cfmu_files(folder).values()],
            define_macros=[("FLEXCOSIM_DATA_FROM_RESOURCES", "1"),
                           ("FLEXCOSIM_SKELETON", f'"{digest}"')],
            extra_compile_args=["-std=c99", "-O2", "-fvisibility=hidden"], libraries=["m"]))

setup(ext_modules=extensions, cmdclass={"build_ext": BuildKernels})
