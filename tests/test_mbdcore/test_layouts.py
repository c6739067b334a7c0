"""The kernels' numeric tables are declared once, as an X-macro list in their C source
(``mbdcore/native/table_layout.h``), from which C gets its struct and reader and Python
its packer (``mbdcore.native.TableLayout``): the two sides cannot disagree on a field's
place, and a table packed with a field missing, unknown or mis-sized is refused naming
it."""
from __future__ import annotations

import ctypes
import importlib.machinery
import importlib.util
import re
import sysconfig
from pathlib import Path

import numpy as np
import pytest

from controllers.laws.antenna_servo import AntennaServoController, PointingReference
from controllers.laws.arm_lqg import ArmLQGController
from controllers.laws.joint_pd import JointPDController
from controllers.laws.kernels import (ANTENNA_SERVO_C_SOURCE, JOINT_LAWS_C_SOURCE,
                                      LQG_C_SOURCES, NOTCH_C_SOURCE, PID_C_SOURCE,
                                      lqg_input_layout, lqg_layout, lqg_settings_layout,
                                      notch_layout, pd_layout, pid_layout, pointing_layout,
                                      servo_layout)
from controllers.laws.pid import PIDController
from mbdcore.cbuild import (TABLE_INT_LIMIT, TABLE_LAYOUT_HEADER, binding_source,
                            compile_shared, find_compiler, table_layouts)
from mbdcore.models.antenna import (AXIS_C_SOURCE, AXIS_OUTPUTS, PointingAxisBlock,
                                    axis_layout, axis_library)
from mbdcore.models.drive import (DRIVE_C_SOURCE, DRIVE_OUTPUTS, DCMotorBlock, DCMotorBody,
                                  drive_layout, drive_library, gear_law, gear_law_layout,
                                  motor_body_layout)
from mbdcore.models.linear import LINEAR_C_SOURCE, linear_layout, linear_table
from mbdcore.models.manipulator import ARM_C_SOURCE, FlexibleManipulator, arm_layout
from mbdcore.models.rigid_arm import RIGID_ARM_C_SOURCE, RigidTwoLinkArm, rigid_layout
from fmu.cosim.fmu_component import LOG_PROXY_C_SOURCE, log_route_layout
from mbdcore.dae.compiled_step import alpha_step_layout
from mbdcore.dae.sparse_step import sparse_matrix_layout, sparse_newton_layout
from mbdcore.dae.newton_native import NEWTON_C_SOURCE, newton_layouts
from mbdcore.multibody.ancf import ANCF_C_SOURCE, ancf_body_layout
from mbdcore.multibody.assembly import PLAN_C_SOURCE, plan_geometric_layout, plan_layout
from mbdcore.multibody.beam_modes import (BEAM_KINEMATICS_C_SOURCE, BeamPoints,
                                          ClampedBeamModes, beam_points_layout)
from mbdcore.native import TableError, TableLayout, table_layout


def _arm_tables():
    return [FlexibleManipulator().kernel.table,
            FlexibleManipulator(kinematics="second-order", n_modes=3).kernel.table]


def _drive_tables():
    return [DCMotorBlock().packed, DCMotorBlock(n_motors=2, bias_current=0.3).packed]


def _axis_tables():
    return [PointingAxisBlock().kernel.table]


def _linear_tables():
    rng = np.random.default_rng(3)
    return [linear_table(*(rng.standard_normal(shape) for shape in ((3, 3), (3, 2), (4, 3),
                                                                   (4, 2)))),
            linear_table(np.eye(2), np.zeros((2, 0)), np.zeros((0, 2)), np.zeros((0, 0)))]


def _rigid_tables():
    return [RigidTwoLinkArm.from_flexible().c_parameters]


def _pid_tables():
    return [PIDController()._c_params,
            PIDController(kp=2.0, ki=3.0, kd=0.1, tf=0.01, anti_windup="clamping")._c_params]


def _notch_tables():
    return [notch_layout().pack(frequency=5.0, zeta_zero=0.05, zeta_pole=0.7, dt=1e-3)]


def _servo_tables():
    return [AntennaServoController()._c_params,
            AntennaServoController(n_motors=1, beta=0.25)._c_params]


def _pointing_tables():
    return [pointing_layout().pack(**PointingReference(step=0.1, rate=0.01).params)]


def _pd_tables():
    return [JointPDController()._c_gains, JointPDController(feedforward=0, kp1=3.0)._c_gains]


def _lqg_tables():
    return [ArmLQGController()._table]


def _lqg_input_tables():
    controller = ArmLQGController()
    return [controller._u(), np.arange(len(lqg_input_layout().names), dtype=float)]


def _drive_output_tables():
    block = DCMotorBlock(n_motors=1)
    return [np.array([block.outputs()[name] for name in DRIVE_OUTPUTS])]


def _gear_law_tables():
    return [gear_law(2.0e4, 3.0, 1e-3, 2e-4)[1], gear_law(5.0e3, 0.0, 0.0, 1e-4)[1]]


def _motor_body_tables():
    return [DCMotorBody("m").compiled_forces(None).owner,
            DCMotorBody("m", torque_constant=0.05, friction_speed=0.3).compiled_forces(None).owner]


def _axis_output_tables():
    block = PointingAxisBlock()
    return [np.array([block.outputs()[name] for name in AXIS_OUTPUTS])]


def _beam_points_tables():
    modes = ClampedBeamModes.compute(3, 0.5, 0.2, 1.5, tip_mass=0.1)
    x = [0.1, 0.3, 0.5]
    return [BeamPoints(modes, x, "exact").table,
            BeamPoints(modes, x, "second-order", stiffening=0.5).table]


def _lqg_settings_tables():
    return [ArmLQGController()._gains, ArmLQGController(reference="model")._gains]


#: every migrated kernel: (its C file, the layout's name, its TableLayout, example tables,
#: the name of the table's pointer in the C functions)
KERNEL_TABLES = {
    "arm": (ARM_C_SOURCE, "ARM_LAYOUT", arm_layout, _arm_tables, "tab"),
    "drive": (DRIVE_C_SOURCE, "DRIVE_LAYOUT", drive_layout, _drive_tables, "pk"),
    "axis": (AXIS_C_SOURCE, "AXIS_LAYOUT", axis_layout, _axis_tables, "tab"),
    "linear": (LINEAR_C_SOURCE, "LINEAR_LAYOUT", linear_layout, _linear_tables, "tab"),
    "rigid_arm": (RIGID_ARM_C_SOURCE, "RIGID_LAYOUT", rigid_layout, _rigid_tables, "p"),
    "pid": (PID_C_SOURCE, "PID_LAYOUT", pid_layout, _pid_tables, "p"),
    "notch": (NOTCH_C_SOURCE, "NOTCH_LAYOUT", notch_layout, _notch_tables, "p"),
    "servo": (ANTENNA_SERVO_C_SOURCE, "SERVO_LAYOUT", servo_layout, _servo_tables, "p"),
    "pointing": (ANTENNA_SERVO_C_SOURCE, "POINTING_LAYOUT", pointing_layout, _pointing_tables,
                 "p"),
    "joint_pd": (JOINT_LAWS_C_SOURCE, "PD_LAYOUT", pd_layout, _pd_tables, "g"),
    "lqg": (LQG_C_SOURCES[-1], "LQG_LAYOUT", lqg_layout, _lqg_tables, "T"),
    "lqg_settings": (LQG_C_SOURCES[-1], "LQG_SETTINGS_LAYOUT", lqg_settings_layout,
                     _lqg_settings_tables, "g"),
    "lqg_inputs": (LQG_C_SOURCES[-1], "LQG_INPUT_LAYOUT", lqg_input_layout, _lqg_input_tables,
                   "u"),
    "drive_outputs": (DRIVE_C_SOURCE, "DRIVE_OUTPUT_LAYOUT",
                      lambda: table_layout(drive_library, "DRIVE_OUTPUT_LAYOUT"),
                      _drive_output_tables, "y"),
    "axis_outputs": (AXIS_C_SOURCE, "AXIS_OUTPUT_LAYOUT",
                     lambda: table_layout(axis_library, "AXIS_OUTPUT_LAYOUT"),
                     _axis_output_tables, "y"),
    "gear_law": (DRIVE_C_SOURCE, "GEAR_LAW_LAYOUT", gear_law_layout, _gear_law_tables, "p"),
    "motor_body": (DRIVE_C_SOURCE, "MOTOR_BODY_LAYOUT", motor_body_layout,
                   _motor_body_tables, "p"),
    "beam_points": (BEAM_KINEMATICS_C_SOURCE, "BEAM_POINTS_LAYOUT", beam_points_layout,
                    _beam_points_tables, "T"),
}


@pytest.mark.parametrize("kernel", sorted(KERNEL_TABLES))
def test_python_packs_where_the_compiled_reader_reads(kernel):
    """Each field as the compiled kernel's struct reads it (the value of a scalar, the
    offset of an array) is where the Python layout put it, on tables of the block."""
    source, name, layout, tables, _ = KERNEL_TABLES[kernel]
    layout = layout()
    assert [f.name for f in table_layouts(source.read_text())[name]] == list(layout.names)
    for table in tables():
        by_c = layout.read_by_c(table)
        where = layout.offsets(table)
        fields = layout.unpack(table)
        for f in layout.fields:
            expected = where[f.name][0] if f.kind == "ARRAY" else fields[f.name]
            assert by_c[f.name] == expected, (kernel, f.name)


#: the layouts that declare a C struct Python fills as a ctypes structure
KERNEL_STRUCTS = {
    "ancf_body": (ANCF_C_SOURCE, "ANCF_BODY_LAYOUT", ancf_body_layout),
    "newton": (NEWTON_C_SOURCE, "NEWTON_LAYOUT", lambda: newton_layouts()[0]),
    "newton_state": (NEWTON_C_SOURCE, "NEWTON_STATE_LAYOUT", lambda: newton_layouts()[1]),
    "alpha_step": (NEWTON_C_SOURCE, "ALPHA_STEP_LAYOUT", alpha_step_layout),
    "sparse_newton": (NEWTON_C_SOURCE, "SPARSE_NEWTON_LAYOUT", sparse_newton_layout),
    "sparse_matrix": (NEWTON_C_SOURCE, "SPARSE_MATRIX_LAYOUT", sparse_matrix_layout),
    "log_route": (LOG_PROXY_C_SOURCE, "LOG_ROUTE_LAYOUT", log_route_layout),
    "plan": (PLAN_C_SOURCE, "PLAN_LAYOUT", plan_layout),
    "plan_geometric": (PLAN_C_SOURCE, "PLAN_GEOMETRIC_LAYOUT", plan_geometric_layout),
}


@pytest.mark.parametrize("layout", sorted(KERNEL_TABLES) + sorted(KERNEL_STRUCTS))
def test_the_ctypes_structure_is_the_compiled_struct(layout):
    """The struct that table_layout.h makes of each declaration and the ctypes class
    Python makes of the same list agree member by member (offsets) and in size."""
    source, name, layout = (KERNEL_TABLES.get(layout) or KERNEL_STRUCTS[layout])[:3]
    layout = layout()
    assert [f.name for f in table_layouts(source.read_text())[name]] == list(layout.names)
    offsets, size = layout.struct_offsets_in_c()
    cls = layout.ctypes_class()
    assert {n: getattr(cls, n).offset for n, _ in cls._fields_} == offsets
    assert ctypes.sizeof(cls) == size


@pytest.mark.parametrize("module", ["mbdcore/dae/newton_native.py", "mbdcore/multibody/ancf.py",
                                    "fmu/cosim/fmu_component.py",
                                    "mbdcore/multibody/assembly.py"])
def test_no_struct_is_mirrored_by_hand(module):
    """The modules whose kernels take a struct make its ctypes class from the layout: no
    ``_fields_`` list of their own."""
    root = Path(__file__).resolve().parents[2]
    assert "_fields_" not in (root / module).read_text()


def test_a_struct_is_filled_by_name_with_arrays_of_their_declared_size():
    layout = ancf_body_layout()
    fields = dict(N=2, G=3, B=np.zeros(96), Bw=np.ones(96), ea=1.0, ei=2.0, beta=0.0,
                  f=np.empty(12), k=np.empty(128), c=np.empty(128))
    params = layout.structure(**fields)
    assert (params.N, params.G, params.ei) == (2, 3, 2.0)
    assert params.Bw == fields["Bw"].ctypes.data and params.arrays[1] is fields["Bw"]
    with pytest.raises(TableError, match=r"ANCF_BODY_LAYOUT: field 'k' needs a C-contiguous "
                                         r"writable float64 array of 64 \* N = 128 numbers"):
        layout.structure(**{**fields, "k": np.empty(127)})
    with pytest.raises(TableError, match="field 'B' needs a C-contiguous float64 array"):
        layout.structure(**{**fields, "B": np.zeros((96, 2))[:, 0]})
    with pytest.raises(TableError, match="ANCF_BODY_LAYOUT: field 'ea' is not finite"):
        layout.structure(**{**fields, "ea": np.inf})
    with pytest.raises(TableError, match="ANCF_BODY_LAYOUT: a struct .* cannot be packed"):
        layout.pack(**fields)


@pytest.mark.parametrize("kernel", sorted(KERNEL_TABLES))
def test_the_c_reads_its_table_by_field_name_only(kernel):
    """No index into the table beside the reader: the C file has no ``tab[3]`` or
    ``tab + 14``, so the X-macro list is the C side's only layout."""
    source, *_, pointer = KERNEL_TABLES[kernel]
    text = re.sub(r"/\*.*?\*/", " ", source.read_text(), flags=re.S)
    assert not re.search(rf"\b{pointer}\s*(\[\s*\d|\+\s*\d)", text)


@pytest.fixture(scope="module")
def small():
    return TableLayout("SMALL_LAYOUT", [("INT", "n", "1"), ("REAL", "mass", "1"),
                                        ("ARRAY", "k", "n * (n + 1)")])


def test_a_table_packs_by_name_and_unpacks_back(small):
    table = small.pack(n=2, mass=1.5, k=np.arange(6.0).reshape(2, 3))
    np.testing.assert_array_equal(table, [2, 1.5, 0, 1, 2, 3, 4, 5])
    fields = small.unpack(table)
    assert fields["n"] == 2 and fields["mass"] == 1.5
    np.testing.assert_array_equal(fields["k"], np.arange(6.0))


@pytest.mark.parametrize("fields, message", [
    (dict(n=2, mass=1.0), r"SMALL_LAYOUT: field 'k' not given"),
    (dict(n=2, mass=1.0, k=np.zeros(6), damping=0.1), r"SMALL_LAYOUT: no field 'damping'"),
    (dict(n=2, mass=1.0, k=np.zeros(5)), r"SMALL_LAYOUT: field 'k' has 5 numbers; its size "
                                         r"n \* \(n \+ 1\) is 6"),
    (dict(n=2, mass=np.ones(2), k=np.zeros(6)), r"SMALL_LAYOUT: field 'mass' has 2 numbers"),
    (dict(n=2.5, mass=1.0, k=np.zeros(6)), r"SMALL_LAYOUT: the INT field 'n' = 2.5 is not a "
                                           "whole number"),
    (dict(n=TABLE_INT_LIMIT + 1, mass=1.0, k=()), r"SMALL_LAYOUT: the INT field 'n'"),
    (dict(n=2, mass=np.nan, k=np.zeros(6)), r"SMALL_LAYOUT: field 'mass' is not finite"),
])
def test_a_wrong_field_is_refused_naming_the_table_and_the_field(small, fields, message):
    with pytest.raises(TableError, match=message):
        small.pack(**fields)


def test_a_c_fmu_fills_a_table_of_scalars_by_name():
    """The C initializer of a C FMU's table from its parameters, in the layout's order."""
    layout = TableLayout("GAINS_LAYOUT", [("REAL", "kp", "1"), ("INT", "mode", "1")])
    assert layout.c_initializer(mode="(double)PAR_mode", kp="PAR_kp") == \
        "{PAR_kp, (double)PAR_mode}"
    with pytest.raises(TableError, match="GAINS_LAYOUT: field 'mode' not given"):
        layout.c_initializer(kp="PAR_kp")
    with pytest.raises(TableError, match="SMALL_LAYOUT: the array field 'k'"):
        TableLayout("SMALL_LAYOUT", [("INT", "n", "1"), ("ARRAY", "k", "n")]).c_initializer(
            n="1", k="0")


def test_a_table_of_another_length_is_refused_on_unpacking(small):
    with pytest.raises(TableError, match="SMALL_LAYOUT: 7 numbers where its fields take 8"):
        small.unpack(np.zeros(7) + 2)


def test_the_packer_refuses_what_the_arm_kernel_would_misread():
    table = FlexibleManipulator().kernel.table
    fields = arm_layout().unpack(table)
    fields["K"], fields["D"] = fields["K"][:-1], fields["D"]
    with pytest.raises(TableError, match=r"ARM_LAYOUT: field 'K' has 35 numbers; its size "
                                         r"\(2 \+ 2 \* nm\) \* \(2 \+ 2 \* nm\) is 36"):
        arm_layout().pack(**fields)


def test_a_struct_takes_addresses_and_int_arrays_where_declared():
    layout = TableLayout("CALL_LAYOUT", [("INT", "n", "1"), ("FN", "rhs", "rhs_fn"),
                                         ("ADDRESS", "ctx", "1"), ("INTS", "piv", "n")])
    params = layout.structure(n=2, rhs=1234, ctx=None, piv=np.zeros(2, dtype=np.intc))
    assert (params.n, params.rhs, params.ctx) == (2, 1234, None)
    with pytest.raises(TableError, match="CALL_LAYOUT: field 'piv' needs a C-contiguous int32 "
                                         "array of n = 2 numbers"):
        layout.structure(n=2, rhs=None, ctx=None, piv=np.zeros(2))
    with pytest.raises(TableError, match="CALL_LAYOUT: field 'rhs' needs an address"):
        layout.structure(n=2, rhs=1.5, ctx=None, piv=np.zeros(2, dtype=np.intc))


def test_a_structs_int_field_is_a_c_int_past_the_flat_tables_limit():
    """A struct's INT field is a C int (a large model's dense G has more than 10^6
    entries: the 4-bay truss with its net, 1.18e6), where a flat table's INT fields stay
    within TABLE_INT_LIMIT for its C reader's size arithmetic."""
    layout = TableLayout("COUNT_LAYOUT", [("INT", "n_out", "1"), ("ADDRESS", "ctx", "1")])
    assert layout.structure(n_out=1179360, ctx=None).n_out == 1179360 > TABLE_INT_LIMIT
    assert layout.structure(n_out=2**31 - 1, ctx=None).n_out == 2**31 - 1
    with pytest.raises(TableError, match=r"COUNT_LAYOUT: the INT field 'n_out' = 2147483648"):
        layout.structure(n_out=2**31, ctx=None)


def test_a_struct_takes_int_arrays_the_kernel_writes_only_writable():
    """IWORK: an ``int *`` the kernel writes (the constraint plan's term indices), so a
    read-only or float array is refused naming the field."""
    layout = TableLayout("OUT_LAYOUT", [("INT", "n", "1"), ("IWORK", "rows", "2 * n")])
    rows = np.zeros(4, dtype=np.intc)
    assert layout.structure(n=2, rows=rows).rows == rows.ctypes.data
    rows.flags.writeable = False
    for bad in (rows, np.zeros(4)):
        with pytest.raises(TableError, match="OUT_LAYOUT: field 'rows' needs a C-contiguous "
                                             r"writable int32 array of 2 \* n = 4 numbers"):
            layout.structure(n=2, rows=bad)


@pytest.mark.parametrize("body, message", [
    ("X(INT, n, 1) X(ARRAY, k, m * n)", "the size of field 'k' uses 'm', which is no earlier "
                                        "INT field"),
    ("X(ARRAY, k, n) X(INT, n, 1)", "the size of field 'k' uses 'n'"),
    ("X(INT, n, 1) X(ARRAY, k, n / 2)", r"the size of field 'k', 'n / 2', is not an expression"),
    ("X(INT, n, 1) X(BOOL, flag, 1)", "field 'flag' has kind 'BOOL'"),
    ("X(INT, n, 1) X(REAL, n, 1)", "field 'n' is declared twice"),
    ("X(REAL, mass, 2)", "the REAL field 'mass' has size '2'"),
    ("X(INT, n, 1) Y(REAL, mass, 1)", "expected X"),
    ("X(FN, rhs, n * 2)", "the FN field 'rhs' needs its C function pointer type"),
])
def test_a_malformed_declaration_is_refused_at_build_naming_the_field(body, message):
    with pytest.raises(ValueError, match=f"table BAD_LAYOUT: {message}"):
        table_layouts(f"#define BAD_LAYOUT(X) {body}\n")


def test_the_int_limit_is_the_headers():
    limit = re.search(r"#define TABLE_INT_LIMIT (\S+)", TABLE_LAYOUT_HEADER.read_text())
    assert float(limit.group(1)) == TABLE_INT_LIMIT


# -- one declaration, both sides: a throwaway kernel built through cbuild -------------------

PROBE_C = r"""
#include "table_layout.h"
#define PROBE_LAYOUT(X) X(INT, n, 1) X(REAL, mass, 1) X(REAL, length, 1) X(ARRAY, k, n * n)
typedef struct { PROBE_LAYOUT(TABLE_MEMBER) } Probe;
TABLE_READER(PROBE_LAYOUT, Probe, probe_read)
#ifndef PROBE_API
#define PROBE_API
#endif
/* the first natural frequency's square of a mass on a spring k[0] over a length: what a
   kernel computes from its fields by name */
PROBE_API double probe_stiffness(const double *tab) {
    Probe p;
    if (!probe_read(tab, &p)) return -1.0;
    return p.k[0] * p.length / p.mass;
}
"""


def _build_probe(tmp: Path, name: str, source: str):
    if find_compiler() is None:
        pytest.skip("no C compiler")
    folder = tmp / name
    folder.mkdir()
    (folder / "probe.c").write_text(source)
    (folder / "table_layout.h").write_bytes(TABLE_LAYOUT_HEADER.read_bytes())
    unit = folder / f"{name}_unit.c"
    unit.write_text(binding_source(name, [folder / "probe.c"], ["PROBE_API"]))
    output = folder / (name + importlib.machinery.EXTENSION_SUFFIXES[0])
    compile_shared([unit], output, include_dirs=[folder, sysconfig.get_paths()["include"]],
                   flags=("-O1",), libraries=())
    spec = importlib.util.spec_from_file_location(name, output)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_swapped_field_in_the_declaration_moves_on_both_sides(tmp_path):
    """Two fields of equal size swapped in a copy of the declaration: the packed table
    changes, the C reads each field by name as before, so the kernel's result does not."""
    swapped = PROBE_C.replace("X(REAL, mass, 1) X(REAL, length, 1)",
                              "X(REAL, length, 1) X(REAL, mass, 1)")
    results, tables = [], []
    for name, source in (("_probe_straight", PROBE_C), ("_probe_swapped", swapped)):
        module = _build_probe(tmp_path, name, source)
        layout = table_layout(lambda module=module: module, "PROBE_LAYOUT")
        table = layout.pack(n=2, mass=4.0, length=0.5, k=[[8.0, 0.0], [0.0, 1.0]])
        assert layout.read_by_c(table) == {"n": 2, "mass": 4.0, "length": 0.5, "k": 3}
        tables.append(table)
        results.append(module.probe_stiffness(table))
    assert results == [1.0, 1.0]
    np.testing.assert_array_equal(tables[0][1:3], [4.0, 0.5])
    np.testing.assert_array_equal(tables[1][1:3], [0.5, 4.0])


def test_the_beam_kernel_refuses_a_table_of_both_or_neither_point_sets():
    """A beam's points are given either by their distances (second order) or as segment
    ends (exact): a table of both, of neither, or of more Gauss nodes per segment than
    the kernel's block is no table of points (-1), though the reader reads it."""
    from mbdcore.multibody.beam_modes import beam_kinematics
    layout, lib = beam_points_layout(), beam_kinematics()
    exact = layout.unpack(_beam_points_tables()[0])
    second = layout.unpack(_beam_points_tables()[1])
    assert lib.beam_table_length(layout.pack(**exact)) == layout.pack(**exact).size
    both = {**second, "n_seg": exact["n_seg"], "m": exact["m"], "wseg": exact["wseg"],
            "dseg": exact["dseg"]}
    neither = {**second, "n_x": 0, "x": (), "phi": (), "G": ()}
    for fields in (both, neither):
        table = layout.pack(**fields)
        assert layout.read_by_c(table)["n_seg"] == fields["n_seg"]
        assert lib.beam_table_length(table) == -1
    n_seg, m = exact["n_seg"], int(re.search(r"#define BEAM_NODE_BLOCK (\d+)",
                                              BEAM_KINEMATICS_C_SOURCE.read_text()).group(1)) + 1
    wide = {**exact, "m": m, "wseg": np.ones(m * n_seg), "dseg": np.ones(m * n_seg * exact["N"])}
    assert lib.beam_table_length(layout.pack(**wide)) == -1
