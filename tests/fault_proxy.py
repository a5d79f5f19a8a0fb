"""A TCP proxy on 127.0.0.1 that a test controls, for putting a dependency (PostgreSQL, Redis) behind a bad
network: `pass` forwards both ways, `swallow` keeps every connection open but forwards nothing (a silent
network: packets neither answered nor refused), `reset()` aborts the live connections with RST.

One selector thread; bounded by the test (stop() joins it).
"""
from __future__ import annotations

import selectors
import socket
import struct
import threading


class FaultProxy:
    def __init__(self, target_port: int, target_host: str = "127.0.0.1"):
        self.target = (target_host, target_port)
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(128)
        self.listener.setblocking(False)
        self.port = self.listener.getsockname()[1]
        self.mode = "pass"
        self.accepted = 0
        self._pairs: dict[socket.socket, socket.socket] = {}
        self._lock = threading.Lock()
        self._sel = selectors.DefaultSelector()
        self._sel.register(self.listener, selectors.EVENT_READ)
        self._wake_r, self._wake_w = socket.socketpair()
        self._sel.register(self._wake_r, selectors.EVENT_READ)
        self._running = True
        self._reset_requested = False
        self._thread = threading.Thread(target=self._loop, name="fault-proxy", daemon=True)
        self._thread.start()

    # -- control ---------------------------------------------------------------------------------------------

    def url(self, database: str = "test", schema: str | None = None) -> str:
        url = f"postgresql://127.0.0.1:{self.port}/{database}"
        return url + (f"?options=-csearch_path%3D{schema}" if schema else "")

    def set_mode(self, mode: str) -> None:
        assert mode in ("pass", "swallow")
        self.mode = mode
        self._wake()

    def reset(self) -> None:
        """Abort every live connection (RST to both sides); new connections are served as the mode says."""
        self._reset_requested = True
        self._wake()
        for _ in range(200):
            if not self._reset_requested:
                return
            threading.Event().wait(0.01)

    def stop(self) -> None:
        self._running = False
        self._wake()
        self._thread.join(5)
        for s in list(self._pairs):
            s.close()
        self.listener.close()

    def _wake(self) -> None:
        try:
            self._wake_w.send(b"x")
        except OSError:
            pass

    # -- loop ------------------------------------------------------------------------------------------------

    def _close_pair(self, s: socket.socket, abort: bool = False) -> None:
        other = self._pairs.pop(s, None)
        for sock in (s, other):
            if sock is None:
                continue
            self._pairs.pop(sock, None)
            try:
                self._sel.unregister(sock)
            except (KeyError, ValueError):
                pass
            if abort:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            sock.close()

    def _loop(self) -> None:
        while self._running:
            if self._reset_requested:
                for s in list(self._pairs):
                    if s in self._pairs:
                        self._close_pair(s, abort=True)
                self._reset_requested = False
            for key, _ in self._sel.select(0.2):
                s = key.fileobj
                if s is self._wake_r:
                    self._wake_r.recv(4096)
                elif s is self.listener:
                    try:
                        client, _ = self.listener.accept()
                    except OSError:
                        continue
                    self.accepted += 1
                    try:
                        upstream = socket.create_connection(self.target, timeout=2)
                    except OSError:
                        client.close()
                        continue
                    for sock in (client, upstream):
                        sock.settimeout(5)  # reads only when readable; a write waits for a full buffer
                        self._sel.register(sock, selectors.EVENT_READ)
                    self._pairs[client], self._pairs[upstream] = upstream, client
                elif s in self._pairs:
                    try:
                        data = s.recv(65536)
                    except OSError:
                        data = b""
                    if not data:
                        self._close_pair(s)
                        continue
                    if self.mode == "swallow":
                        continue  # read and dropped: the other side waits for an answer that never comes
                    try:
                        self._pairs[s].sendall(data)
                    except OSError:
                        self._close_pair(s)
