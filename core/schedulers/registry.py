"""Where core finds a scheduler: by its tag, through the plugins' own table
(jobmon.plugins.SCHEDULERS), never by naming one here. Each plugin package has a module
`scheduler` whose SCHEDULER is its Scheduler object (interface.py).

Lazy: a plugin's scheduler module is imported when it is first asked for, so importing the
registry costs the per-job path nothing it does not already load (jobmon.plugins is
standard library only), and a read command loads only the schedulers it asks about.
"""
from .interface import load

_found = {}


def tags():
    """The tags of every registered scheduler, in the plugins' order."""
    from jobmon import plugins
    return tuple(plugins.SCHEDULERS)


def get(tag):
    """The Scheduler registered as `tag`; KeyError when none is."""
    if tag not in _found:
        from jobmon import plugins
        module = plugins.SCHEDULERS[tag]          # KeyError: no such scheduler
        _found[tag] = load(plugins.__name__ + module + ".scheduler").SCHEDULER
    return _found[tag]


def find(tag):
    """get(tag), or None for a tag no scheduler has (a `jobmon run` job's "local")."""
    try:
        return get(tag)
    except KeyError:
        return None


def all():  # noqa: A001 -- the registry's word for every scheduler
    """Every registered Scheduler."""
    return [get(t) for t in tags()]
