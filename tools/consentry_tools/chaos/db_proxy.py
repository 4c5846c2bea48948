"""A TCP proxy on the loopback between the chaos servers and PostgreSQL, through which a trial
takes the database away from them without touching the database server: ``cut`` closes every
connection at once (transactions in flight, the pool's idle connections, the ``LISTEN``
connection), ``outage`` does that and refuses every new connection for a while (a database
restarting or failing over, a network partition). The chaos run's own reads go to the database
directly, so they see what was stored, not the outage.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass

from sqlalchemy.engine import make_url

__all__ = ["DatabaseProxy", "OutageRecord", "start_proxy"]

_CHUNK = 65536


@dataclass(frozen=True)
class OutageRecord:
    server: str
    """Always ``database`` (every replica loses it at once)."""
    after_ticks: int
    open_requests: int
    """Client requests open when the connections were cut."""
    seconds: float
    """How long new connections were refused (0: a cut, connections may come back at once)."""
    connections_cut: int


class DatabaseProxy:
    def __init__(self, target_host: str, target_port: int) -> None:
        self._target = (target_host, target_port)
        self._server: asyncio.Server | None = None
        self._pairs: set[tuple[asyncio.StreamWriter, asyncio.StreamWriter]] = set()
        self._refusing_until = 0.0
        self.port = 0

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    def url_for(self, database_url: str) -> str:
        """``database_url`` with its host and port this proxy's."""
        url = make_url(database_url).set(host="127.0.0.1", port=self.port)
        return url.render_as_string(hide_password=False)

    def cut(self) -> int:
        """Close every proxied connection, both ways, at once; how many were open."""
        pairs, self._pairs = self._pairs, set()
        for client, upstream in pairs:
            for writer in (client, upstream):
                with contextlib.suppress(Exception):
                    writer.transport.abort()
        return len(pairs)

    def refuse_for(self, seconds: float) -> None:
        """Close each new connection at once for ``seconds`` (cutting those open is ``cut``)."""
        self._refusing_until = time.monotonic() + seconds

    async def aclose(self) -> None:
        self.cut()
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if time.monotonic() < self._refusing_until:
            writer.transport.abort()
            return
        try:
            up_reader, up_writer = await asyncio.open_connection(*self._target)
        except OSError:
            writer.transport.abort()
            return
        pair = (writer, up_writer)
        self._pairs.add(pair)
        try:
            await asyncio.gather(_pump(reader, up_writer), _pump(up_reader, writer))
        finally:
            self._pairs.discard(pair)
            for each in pair:
                each.transport.abort()


async def _pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(ConnectionError, OSError):
        while data := await reader.read(_CHUNK):
            writer.write(data)
            await writer.drain()
    writer.transport.abort()


async def start_proxy(database_url: str) -> DatabaseProxy:
    url = make_url(database_url)
    proxy = DatabaseProxy(url.host or "127.0.0.1", url.port or 5432)
    await proxy.start()
    return proxy
