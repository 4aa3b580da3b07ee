"""Who may talk to a member: the cluster secret, the handshake, TLS (docs/node.md §8).

Every connection, member-to-member or client, starts with a mutual challenge-response
over fresh nonces, before any other frame is read::

    opener  -> listener   auth      [cluster name, role, member id or -1, nonce_o]
    listener -> opener    challenge [nonce_l, HMAC(secret, "listener" | transcript)]
    opener  -> listener   proof     [HMAC(secret, "opener" | transcript)]

where the transcript is the cluster name, role, member id and both nonces. Each side
proves it holds the secret without sending it; a recorded handshake does not verify
under the other side's fresh nonce, and each side's proof has its own label, so one
cannot be reflected as the other. It costs one round trip per connection: the opener
sends its proof and its first frames together. The member id a ``peer`` connection
names is bound to the connection; a later frame cannot claim another.

With no secret (a loopback-only member, see :func:`is_loopback`) the same handshake runs
with an empty key: it checks the cluster name and nothing more.
"""
from __future__ import annotations

import asyncio
import hashlib
import hmac
import ipaddress
import os
import secrets
import socket
import ssl
import stat
import struct
from typing import Any

import msgpack

from hzfast.node import wire

__all__ = ["ROLES", "AuthError", "accept", "client_ssl", "connect_socket", "generate_secret",
           "is_loopback", "load_secret", "offer", "server_ssl"]

ROLES = ("peer", "client")
_LABEL_LISTENER = b"hzfast-auth-v1 listener"
_LABEL_OPENER = b"hzfast-auth-v1 opener"
_AUTH_READ = wire.caps(wire.AUTH_FRAME, (*wire.AUTH_TAGS, "error"))


class AuthError(ConnectionError):
    """The other side did not authenticate (wrong secret or cluster name, or no handshake).

    ``code`` says which: ``cluster_name``, ``auth_failed`` or ``bad_handshake``.
    """

    def __init__(self, code: str, text: str) -> None:
        super().__init__(text)
        self.code = code


# ---------------------------------------------------------------------------- secrets
def load_secret(path: str) -> bytes:
    """The cluster secret in the file at ``path`` (surrounding whitespace stripped).

    Raises
    ------
    ValueError
        The file cannot be read, is empty or shorter than 16 bytes, or other users may
        read it (its mode must not grant group or others any access: ``chmod 600``).
    """
    try:
        st = os.stat(path)
        with open(path, "rb") as f:
            data = f.read(1 << 16).strip()
    except OSError as exc:
        raise ValueError(f"secret file {path}: {exc.strerror or exc}") from None
    if st.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise ValueError(f"secret file {path}: readable by other users (mode "
                         f"{stat.S_IMODE(st.st_mode):o}); run chmod 600 {path}")
    if len(data) < 16:
        raise ValueError(f"secret file {path}: holds {len(data)} bytes, at least 16 needed")
    return data


def generate_secret(path: str) -> bytes:
    """Write a new random secret (64 hex digits) to ``path``, created with mode 0600.

    Raises
    ------
    FileExistsError
        ``path`` exists (a secret is never overwritten).
    """
    data = secrets.token_hex(32).encode()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data + b"\n")
    return data


def is_loopback(host: str) -> bool:
    """Whether ``host`` names only the loopback interface (127.0.0.0/8, ::1, localhost)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


# ---------------------------------------------------------------------------- TLS
def server_ssl(cert: str, key: str, ca: str = "") -> ssl.SSLContext:
    """A member's listening context: its certificate; with ``ca``, every connecting side
    must present a certificate that ``ca`` signed (mutual authentication). The system's
    CAs are never trusted."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)      # no system CAs: ``ca`` alone decides
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_cert_chain(cert, key)
    if ca:
        ctx.load_verify_locations(ca)
        ctx.verify_mode = ssl.CERT_REQUIRED
    return ctx


def client_ssl(cert: str = "", key: str = "", ca: str = "") -> ssl.SSLContext:
    """A connecting side's context: it checks the member's certificate against ``ca``
    (without ``ca``: encryption only, no check) and presents ``cert`` when given. Host
    names are not checked: the CA identifies the cluster, and the system's CAs are never
    trusted."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)      # no system CAs: ``ca`` alone decides
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.check_hostname = False
    if ca:
        ctx.load_verify_locations(ca)
    else:
        ctx.verify_mode = ssl.CERT_NONE
    if cert:
        ctx.load_cert_chain(cert, key)
    return ctx


# ---------------------------------------------------------------------------- handshake
def _mac(secret: bytes, label: bytes, name: str, role: str, member: int, n_open: bytes,
         n_listen: bytes) -> bytes:
    transcript = msgpack.packb([name, role, member, n_open, n_listen], use_bin_type=True)
    return hmac.new(secret, label + transcript, hashlib.sha256).digest()


async def _read(reader: asyncio.StreamReader, tag: str) -> tuple[Any, ...]:
    obj = await wire.read_frame(reader, wire.AUTH_FRAME, _AUTH_READ)
    if obj is None:
        raise AuthError("bad_handshake", "the connection closed during the handshake")
    f = wire.parse(obj)
    if f[0] == "error":
        raise AuthError(str(f[2]), str(f[3]))
    if f[0] != tag:
        raise AuthError("bad_handshake", f"expected a {tag!r} frame, got {f[0]!r}")
    return f


async def offer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, *, secret: bytes,
                cluster_name: str, role: str, member: int = -1) -> None:
    """The opening side's handshake; returns once the listener proved the secret (the
    proof for the listener is written, and frames may follow at once).

    Raises
    ------
    AuthError
        The listener refused (wrong cluster name or secret), or could not prove it holds
        the secret.
    wire.WireError
        The listener sent a malformed frame.
    """
    n_open = secrets.token_bytes(32)
    writer.write(wire.frame("auth", cluster_name, role, member, n_open))
    f = await _read(reader, "challenge")
    n_listen, their = f[1], f[2]
    if not hmac.compare_digest(their, _mac(secret, _LABEL_LISTENER, cluster_name, role, member,
                                           n_open, n_listen)):
        raise AuthError("auth_failed", "the member did not prove the cluster secret "
                                       "(another cluster, or another secret)")
    writer.write(wire.frame("proof", _mac(secret, _LABEL_OPENER, cluster_name, role, member,
                                          n_open, n_listen)))


async def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, *, secret: bytes,
                 cluster_name: str) -> tuple[str, int]:
    """The listening side's handshake; the opener's role and member id (-1 for a client).

    Raises
    ------
    AuthError
        Another cluster name, a wrong proof (the opener does not hold the secret, or
        replayed a recorded handshake), or a frame other than the handshake's.
    wire.WireError
        A malformed frame.
    """
    f = await _read(reader, "auth")
    name, role, member, n_open = f[1], f[2], f[3], f[4]
    if name != cluster_name:
        raise AuthError("cluster_name", f"this member is in cluster {cluster_name!r}, "
                                        f"not {name[:80]!r}")
    if role not in ROLES or (role == "peer") != (member >= 0):
        raise AuthError("bad_handshake", f"role {role[:20]!r} with member id {member}")
    n_listen = secrets.token_bytes(32)
    writer.write(wire.frame("challenge", n_listen, _mac(secret, _LABEL_LISTENER, name, role,
                                                         member, n_open, n_listen)))
    f = await _read(reader, "proof")
    if not hmac.compare_digest(f[1], _mac(secret, _LABEL_OPENER, name, role, member, n_open,
                                          n_listen)):
        raise AuthError("auth_failed", "wrong proof of the cluster secret")
    return role, member


def _recv_frame(sock: socket.socket, limit: int) -> list[Any] | None:
    buf = b""
    need = 4
    for _ in range(2):                       # the length prefix, then the body
        while len(buf) < need:               # bounded: each recv has the socket's timeout
            chunk = sock.recv(need - len(buf))
            if not chunk:
                return None
            buf += chunk
        if need == 4:
            (n,) = struct.unpack(">I", buf)
            if not 1 <= n <= limit:
                raise wire.WireError(f"frame: length {n} outside 1..{limit}")
            need = 4 + n
    return wire.unpack(buf[4:])


def connect_socket(address: tuple[str, int], *, secret: bytes = b"",
                   cluster_name: str = "hzfast", role: str = "client", member: int = -1,
                   timeout: float = 10.0, ssl_context: ssl.SSLContext | None = None
                   ) -> socket.socket:
    """A blocking socket to a member, authenticated (tools, tests, debugging): frames
    written to it after this are read as a ``role`` connection's.

    Raises
    ------
    AuthError
        The member refused the handshake, or did not prove the secret.
    OSError
        No connection.
    """
    sock = socket.create_connection(address, timeout=timeout)
    try:
        if ssl_context is not None:
            sock = ssl_context.wrap_socket(sock)
        n_open = secrets.token_bytes(32)
        sock.sendall(wire.frame("auth", cluster_name, role, member, n_open))
        obj = _recv_frame(sock, wire.CONTROL_FRAME)
        if obj is None:
            raise AuthError("bad_handshake", "the member closed the connection")
        f = wire.parse(obj)
        if f[0] == "error":
            raise AuthError(str(f[2]), str(f[3]))
        if f[0] != "challenge" or not hmac.compare_digest(
                f[2], _mac(secret, _LABEL_LISTENER, cluster_name, role, member, n_open, f[1])):
            raise AuthError("auth_failed", "the member did not prove the cluster secret")
        sock.sendall(wire.frame("proof", _mac(secret, _LABEL_OPENER, cluster_name, role,
                                              member, n_open, f[1])))
    except BaseException:
        sock.close()
        raise
    return sock
