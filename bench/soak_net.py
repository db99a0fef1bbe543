"""The soak's hosts: Linux network namespaces on one bridge, made and removed with iproute2.

Every name starts with ``evsk`` (namespaces ``evsk-<host>``, the bridge ``evsk-br``, each
host's veth ``evsk-<host>`` on the bridge side and ``eth0`` inside), so the leftovers of a
soak that died outright are found by name and removed by the next one. The hosts have no
default route: from inside a namespace only the bridge's subnet and the namespace's own
loopback are reachable, never another address.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

PREFIX = "evsk"
BRIDGE = f"{PREFIX}-br"
DEFAULT_SUBNET = "10.213.7.0/24"
# Host name -> last octet of its address; the bridge (the soak itself) is .1.
HOSTS = {"db": 10, "mock": 20, "w1": 31, "w2": 32, "w3": 33, "web": 40}
# One folder per soak (run-<pid>); main() refuses it unless it is root's own folder.
STATE_ROOT = Path("/tmp/evalsite-soak")  # noqa: S108


class NetError(RuntimeError):
    pass


def ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run(["ip", *args], capture_output=True, text=True)
    if check and done.returncode != 0:
        raise NetError(f"ip {' '.join(args)}: {done.stderr.strip()}")
    return done


def namespaces_possible() -> str | None:
    """Why namespaces cannot be made here, or None."""
    if os.geteuid() != 0:
        return "the soak needs root (ip netns, veth pairs, a bridge)"
    if shutil.which("ip") is None:
        return "iproute2's `ip` is not installed"
    probe = f"{PREFIX}-probe{os.getpid()}"
    made = ip("netns", "add", probe, check=False)
    ip("netns", "del", probe, check=False)
    if made.returncode != 0:
        return f"cannot make a network namespace: {made.stderr.strip()}"
    return None


def subnet_in_use(subnet: ipaddress.IPv4Network) -> str | None:
    """What on this machine already uses an address in `subnet` (an interface's address or
    a route), or None. Our own leftovers are removed before this is asked."""
    addrs = json.loads(ip("-j", "addr").stdout or "[]")
    for link in addrs:
        for info in link.get("addr_info", []):
            if info.get("family") != "inet":
                continue
            net = ipaddress.ip_network(f"{info['local']}/{info['prefixlen']}", strict=False)
            if net.overlaps(subnet):
                return f"{link['ifname']} has {info['local']}/{info['prefixlen']}"
    for route in json.loads(ip("-j", "route").stdout or "[]"):
        dst = route.get("dst", "")
        if not dst or dst == "default":
            continue  # the default route reaches our subnet only where nothing closer does
        if ipaddress.ip_network(dst if "/" in dst else f"{dst}/32").overlaps(subnet):
            return f"a route to {dst} via {route.get('dev', '?')}"
    return None


def remove_leftovers() -> list[str]:
    """Remove every `evsk` namespace (killing what runs in it), link and the state folders of
    soaks that are no longer running; what was removed."""
    removed = []
    for name in ip("netns", "list").stdout.split():
        if name.startswith(f"{PREFIX}-"):
            kill_namespace(name)
            ip("netns", "del", name, check=False)
            removed.append(f"namespace {name}")
    for link in json.loads(ip("-j", "link").stdout or "[]"):
        name = link.get("ifname", "")
        if name.startswith(f"{PREFIX}-"):
            ip("link", "del", name, check=False)
            removed.append(f"link {name}")
    if STATE_ROOT.is_dir():
        for folder in STATE_ROOT.glob("run-*"):
            pid = int(folder.name.removeprefix("run-") or 0)
            if not _alive(pid):
                shutil.rmtree(folder, ignore_errors=True)
                removed.append(f"folder {folder}")
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return pid > 0


def namespace_pids(name: str) -> list[int]:
    done = ip("netns", "pids", name, check=False)
    return [int(pid) for pid in done.stdout.split() if pid.isdigit()]


def kill_namespace(name: str, sig: int = signal.SIGKILL, wait_s: float = 5.0) -> int:
    """Send `sig` to every process in namespace `name` (until none is left, for SIGKILL);
    how many got it."""
    hit = 0
    deadline = time.monotonic() + wait_s
    while True:
        pids = namespace_pids(name)
        if not pids:
            return hit
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
                hit += 1
        if sig != signal.SIGKILL or time.monotonic() > deadline:
            return hit
        time.sleep(0.1)


@dataclass
class Network:
    subnet: ipaddress.IPv4Network
    made: list[str] = field(default_factory=list)

    def address(self, host: str) -> str:
        return str(self.subnet.network_address + HOSTS[host])

    @property
    def gateway(self) -> str:
        return str(self.subnet.network_address + 1)

    def namespace(self, host: str) -> str:
        return f"{PREFIX}-{host}"

    def veth(self, host: str) -> str:
        return f"{PREFIX}-{host}"

    def up(self) -> None:
        """The bridge, then a namespace per host with its veth on the bridge."""
        prefix = self.subnet.prefixlen
        ip("link", "add", BRIDGE, "type", "bridge")
        self.made.append(BRIDGE)
        ip("addr", "add", f"{self.gateway}/{prefix}", "dev", BRIDGE)
        ip("link", "set", BRIDGE, "up")
        for host in HOSTS:
            ns, veth = self.namespace(host), self.veth(host)
            ip("netns", "add", ns)
            self.made.append(ns)
            ip("link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns)
            ip("link", "set", veth, "master", BRIDGE)
            ip("link", "set", veth, "up")
            ip("-n", ns, "addr", "add", f"{self.address(host)}/{prefix}", "dev", "eth0")
            ip("-n", ns, "link", "set", "eth0", "up")
            ip("-n", ns, "link", "set", "lo", "up")

    def cut(self, host: str) -> None:
        """The host's link down: its packets are dropped, its connections hang (no reset)."""
        ip("link", "set", self.veth(host), "down")

    def mend(self, host: str) -> None:
        ip("link", "set", self.veth(host), "up")

    def exec_argv(self, host: str, argv: list[str]) -> list[str]:
        return ["ip", "netns", "exec", self.namespace(host), *argv]

    def down(self) -> None:
        """Kill everything in our namespaces and remove them and the bridge."""
        for host in HOSTS:
            ns = self.namespace(host)
            kill_namespace(ns)
            ip("netns", "del", ns, check=False)
            ip("link", "del", self.veth(host), check=False)
        ip("link", "del", BRIDGE, check=False)
        self.made.clear()
