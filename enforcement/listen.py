"""The agent's listen address: its default and its parser.

Shared by the agent (:mod:`enforcement.agent`) and the preflight
(:mod:`rapier_app.doctor`), which must not import a console-script module.
"""

from __future__ import annotations

from typing import Tuple

#: Where the agent listens unless ``--listen`` says otherwise (a Unix socket, 0600).
DEFAULT_LISTEN = "unix:/run/rapier-agent/agent.sock"

def parse_listen(text: str) -> Tuple[str, object]:
    """Parse ``--listen``: ``HOST:PORT`` -> ("tcp", (host, port)); ``unix:PATH`` -> ("unix", path).

    Raises:
        ValueError: malformed address or port outside 0..65535 (message names ``listen``).
    """
    if text.startswith("unix:"):
        path = text[5:]
        if not path:
            raise ValueError("listen: unix: needs a socket path")
        return "unix", path
    host, sep, port = text.rpartition(":")
    if not sep or not host:
        raise ValueError(f"listen: expected HOST:PORT or unix:PATH, got {text!r}")
    try:
        p = int(port)
    except ValueError:
        raise ValueError(f"listen: port is not an integer: {port!r}") from None
    if not 0 <= p <= 65535:
        raise ValueError(f"listen: port must be in 0..65535, got {p}")
    return "tcp", (host.strip("[]"), p)
