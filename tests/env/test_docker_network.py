"""Where desktop networks go (no engine needed): the host's routes read from the kernel's table,
and subnets of 172.16.0.0/16 chosen clear of them."""

from __future__ import annotations

import ipaddress

from mcpworld.env.docker.network import SUBNETS, free_subnets, host_routes

# /proc/net/route as the kernel writes it (little-endian hex): default via eth0, a LAN 172.16.0.0/20
# on eth1, and a bridge 172.17.0.0/16
ROUTES = """Iface\tDestination\tGateway\tFlags\tRefCnt\tUse\tMetric\tMask\tMTU\tWindow\tIRTT
eth0\t00000000\t010200C0\t0003\t0\t0\t0\t00000000\t0\t0\t0
eth1\t000010AC\t00000000\t0001\t0\t0\t0\t00F0FFFF\t0\t0\t0
docker0\t000011AC\t00000000\t0001\t0\t0\t0\t0000FFFF\t0\t0\t0
"""


def test_the_hosts_routes_are_read_without_the_default(tmp_path):
    table = tmp_path / "route"
    table.write_text(ROUTES)
    assert host_routes(table) == [ipaddress.ip_network("172.16.0.0/20"), ipaddress.ip_network("172.17.0.0/16")]
    assert host_routes(tmp_path / "missing") == []


def test_subnets_are_small_inside_the_range_and_clear_of_the_hosts_routes():
    lan = ipaddress.ip_network("172.16.0.0/20")
    found = free_subnets([lan], tries=5000)
    assert len(found) == 4096 - 256  # every /28 of the /16 but the LAN's
    assert all(s.prefixlen == 28 and s.subnet_of(SUBNETS) and not s.overlaps(lan) for s in found)
    assert free_subnets([SUBNETS]) == []
