"""Which bucket a client address is counted in, for throttling and refusal counts. Pure."""

from __future__ import annotations

import ipaddress

UNKNOWN = "unknown"


def client_bucket(client: str) -> str:
    """The address itself, or for IPv6 its /64: one host is routinely handed a whole /64, so
    counting single IPv6 addresses would let a caller step around any per-client limit. Text
    that is no address is one bucket, so it cannot escape limits either."""
    try:
        address = ipaddress.ip_address(client)
    except ValueError:
        return UNKNOWN
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return str(ipaddress.IPv6Network((address, 64), strict=False))
    return str(address)
