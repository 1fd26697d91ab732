"""Who may reach a pool's SSH port: this client's own public address, as an echo service sees it.

A cloud whose machines sit behind a firewall (AWS's security group, GCP's firewall rule) opens
the SSH port to the client alone. The client rarely knows its public address (NAT), so it asks a
service that answers with the caller's address and nothing else (AWS's `checkip`, the default).
When that fails, a provider may open the port to anyone (`ANYWHERE`), saying so loudly: logins
stay key-only and host keys pinned, but the port is open to the internet's scanners.
"""

from __future__ import annotations

import ipaddress
import urllib.request

from skyward.errors import ProvisionError

#: The echo service asked by default: it answers with the caller's address alone.
IP_LOOKUP_URL = "https://checkip.amazonaws.com"
#: How long the lookup may take before the provider falls back.
IP_LOOKUP_TIMEOUT = 10.0
ANYWHERE = "0.0.0.0/0"


def client_cidr(url: str = IP_LOOKUP_URL, timeout: float = IP_LOOKUP_TIMEOUT) -> str:
    """This client's public address as a one-address range (`/32`, or `/128` for IPv6), as the
    echo service at `url` sees it. Raises `ProvisionError` saying why when it cannot tell."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as answer:  # noqa: S310 - http(s) only: config
            text = answer.read(256).decode("ascii", errors="replace").strip()
        address = ipaddress.ip_address(text)
    except (OSError, ValueError) as exc:
        raise ProvisionError(f"could not learn this client's public address from {url}: {exc}") from None
    return f"{address}/{address.max_prefixlen}"
