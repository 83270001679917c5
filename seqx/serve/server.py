"""Where a `Service` listens: `tcp://HOST:PORT` (Home Assistant's Wyoming integration), `unix://PATH`
or `stdio://` (a Rhasspy 3 pipeline starts the program and talks over its stdin/stdout).

Each connection has a thread of its own; decoding is one at a time (`Service.decode` is wrapped in a
lock): a 2-core machine gains nothing from two at once, and a bundle's model is not shared safely.
"""

from __future__ import annotations

import socketserver
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO
from urllib.parse import urlparse

from seqx.errors import SeqxError
from seqx.serve.service import Connection, Service
from seqx.serve.wyoming import ProtocolError, read_event, write_event

DEFAULT_URI = "tcp://127.0.0.1:10300"  # Wyoming's speech-to-text port, as wyoming-faster-whisper's
Log = Callable[[dict[str, Any]], None]


def converse(service: Service, reader: BinaryIO, writer: BinaryIO, on_result: Log | None = None,
             on_problem: Callable[[str], None] | None = None) -> None:
    """Answer one client's events until it hangs up. Bytes that are not Wyoming end the connection
    with an `error` event (the stream cannot be followed past them); a bad event only gets one."""
    connection = Connection(service, on_result=on_result)
    while True:
        try:
            event = read_event(reader)
        except ProtocolError as err:
            if on_problem is not None:
                on_problem(str(err))
            write_event(writer, "error", {"text": str(err), "code": "bad-event"})
            return
        if event is None:
            return
        for kind, data in connection.handle(event):
            if kind == "error" and on_problem is not None:
                on_problem(data["text"])
            write_event(writer, kind, data)


def one_at_a_time(service: Service) -> Service:
    """The service with its decoding behind a lock (connections run in threads)."""
    lock, decode = threading.Lock(), service.decode

    def locked(waves: list) -> list:
        with lock:
            return list(decode(waves))

    service.decode = locked
    return service


class _Handler(socketserver.StreamRequestHandler):
    server: _Server

    def handle(self) -> None:
        try:
            converse(self.server.service, self.rfile, self.wfile, self.server.on_result, self.server.on_problem)
        except (ConnectionError, BrokenPipeError):
            pass  # the client went away mid-answer: nothing to tell it


class _Server:
    service: Service
    on_result: Log | None
    on_problem: Callable[[str], None] | None


class _TcpServer(socketserver.ThreadingTCPServer, _Server):
    daemon_threads, allow_reuse_address = True, True


class _UnixServer(socketserver.ThreadingUnixStreamServer, _Server):
    daemon_threads = True


def open_server(uri: str, service: Service, on_result: Log | None = None,
                on_problem: Callable[[str], None] | None = None) -> socketserver.BaseServer | None:
    """A bound server for `tcp://` or `unix://` (call its `serve_forever`), or None for `stdio://`
    (then call `converse` on stdin/stdout). A bad URI or a port in use is one error line."""
    parsed = urlparse(uri)
    service = one_at_a_time(service)
    if parsed.scheme == "stdio":
        return None
    try:
        if parsed.scheme == "tcp":
            if parsed.port is None:
                raise SeqxError(f"{uri}: a tcp:// address needs a port (tcp://0.0.0.0:10300)")
            server: Any = _TcpServer((parsed.hostname or "0.0.0.0", parsed.port), _Handler)
        elif parsed.scheme == "unix":
            path = Path(parsed.netloc + parsed.path)
            if path.is_socket():
                path.unlink()  # a socket left by a server that did not close it
            server = _UnixServer(str(path), _Handler)
        else:
            raise SeqxError(f"{uri}: expected tcp://HOST:PORT, unix://PATH or stdio://")
    except OSError as err:
        raise SeqxError(f"{uri}: cannot listen there ({err.strerror or err})") from None
    server.service, server.on_result, server.on_problem = service, on_result, on_problem
    return server


def bound_uri(server: socketserver.BaseServer, uri: str) -> str:
    """The address clients use, with the port the system gave for `:0`."""
    if isinstance(server, socketserver.TCPServer) and not isinstance(server, _UnixServer):
        host, port = server.server_address[:2]
        return f"tcp://{host}:{port}"
    return uri


def serve_stdio(service: Service, on_result: Log | None = None, on_problem: Callable[[str], None] | None = None) -> None:
    converse(service, sys.stdin.buffer, sys.stdout.buffer, on_result, on_problem)
