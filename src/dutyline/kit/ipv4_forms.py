"""IPv4 addresses in the forms C's inet_aton accepts besides four plain decimals.

The system resolver, curl and browsers read `0177.0.0.1`, `127.000.000.001`, `2130706433` and
`0x7f.1` all as 127.0.0.1, while Python's `ipaddress` refuses them and httpx rejects some of
them outright; the outbound guard reads them here, the one way, and refuses them."""

from __future__ import annotations

import ipaddress
import re


class NotAnAddress(ValueError):
    """A host that ends in a number (so it is no name) but is no IPv4 address."""


_IPV4_PART = re.compile(r"^(?:0[xX][0-9a-fA-F]*|[0-9]+)$")


def legacy_ipv4(host: str) -> ipaddress.IPv4Address | None:
    """The address C's inet_aton (and so the system resolver, curl and browsers) reads in a
    host that ends in a number: octal (`0177.0.0.1`), zero-padded (`127.000.000.001`), one
    integer (`2130706433`), hex (`0x7f.1`), or fewer than four parts. None for a host that
    is not numeric; NotAnAddress for one that is numeric but no address."""
    labels = host.rstrip(".").split(".")
    if not labels or not _IPV4_PART.match(labels[-1]):
        return None  # a name (the URL standard's "ends in a number" test)
    if len(labels) > 4 or not all(_IPV4_PART.match(label) for label in labels):
        raise NotAnAddress(host)
    values = []
    for label in labels:
        if label[:2].lower() == "0x":
            values.append(int(label[2:] or "0", 16))
        elif len(label) > 1 and label.startswith("0"):
            if any(c in "89" for c in label):
                raise NotAnAddress(host)
            values.append(int(label, 8))
        else:
            values.append(int(label))
    *head, last = values
    if any(v > 255 for v in head) or last >= 256 ** (5 - len(values)):
        raise NotAnAddress(host)
    number = last
    for i, v in enumerate(head):
        number += v << (8 * (3 - i))
    return ipaddress.IPv4Address(number)
