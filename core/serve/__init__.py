"""The read service, `jobmon serve`: users read their own jobs without the database's
credential (docs/security.md).

  protocol.py   the wire: JSON lines, named operations with typed arguments
  identity.py   who is asking: peer credentials (Unix socket), MUNGE (TCP)
  munge.py      libmunge by ctypes
  policy.py     who may read which jobs (own, admin group, coordinated accounts)
  scoped.py     the store's read interface inside one caller's scope
  read_log.py   who read which job: kept by the service, shown to the job's owner
  server.py     the listeners and one connection's conversation
  client.py     the read interface answered by the service (RemoteStore)
"""
