"""A TCP proxy that can pause: the load test's way to freeze PostgreSQL for one process.

``python -m lab.benchmark.tcpproxy --listen PORT --target HOST:PORT``: forwards every
connection to the target. ``SIGUSR1`` pauses: bytes in both directions are held (not
dropped) and new connections are accepted but not connected on, as when the database
server hangs; ``SIGUSR2`` resumes and delivers what was held. The gateway under test
points its ``DATABASE_URL`` here, so pausing it never touches anyone else's connections.
"""

from __future__ import annotations

import argparse
import asyncio
import signal


class PausableProxy:
    """Forwards ``listen`` to ``target``; ``pause()`` holds every byte until ``resume()``."""

    def __init__(self, target_host: str, target_port: int) -> None:
        self.target = (target_host, target_port)
        self.running = asyncio.Event()
        self.running.set()
        self.connections = 0
        self.held_reads = 0  # reads that arrived while paused (for tests and logs)
        self.server: asyncio.AbstractServer | None = None

    @property
    def paused(self) -> bool:
        return not self.running.is_set()

    def pause(self) -> None:
        self.running.clear()

    def resume(self) -> None:
        self.running.set()

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> int:
        """Listen and return the bound port."""
        self.server = await asyncio.start_server(self._serve, host, port)
        return self.server.sockets[0].getsockname()[1]

    async def close(self) -> None:
        if self.server is not None:
            self.server.close()
            await self.server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            await self.running.wait()
            up_reader, up_writer = await asyncio.open_connection(*self.target)
        except OSError:
            writer.close()
            return
        await asyncio.gather(self._pipe(reader, up_writer), self._pipe(up_reader, writer))

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                if self.paused:
                    self.held_reads += 1
                    await self.running.wait()
                writer.write(data)
                await writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            writer.close()


async def _main(args: argparse.Namespace) -> None:
    host, port = args.target.rsplit(":", 1)
    proxy = PausableProxy(host, int(port))
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGUSR1, proxy.pause)
    loop.add_signal_handler(signal.SIGUSR2, proxy.resume)
    stop = asyncio.Event()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    bound = await proxy.start("127.0.0.1", args.listen)
    print(f"listening on 127.0.0.1:{bound}", flush=True)
    await stop.wait()
    await proxy.close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m lab.benchmark.tcpproxy")
    parser.add_argument("--listen", type=int, required=True, help="port on 127.0.0.1")
    parser.add_argument("--target", required=True, help="HOST:PORT")
    asyncio.run(_main(parser.parse_args(argv)))


if __name__ == "__main__":
    main()
