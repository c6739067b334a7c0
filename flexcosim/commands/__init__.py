"""The ``flexcosim`` commands, one module each, imported by name only when that command
runs (:data:`flexcosim.catalog.COMMANDS`): each has ``run(args) -> exit code``."""

__all__ = ["demo", "build", "export_c", "cosim"]
