"""Run one member in this process until it is stopped (``hzfast node``).

When the member listens, one JSON line goes to standard output (``{"event": "ready",
"member": id, "host": ..., "port": ..., "pid": ...}``) so that whoever started the
process learns its address; SIGTERM and SIGINT stop it cleanly.
"""
from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import sys

from hzfast.node.runtime import Member, Settings

__all__ = ["serve"]


def serve(settings: Settings, *, log_level: str = "WARNING") -> int:
    """Run a member until a signal stops it or the cluster removes it.

    Returns
    -------
    int
        0 when stopped by a signal, 3 when removed from the cluster, 2 when it could not
        start (port taken, join refused).
    """
    logging.basicConfig(level=log_level, stream=sys.stderr,
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")
    return asyncio.run(_main(settings))


async def _main(settings: Settings) -> int:
    member = Member(settings)
    try:
        await member.start()
    except (OSError, ConnectionError) as exc:
        print(f"hzfast node: error: {exc}", file=sys.stderr, flush=True)
        return 2
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, member.stop, f"signal {sig.name}")
    print(json.dumps({"event": "ready", "member": member.me, "host": settings.host,
                      "port": member.port, "pid": os.getpid()}), flush=True)
    reason = await member.wait_stopped()
    return 3 if reason.startswith("removed") else 0
