"""durable: the state of AI-agent sessions on local disk, one single-writer SQLite object per session."""

__version__ = "0.1.0"

from .errors import DurableError


def __getattr__(name):
    if name == "Store":
        from .library import Store

        return Store
    raise AttributeError(name)


__all__ = ["Store", "DurableError", "__version__"]
