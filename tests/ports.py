"""Ports for the servers and workers tests start, that two pytest-xdist workers can never both
be handed: each worker takes them from a block of its own below the kernel's ephemeral range
(where the ports of outgoing connections come from), checking that each is free."""

import itertools
import os
import socket

FIRST, BLOCK = 20_000, 500  # worker gwN: ports 20000 + 500 N onwards
_next = itertools.count()


def free_port() -> int:
    """A port of this worker's block that nothing listens on now."""
    worker = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw") or 0)
    for _ in range(BLOCK):
        port = FIRST + worker * BLOCK + next(_next) % BLOCK
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue  # taken by something else: the next one
        return port
    raise RuntimeError(f"no free port in worker {worker}'s block of {BLOCK}")


def free_ports(count: int) -> list:
    return [free_port() for _ in range(count)]


def host_address() -> str:
    """This machine's own address on its network (not loopback): what a compiled job may name
    for a server its steps reach, as a cluster's would be (compile refuses loopback). The
    address the kernel would send from (no packet is sent)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("10.254.254.254", 9))  # private: routed by the default route, if any
            address = s.getsockname()[0]
        except OSError:
            address = ""
    if not address or address.startswith("127."):
        raise RuntimeError(
            "this machine has no network address but loopback, which a compiled job may not "
            "name: the launch tests need one (any interface that is up)"
        )
    return address
