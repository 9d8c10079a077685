"""MUNGE credentials through libmunge (Debian's libmunge2, which the `munge` package and
every cluster authenticating with MUNGE already has), by ctypes: no compiled module, no process per call.

A credential names the uid and gid of the process that made it, as the local munged saw
them through its socket, and is decoded by any munged sharing the key. munged refuses a
credential past its time-to-live (expired), one it has decoded before (replayed), and
one not made with its key (invalid, or a bad MAC)."""
import ctypes

# munge.h: enum munge_opt and enum munge_err (stable since MUNGE 0.5)
OPT_TTL, OPT_SOCKET = 4, 8
CODES = {8: "bad credential", 9: "bad version", 10: "bad cipher", 11: "bad MAC",
         13: "bad realm", 14: "invalid credential", 15: "expired credential",
         16: "rewound credential", 17: "replayed credential", 18: "unauthorized credential"}


class MungeError(Exception):
    def __init__(self, code, text):
        super().__init__(text)
        self.code = code


_lib = None


def _load():
    global _lib
    if _lib is None:
        try:
            lib = ctypes.CDLL("libmunge.so.2")
        except OSError as e:
            raise MungeError(-1, f"libmunge is not installed (Debian: apt install munge): {e}")
        lib.munge_ctx_create.restype = ctypes.c_void_p
        lib.munge_ctx_destroy.argtypes = [ctypes.c_void_p]
        lib.munge_ctx_set.argtypes = [ctypes.c_void_p, ctypes.c_int]
        lib.munge_ctx_strerror.argtypes = [ctypes.c_void_p]
        lib.munge_ctx_strerror.restype = ctypes.c_char_p
        lib.munge_encode.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p,
                                     ctypes.c_char_p, ctypes.c_int]
        lib.munge_decode.argtypes = [ctypes.c_char_p, ctypes.c_void_p,
                                     ctypes.POINTER(ctypes.c_void_p),
                                     ctypes.POINTER(ctypes.c_int),
                                     ctypes.POINTER(ctypes.c_uint),
                                     ctypes.POINTER(ctypes.c_uint)]
        _lib = lib
    return _lib


_free = ctypes.CDLL(None).free
_free.argtypes = [ctypes.c_void_p]


class Munge:
    """The munged at `socket` ("": libmunge's default, /run/munge/munge.socket.2)."""

    def __init__(self, socket=""):
        self.socket = socket.encode() if socket else None

    def _context(self, ttl=None):
        lib = _load()
        ctx = lib.munge_ctx_create()
        if not ctx:
            raise MungeError(5, "out of memory")
        if self.socket:
            lib.munge_ctx_set(ctx, OPT_SOCKET, ctypes.c_char_p(self.socket))
        if ttl is not None:
            lib.munge_ctx_set(ctx, OPT_TTL, ctypes.c_int(int(ttl)))
        return lib, ctx

    def _fail(self, lib, ctx, code):
        detail = lib.munge_ctx_strerror(ctx)
        text = detail.decode("utf-8", "replace") if detail else CODES.get(code, f"error {code}")
        return MungeError(code, text)

    def encode(self, payload, ttl=None):
        """A credential (text) carrying `payload` (bytes) and this process's uid and gid."""
        lib, ctx = self._context(ttl)
        cred = ctypes.c_void_p()
        try:
            code = lib.munge_encode(ctypes.byref(cred), ctx, payload, len(payload))
            if code:
                raise self._fail(lib, ctx, code)
            return ctypes.string_at(cred).decode("ascii")
        finally:
            if cred:
                _free(cred)
            lib.munge_ctx_destroy(ctx)

    def decode(self, credential):
        """(uid, gid, payload) of a credential; MungeError for any that munged refuses."""
        lib, ctx = self._context()
        buf, length = ctypes.c_void_p(), ctypes.c_int()
        uid, gid = ctypes.c_uint(), ctypes.c_uint()
        try:
            code = lib.munge_decode(credential.encode("ascii", "replace"), ctx,
                                    ctypes.byref(buf), ctypes.byref(length),
                                    ctypes.byref(uid), ctypes.byref(gid))
            if code:     # a replayed or expired credential still names a uid: never use it
                raise self._fail(lib, ctx, code)
            payload = ctypes.string_at(buf, length.value) if buf else b""
            return uid.value, gid.value, payload
        finally:
            if buf:
                _free(buf)
            lib.munge_ctx_destroy(ctx)
