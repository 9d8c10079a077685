"""What every job's start needs of the schedulers, without their objects (those are
jobmon.schedulers'): each plugin's `settings` module -- its sections and keys of the site
file, the tags that qualify its job ids -- plain values that import nothing, so the site
file's schema and the stored tags cost a job's start two small modules, not the plugins
or the registry."""


def modules():
    """Each registered plugin's settings module, in the plugins' order."""
    from jobmon import plugins
    return [__import__(f"{plugins.__name__}{m}.settings", fromlist=["SCHEMA"])
            for m in plugins.SCHEDULERS.values()]


def merged(schema, after):
    """`schema` (section -> key -> (type, default)) with every plugin's keys added: a
    section of its own goes after section `after` (in the plugins' order), a key of a
    section core has after core's keys. Also the union of the plugins' CHOICES, POSITIVE
    and NOT_NEGATIVE."""
    theirs, choices, positive, not_negative = {}, {}, set(), set()
    for s in modules():
        for section, keys in s.SCHEMA.items():
            theirs.setdefault(section, {}).update(keys)
        choices.update(s.CHOICES)
        positive |= s.POSITIVE
        not_negative |= s.NOT_NEGATIVE
    out = {}
    for section, keys in schema.items():
        out[section] = {**keys, **theirs.pop(section, {})}
        if section == after:
            out.update((k, theirs.pop(k)) for k in [k for k in theirs if k not in schema])
    return out, choices, positive, not_negative


def qualifier_tags():
    """The tags, over every scheduler, that say which instance a job id is of."""
    return tuple(t for s in modules() for t in s.QUALIFIER_TAGS)
