"""Reaching the Hugging Face Hub: one quick probe before any Hub work, so an offline machine gets one
line at once instead of half a minute of retries and an httpx traceback."""

from __future__ import annotations

import socket
import urllib.parse
import urllib.request


class HubUnreachable(OSError):
    """The Hub cannot be contacted; the message is one line saying why."""


def check_reachable(endpoint: str | None = None, timeout: float = 5.0) -> None:
    """Raise :class:`HubUnreachable` unless a TCP connection to the Hub (or the https proxy in the
    environment) can be opened; offline mode (``HF_HUB_OFFLINE``) counts as unreachable."""
    import huggingface_hub.constants as hc

    endpoint = endpoint or hc.ENDPOINT
    if hc.HF_HUB_OFFLINE:
        raise HubUnreachable(f"HF_HUB_OFFLINE is set, so {endpoint} is not contacted (unset it to go online)")
    proxy = urllib.request.getproxies().get("https")
    target = urllib.parse.urlsplit(proxy or endpoint)
    host = target.hostname or ""
    port = target.port or (443 if target.scheme == "https" else 80)
    what = f"the https proxy {host}" if proxy else host
    try:
        socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise HubUnreachable(
            f"cannot reach {what}: name lookup failed ({exc.args[-1]}); is this machine offline?"
        ) from None
    try:
        socket.create_connection((host, port), timeout=timeout).close()
    except OSError as exc:
        raise HubUnreachable(f"cannot reach {what}:{port}: {exc.strerror or exc}") from None
