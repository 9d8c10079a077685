"""jobmon: exact, cheap per-job resource monitoring for batch clusters."""
__version__ = "0.1.0"


def __getattr__(name):  # the library API, imported only when used
    if name in ("monitor", "Monitor"):
        from . import api
        return getattr(api, name)
    raise AttributeError(name)
