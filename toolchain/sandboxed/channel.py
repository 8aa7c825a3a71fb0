"""The channel between the parent and a worker: replies authenticated per request.

The worker reads a key from an inherited pipe before any candidate code exists (`serve.read_key`) and sends
each reply as `{"id", "body", "mac"}` with `mac = HMAC-SHA256(key, id + "\\n" + body)` on a pipe of its own.
The parent (`kernelvault.toolchain.worker_lane.PersistentWorker`) takes a reply for another request, a torn
reply or a wrong MAC as a forged result. Both sides import this module.
"""

from __future__ import annotations

import hashlib
import hmac


def mac(key: bytes, request_id: int, body: str) -> str:
    """The tag of one reply: bound to its request's id, so a reply cannot be replayed for another."""
    return hmac.new(key, f"{request_id}\n{body}".encode(), hashlib.sha256).hexdigest()
