"""What a process tree listens on, read from ``/proc`` (Linux): what ``ss -ltnup`` shows.

``listening(process_tree(os.getpid()))`` is every TCP socket listening and every UDP
socket bound by this process and its descendants, as (pid, local address): the tests
and ``bench/hostile.py`` use it to show that a local Ray started by sleuth binds
loopback only.
"""

from __future__ import annotations

import ipaddress
import os

__all__ = ["listening", "process_tree"]

#: /proc/net tables and the state of a listening (TCP) or bound (UDP) socket in them.
_TABLES = (("tcp", "0A"), ("tcp6", "0A"), ("udp", "07"), ("udp6", "07"))


def process_tree(root: int) -> set[int]:
    """``root`` and every process descended from it."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as handle:
                parent = int(handle.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue  # gone meanwhile
        children.setdefault(parent, []).append(int(entry))
    found, todo = {root}, [root]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def listening(pids: set[int]) -> list[tuple[int, str]]:
    """(pid, local address) of every listening TCP and bound UDP socket of ``pids``."""
    owners: dict[str, int] = {}
    for pid in pids:
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
                if target.startswith("socket:["):
                    owners[target[8:-1]] = pid
        except OSError:
            continue  # gone, or not ours to read
    found = []
    for table, state in _TABLES:
        try:
            with open(f"/proc/net/{table}", encoding="ascii") as handle:
                rows = handle.read().splitlines()[1:]
        except OSError:
            continue  # no IPv6 here
        for row in rows:
            cols = row.split()
            if cols[3] == state and cols[9] in owners:
                found.append((owners[cols[9]], _address(cols[1])))
    return found


def _address(hex_address: str) -> str:
    """A /proc/net address (little-endian words of hex) as text, IPv4-mapped unwrapped."""
    raw = bytes.fromhex(hex_address.split(":")[0])
    if len(raw) == 4:
        return str(ipaddress.IPv4Address(raw[::-1]))
    words = b"".join(raw[i : i + 4][::-1] for i in range(0, 16, 4))
    address = ipaddress.IPv6Address(words)
    return str(address.ipv4_mapped or address)
