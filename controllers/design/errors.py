"""The errors and warnings of the design tools: one place to import them from
(``from controllers.design import DesignError``)."""
from __future__ import annotations

__all__ = ["DesignError", "DesignWarning"]


class DesignError(ValueError):
    """A design request that cannot be met (the message says which part and why): a
    weight of the wrong shape or sign, a mode the inputs cannot stabilise, a phase
    margin a PID cannot give, a tuned loop that is unstable."""


class DesignWarning(UserWarning):
    """A design met its target at the design frequency but not over the whole loop."""
