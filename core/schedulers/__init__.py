"""The schedulers jobmon knows, each one object its plugin registers (interface.py, registry.py)."""
from .interface import Scheduler  # noqa: F401
from .registry import all, find, get, tags  # noqa: F401
