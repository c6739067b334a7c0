"""``python -m flexcosim``: the same as the ``flexcosim`` command."""
import sys

from flexcosim.cli import main

sys.exit(main())
