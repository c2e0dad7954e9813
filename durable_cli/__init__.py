"""durable: the state of AI-agent sessions on local disk, one single-writer SQLite object per session."""

__version__ = "0.1.0"

from .errors import DurableError


def __getattr__(name):
    if name == "Store":
        from .library import Store

        return Store
    if name in ("StepFailed", "StepResult"):  # docs/reference/sessions.md §5.2: the library's steps
        from . import steps

        return getattr(steps, name)
    raise AttributeError(name)


__all__ = ["Store", "DurableError", "StepFailed", "StepResult", "__version__"]
