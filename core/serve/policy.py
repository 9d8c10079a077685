"""Who may read which jobs through `jobmon serve` (docs/security.md):

- every user: the jobs that are theirs;
- members of the site's admin group ([service] admin_group): every job;
- a user the site names as coordinator of accounts ([service] coordinators_file): also
  the jobs run under those accounts.

A record is "theirs" as owner_of() says. Every read of the service goes through one Scope,
so that is the one place where a record's owner is decided."""


class PolicyError(Exception):
    pass


def owner_of(record):
    """The user a stored job run belongs to: the user the node's shipper saw owning the
    job's spool file (the kernel's, not the job's say). A claim on another user's job
    (jobmon.report.ownership) is still its runner's record -- their command line, their
    figures -- and never the job's owner's to read."""
    return record.get("user")


def account_of(record):
    """The account whose coordinators may read a record: its `account` tag -- not a
    claim's, whose job the scheduler says is another user's, its tags a say of its own."""
    from ..report.ownership import CLAIM, stored
    if stored(record) == CLAIM:
        return None
    return (record.get("tags") or {}).get("account")


class Scope:
    """What one caller may read."""

    def __init__(self, user, admin=False, accounts=()):
        self.user, self.admin, self.accounts = user, admin, frozenset(accounts)

    def allows(self, record):
        return (self.admin or owner_of(record) == self.user
                or (bool(self.accounts) and account_of(record) in self.accounts))

    @property
    def only_user(self):
        """The one user whose records are all this scope reads (a store can filter by it),
        or None when it reads more."""
        return None if self.admin or self.accounts else self.user

    def describe(self):
        if self.admin:
            return "every user's jobs"
        if self.accounts:
            return f"own jobs and those of accounts {', '.join(sorted(self.accounts))}"
        return "own jobs"


class Policy:
    def __init__(self, admin_group="", coordinators=None):
        self.admin_group = admin_group
        self.coordinators = coordinators or {}    # user -> {account}

    @classmethod
    def from_config(cls, section):
        path = section.get("coordinators_file") or ""
        return cls(section.get("admin_group") or "",
                   read_coordinators(path) if path else None)

    def scope(self, identity):
        admin = bool(self.admin_group) and identity.in_group(self.admin_group)
        return Scope(identity.user, admin, self.coordinators.get(identity.user, ()))


def read_coordinators(path):
    """{user: {account}} from lines `ACCOUNT: USER [USER ...]` (# comments)."""
    out = {}
    from ..config.validate import read_text
    try:
        lines = read_text(path).splitlines()     # a FIFO is refused, never waited on
    except OSError as e:
        raise PolicyError(f"coordinators file {path}: {e.strerror}")
    for n, line in enumerate(lines, 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        account, sep, users = line.partition(":")
        if not sep or not account.strip() or not users.split():
            raise PolicyError(f"{path}:{n}: expected `ACCOUNT: USER [USER ...]`")
        for user in users.split():
            out.setdefault(user, set()).add(account.strip())
    return out
