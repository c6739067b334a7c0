"""``python -m controllers.design default-lqg``: rewrite the default LQG design that
:class:`controllers.laws.arm_lqg.ArmLQGController` reads (after changing a default
weight or an arm default)."""
import argparse
import sys

from controllers.design.arm_lqg import write_default_design

parser = argparse.ArgumentParser(prog="python -m controllers.design", description=__doc__)
parser.add_argument("task", choices=("default-lqg",), help="what to write")
parser.parse_args()
print(f"wrote {write_default_design()}")
sys.exit(0)
