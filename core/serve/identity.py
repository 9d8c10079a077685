"""Who is asking: a local caller by the kernel's peer credentials on the Unix socket, a
remote one by a MUNGE credential made for this connection's nonce. Either way a uid, named
through this host's user database (the cluster's, as the schedulers use it)."""
import grp
import os
import pwd
import socket
import struct

from .munge import MungeError


class Refused(Exception):
    """The caller could not be identified: nothing is answered."""


class Identity:
    def __init__(self, uid, gid, via):
        try:
            pw = pwd.getpwuid(uid)
        except KeyError:
            raise Refused(f"uid {uid} is not a user of this host")
        self.uid, self.gid, self.via = uid, gid, via
        self.user = pw.pw_name
        self.primary_gid = pw.pw_gid

    def in_group(self, name):
        """Member of group `name` in the group database (as its primary group or listed)."""
        try:
            g = grp.getgrnam(name)
        except KeyError:
            return False
        return g.gr_gid == self.primary_gid or self.user in g.gr_mem

    def __repr__(self):
        return f"{self.user} ({self.via})"


def peer(sock):
    """The identity of the process at the other end of a Unix socket (SO_PEERCRED: the
    kernel's record of who connected, which the caller cannot choose)."""
    creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    _pid, uid, gid = struct.unpack("3i", creds)
    return Identity(uid, gid, "peer")


def new_nonce():
    return os.urandom(16).hex()


def from_munge(munge, credential, nonce):
    """The identity a MUNGE credential proves, if munged accepts it and it was made for
    this connection (its payload is the nonce: a credential seen on the wire is no use
    on another connection, even where a second munged would not know it as replayed)."""
    try:
        uid, gid, payload = munge.decode(credential)
    except MungeError as e:
        raise Refused(f"MUNGE credential refused: {e}")
    if payload != nonce.encode():
        raise Refused("MUNGE credential refused: made for another connection")
    return Identity(uid, gid, "munge")
