"""The kernels compiled with the package: bindings generated from the C sources, and the
check that a compiled module is the build of the installed sources."""
from __future__ import annotations

import ctypes

import numpy as np
import pytest

from controllers.laws.kernels import JOINT_LAWS_C_SOURCES, joint_laws
from mbdcore.cbuild import api_functions
from mbdcore.models.manipulator import (ARM_C_HEADERS, ARM_C_SOURCE, ARM_C_SOURCES,
                                       FlexibleManipulator)
from mbdcore.native import KernelError, kernel_module


def test_the_interface_is_read_from_the_c_definitions():
    functions = {f.name: f for f in api_functions(ARM_C_SOURCE.read_text(), "ARM_API")}
    assert {"arm_table_length", "arm_eom", "arm_rhs", "arm_advance", "arm_outputs",
            "arm_range", "arm_limit"} <= set(functions)
    rhs = functions["arm_rhs"]
    assert rhs.restype == "int"
    assert [(p.name, p.ctype, p.pointer, p.writable) for p in rhs.parameters] == [
        ("tab", "double", True, False), ("x", "double", True, False),
        ("tau1", "double", False, False), ("tau2", "double", False, False),
        ("dx", "double", True, True)]


def test_a_declaration_that_cannot_be_bound_is_refused_by_name():
    with pytest.raises(ValueError, match="f: parameter 'p' of type 'struct s'"):
        api_functions("API void f(struct s p) {}", "API")
    with pytest.raises(ValueError, match="no function marked API"):
        api_functions("void f(void) {}", "API")


@pytest.fixture(scope="module")
def arm():
    return FlexibleManipulator()


def test_a_kernel_takes_arrays_and_solves_the_arm_dynamics(arm):
    """The arm's right-hand side through the generated binding, at rest with the links
    undeformed (no velocity terms, no elastic forces): M(q) q'' = (tau1, tau2, 0, ...),
    with M from the same kernel's arm_eom; the residual is bounded by the backward error
    of the solve, about n eps ||M|| ||q''||."""
    n = arm.n_dof
    x = np.zeros(2 * n)
    x[0], x[1] = 0.2, -0.4
    dx = np.empty(2 * n)
    lib = arm.kernel.lib
    assert lib.arm_rhs(arm.kernel.table, x, 0.3, -0.1, dx) == 0
    np.testing.assert_array_equal(dx[:n], x[n:])
    M, h = np.empty((n, n)), np.empty(n)
    assert lib.arm_eom(arm.kernel.table, x[:n], x[n:], M, h) == 0
    np.testing.assert_array_equal(h, 0.0)
    qdd = dx[n:]
    residual = M @ qdd - np.r_[0.3, -0.1, np.zeros(n - 2)]
    bound = 10 * n * np.finfo(float).eps * np.linalg.norm(M) * np.linalg.norm(qdd)
    assert np.linalg.norm(residual) <= bound
    assert abs(qdd[0]) > 0.1                 # the torque accelerates the first joint


@pytest.mark.parametrize("bad, message", [
    (lambda x, dx: (x.astype(np.float32), dx), "argument 'x' has items of format 'f'"),
    (lambda x, dx: (x, np.empty(2 * len(x))[::2]), "argument 'dx' must be a C-contiguous"),
    (lambda x, dx: (x, np.frombuffer(dx.tobytes())), "argument 'dx' must be a C-contiguous writable"),
    (lambda x, dx: (x.astype(np.int64), dx), "argument 'x' has items of format"),
    (lambda x, dx: ([0.0] * len(x), dx), "argument 'x' must be a C-contiguous"),
])
def test_a_wrong_array_is_a_type_error_naming_the_function_and_argument(arm, bad, message):
    x = np.zeros(2 * arm.n_dof)
    x, dx = bad(x, np.empty_like(x))
    with pytest.raises(TypeError, match=f"arm_rhs: {message}"):
        arm.kernel.lib.arm_rhs(arm.kernel.table, x, 0.0, 0.0, dx)


def test_arguments_are_counted_and_integers_checked():
    lib = joint_laws()
    with pytest.raises(TypeError, match=r"shaped_quintic\(\) takes 8 arguments \(2 given\)"):
        lib.shaped_quintic(1, 2)
    out = np.empty(3)
    with pytest.raises(OverflowError, match="shaped_quintic: argument 'n' = 4294967296"):
        lib.shaped_quintic(2 ** 32, np.ones(1), np.zeros(1), 0.0, 0.0, 1.0, 1.0, out)


def test_a_pointer_also_takes_an_address_or_none(arm):
    x = np.zeros(2 * arm.n_dof)
    x[0] = 0.3
    by_array, by_address = np.empty_like(x), np.empty_like(x)
    lib = arm.kernel.lib
    lib.arm_rhs(arm.kernel.table, x, 0.2, 0.0, by_array)
    lib.arm_rhs(arm.kernel.table.ctypes.data, x.ctypes.data, 0.2, 0.0, by_address.ctypes.data)
    np.testing.assert_array_equal(by_array, by_address)
    # a ctypes char buffer for a message: the range check reports nothing at rest
    message = ctypes.create_string_buffer(256)
    assert lib.arm_range(arm.kernel.table, np.zeros(2 * arm.n_dof), 0.3, message, 256) == 0


def test_a_module_built_from_other_sources_is_refused_with_how_to_rebuild():
    with pytest.raises(KernelError, match="built from other sources.*pip install"):
        kernel_module("mbdcore.models._arm", JOINT_LAWS_C_SOURCES)
    with pytest.raises(KernelError, match="built from other sources"):
        kernel_module("mbdcore.models._arm", ARM_C_SOURCES)   # the header is part of it
    assert kernel_module("mbdcore.models._arm", ARM_C_SOURCES, ARM_C_HEADERS)


def test_a_missing_module_is_refused_with_how_to_reinstall():
    with pytest.raises(KernelError, match="is missing.*reinstall"):
        kernel_module("mbdcore.models._no_such_kernel", ARM_C_SOURCES)
