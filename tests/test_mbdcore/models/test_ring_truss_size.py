"""The ring truss's structural sizes are bounded and its build memory estimated before
anything is built (issue 22 item 10: ``--bays 1000000`` built for 67 s and 3.57 GB before
failing on memory)."""
from __future__ import annotations

import resource
import subprocess
import sys

import pytest

from mbdcore.blocks import ParameterError
from mbdcore.models.cable_net import add_cable_net
from mbdcore.models.ring_truss import (
    MAX_BAYS,
    build_coordinates,
    check_build_size,
    ring_truss,
)
from mbdcore.models.ring_truss_block import RingTrussBlock


def test_the_estimate_counts_the_coordinates_a_build_has():
    truss = ring_truss(n_bays=4, folded_angle=1.2)
    assert sum(b.n_coords for b in truss.system.bodies) == build_coordinates(4)
    add_cable_net(truss, net_rings=1, cable_elements=1)
    assert sum(b.n_coords for b in truss.system.bodies) == build_coordinates(4, 1, 1)


@pytest.mark.parametrize("config, words", [
    ({"n_bays": 1_000_000}, ["'n_bays' = 1000000", f"[4, {MAX_BAYS}]"]),
    ({"n_bays": 8, "net_rings": 1000}, ["'net_rings' = 1000", "[1, 20]"]),
])
def test_sizes_beyond_the_declared_limits_are_refused(config, words):
    with pytest.raises(ParameterError) as info:
        RingTrussBlock.configured(config)
    for w in words:
        assert w in str(info.value)


def test_a_build_beyond_the_memory_available_is_refused_saying_the_estimate():
    # within the declared limits, far beyond any machine's memory (1.4 TB)
    with pytest.raises(ParameterError) as info:
        RingTrussBlock.configured({"n_bays": MAX_BAYS, "net_rings": 20})
    text = str(info.value)
    assert "189,218 coordinates" in text and "needs about 1.43 TB" in text
    assert "of memory available" in text and "fewer bays (n_bays)" in text
    with pytest.raises(ParameterError, match="needs about"):
        check_build_size(MAX_BAYS, 20, 20)
    check_build_size(6)        # the default truss fits


def _limit_memory():   # so that the old code fails fast instead of filling the machine
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))


def test_the_command_refuses_a_million_bays_in_one_line(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "flexcosim", "build", "ring-truss",
                           "--bays", "1000000", "-o", str(tmp_path)],
                          capture_output=True, text=True, timeout=600,
                          preexec_fn=_limit_memory)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert proc.stderr.splitlines() == [
        f"flexcosim build: error: parameter 'n_bays' = 1000000 is invalid: accepted values are a "
        f"finite integer in [4, {MAX_BAYS}]"]
    assert list(tmp_path.iterdir()) == []
