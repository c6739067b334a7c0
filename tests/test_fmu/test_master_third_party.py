"""The master with FMUs written elsewhere (issue 13, items 21-22: the Modelica Reference
FMUs, FMI 2.0 co-simulation).

The Reference FMUs are not available offline; tests/c_fmu/stair.c reproduces the two
traits that broke the master: a String input that an output depends on (item 21) and a
request to terminate, fmi2Discard with fmi2Terminated set, as the Reference FMU Stair
does (item 22).
"""
from __future__ import annotations

import numpy as np
import pytest

from fmu.cosim.master import BlockComponent, FMUComponent, Master, System

try:
    from master_blocks import Gain
except ImportError:  # tests/ collected as a package
    from tests.master_blocks import Gain


def stair_system(fmu, **params):
    """Stair's y = u + len(label) fed to a gain g.y = -2 g.u; Stair's u unconnected (0)."""
    return System([FMUComponent("stair", fmu, parameters=params), BlockComponent("g", Gain(k=2.0))],
                  {"stair.y": "g.u"})


# ---------------------------------------------------------------------------------
# item 21: String variables
# ---------------------------------------------------------------------------------
def test_a_string_input_in_the_dependencies_is_dropped_not_a_crash(stair_fmu):
    c = FMUComponent("stair", stair_fmu, parameters={"label": "abcd"})
    assert c.inputs == ("u",) and c.outputs == ("counter", "y")
    assert c.feedthrough == {"counter": (), "y": ("u",)}   # 'label' is no input here
    r = Master(stair_system(stair_fmu, label="abcd"), 0.25).run(1.0)
    np.testing.assert_array_equal(r["stair.y"], 4.0)        # the String was set: len 4
    np.testing.assert_array_equal(r["g.y"], -8.0)
    np.testing.assert_array_equal(r["stair.counter"], [0, 0, 0, 0, 1])


def test_connecting_a_string_variable_is_refused_with_a_reason(stair_fmu):
    c = FMUComponent("stair", stair_fmu)
    with pytest.raises(ValueError, match=r"'stair\.label' is a String input of 'stair': String "
                                         r"variables are not connectable"):
        System([c, BlockComponent("g", Gain())], {"g.y": "stair.label"})
