"""What an admin-defined endpoint may name: the variable its key comes from and its base URL.

Staff type both into the admin. Without rules, an endpoint could send any of the server's
variables (``ANTHROPIC_API_KEY``) to any host, the cloud metadata service included. The
Endpoint model's ``clean()`` shows these messages on the admin's fields, and building a
provider checks again, so a row written around the admin cannot leak a key either.

Loopback and private addresses stay allowed: teams run model servers (vLLM, Ollama) on the
same machine or network. Host names are not resolved: a name that resolves to a link-local
address is not caught here.
"""

from __future__ import annotations

import contextlib
import ipaddress
import re
import socket
from urllib.parse import urlsplit

KEY_VARIABLE = re.compile(r"EVALSITE_ENDPOINT_[A-Z0-9_]+_KEY")
KEY_VARIABLE_EXAMPLE = "EVALSITE_ENDPOINT_<NAME>_KEY"
# Cloud instance-metadata services by name (GCP, AWS, Tencent); the link-local addresses
# most of them answer on (169.254.169.254, fd00:ec2::254 aside) are refused as link-local.
METADATA_HOSTS = frozenset(
    {
        "metadata",
        "metadata.google.internal",
        "metadata.goog",
        "instance-data",
        "instance-data.ec2.internal",
        "metadata.tencentyun.com",
    }
)
METADATA_ADDRESSES = frozenset(
    {ipaddress.ip_address("100.100.100.200"), ipaddress.ip_address("fd00:ec2::254")}
)  # Alibaba Cloud; AWS over IPv6


def key_variable_problem(name: str) -> str | None:
    """Why `name` may not hold an endpoint's key, or None: blank (no key) or a name like
    EVALSITE_ENDPOINT_<NAME>_KEY."""
    if not name or KEY_VARIABLE.fullmatch(name):
        return None
    return (
        f"{name} is not an endpoint key variable: endpoint keys come only from variables "
        f"named {KEY_VARIABLE_EXAMPLE} (leave it blank for a server without a key)"
    )


def base_url_problem(url: str) -> str | None:
    """Why requests (and the endpoint's key) may not go to `url`, or None: it must be http
    or https with a host, and the host may not be link-local or a cloud metadata service."""
    scheme = url.strip().partition(":")[0].lower()
    if scheme not in {"http", "https"}:
        return f"{url} is not an http:// or https:// URL"
    if _host(url) == "":
        return f"{url} has no host"
    return host_problem(url)


def host_problem(url: str) -> str | None:
    """Why `url`'s host may not receive requests, or None. The check at use: a URL that is
    not http(s) is refused by the HTTP client itself, with its own message."""
    host = _host(url)
    if host is None:
        return f"{url} is not a valid URL"
    if host in METADATA_HOSTS:
        return f"{host} is a cloud metadata service, not a model server"
    address = _address(host)
    if address is not None and (address.is_link_local or address in METADATA_ADDRESSES):
        return f"{host} is a link-local or metadata address, not a model server"
    return None


def _host(url: str) -> str | None:
    """The host of `url`, lower-case, without brackets or a final dot; None if unparsable."""
    try:
        return (urlsplit(url.strip()).hostname or "").rstrip(".")
    except ValueError:  # e.g. an unbalanced "["
        return None


def _address(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """The address `host` spells, in any form the resolver accepts (2852039166 and
    0xa9fea9fe are 169.254.169.254); None for a name."""
    with contextlib.suppress(ValueError):
        address = ipaddress.ip_address(host)
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped:
            return address.ipv4_mapped
        return address
    if re.fullmatch(r"[0-9a-fx.]+", host):
        with contextlib.suppress(OSError):
            return ipaddress.ip_address(socket.inet_aton(host))
    return None
