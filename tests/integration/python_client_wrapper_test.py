#!/usr/bin/python3
"""subnetd_client.Client against a live subnetd: every wrapper call, real values.

usage: python_client_wrapper_test.py --socket PATH --addr HOST:PORT --token-file FILE
                                     --switches N --cas N [--installed VERSION]

Run by run_with_subnetd.py --tcp (the daemon listens on the unix socket and
on TCP with a bearer token; $SUBNETD_SOCKET names the socket). With
--installed, the package must be the installed one of that version (from the
interpreter's site-packages, not the source tree): python_client_install_test.py
runs it so with a venv's python after `pip install ./clients/python`.
Exits 0 when every check passes, 1 with the failed checks listed otherwise.
"""

import argparse
import importlib.metadata
import os
import sys
import sysconfig

import grpc
import subnetd_client
from subnetd_client import Client, Error, pb, pb_grpc

TIMEOUT = 10  # seconds per call
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print(f"FAIL: {what}")
    return cond


def expect_error(code, fn, field=None):
    """Calls fn; checks it raises subnetd_client.Error with `code` (and a
    message starting with `field:`). Returns the Error, or None."""
    try:
        fn()
    except Error as e:
        ok = check(e.code == code, f"expected {code.name}, got {e}")
        if ok and field:
            check(e.details.startswith(field + ":"), f"error should name {field}: {e.details}")
        check(e.method and str(e).startswith(e.method + ": " + e.code.name),
              f"the error names its method and code: {e}")
        return e
    check(False, f"expected {code.name}, the call succeeded")
    return None


def check_installed(version):
    """The package is the installed one: from site-packages, with its typing
    files and the version of its metadata."""
    where = os.path.dirname(os.path.abspath(subnetd_client.__file__))
    site = os.path.abspath(sysconfig.get_paths()["purelib"])
    check(where == os.path.join(site, "subnetd_client"),
          f"subnetd_client imported from {where}, not the installed {site}")
    for f in ("py.typed", "_gen/subnet/v1/subnet_pb2.pyi", "_gen/subnet/v1/subnet_pb2_grpc.py"):
        check(os.path.isfile(os.path.join(where, f)), f"installed package has {f}")
    try:
        got = importlib.metadata.version("subnetd-client")
    except importlib.metadata.PackageNotFoundError:
        got = None
    check(got == version, f"subnetd-client {got} installed, the project is {version}")
    print(f"installed: subnetd-client {got} in {where}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--socket", required=True)
    ap.add_argument("--addr", required=True)
    ap.add_argument("--token-file", required=True)
    ap.add_argument("--switches", type=int, required=True, help="switches in the fabric")
    ap.add_argument("--cas", type=int, required=True, help="CAs in the fabric")
    ap.add_argument("--installed", metavar="VERSION",
                    help="the package must be installed, of this version")
    a = ap.parse_args()
    if a.installed:
        check_installed(a.installed)

    # The socket from $SUBNETD_SOCKET, as Client() finds it.
    check(os.environ.get("SUBNETD_SOCKET") == a.socket, "run with SUBNETD_SOCKET set")
    c = Client(timeout=TIMEOUT)
    check(c.target == "unix:" + os.path.abspath(a.socket), f"default target {c.target}")

    # Status: the fabric's real counts.
    st = c.status()
    check(st.state == pb.SM_STATE_MASTER, f"state {pb.SmState.Name(st.state)}")
    check(st.switches == a.switches and st.cas == a.cas,
          f"{st.switches} switches and {st.cas} CAs, expected {a.switches} and {a.cas}")
    check(st.nodes == a.switches + a.cas, f"{st.nodes} nodes")
    check(st.verdict == pb.VERDICT_OK, f"verdict {pb.Verdict.Name(st.verdict)}")
    print(f"status: {st.switches} switches, {st.cas} CAs, {st.links} links, "
          f"generation {st.generation}")

    # nodes(): every page, filters.
    nodes = list(c.nodes(page_size=7))
    guids = [n.guid for n in nodes]
    check(len(nodes) == st.nodes, f"nodes(page_size=7): {len(nodes)} of {st.nodes}")
    check(guids == sorted(set(guids)), "nodes ordered by GUID, no repeats")
    switches = list(c.nodes("switch", page_size=5))
    cas = list(c.nodes(pb.NODE_TYPE_CA))
    check(len(switches) == a.switches and all(n.type == pb.NODE_TYPE_SWITCH for n in switches),
          f"nodes('switch'): {len(switches)}")
    check(len(cas) == a.cas and all(n.type == pb.NODE_TYPE_CA for n in cas),
          f"nodes(NODE_TYPE_CA): {len(cas)}")
    named = list(c.nodes(name_contains=switches[0].name))
    check([n.guid for n in named] == [switches[0].guid], f"name_contains {switches[0].name}")

    # node(): by name, by Node, by GUID and LID strings.
    sw = switches[0]
    detail = c.node(sw.name)
    check(detail.node.guid == sw.guid, "node(name)")
    check(len(detail.ports) == sw.num_ports + 1 and detail.ports[0].number == 0,
          "a switch has port 0 and its ports")
    for ref in (sw, f"{sw.guid:#018x}", str(sw.lid), subnetd_client.by_lid(sw.lid)):
        check(c.node(ref).node.guid == sw.guid, f"node({ref!r})")

    # links(): all, and those of one switch.
    links = list(c.links(page_size=9))
    check(len(links) == st.links, f"links(): {len(links)} of {st.links}")
    mine = list(c.links(sw.name))
    connected = [p for p in detail.ports if p.connected]
    check(len(mine) == len(connected) and
          all(sw.guid in (l.a.node_guid, l.b.node_guid) for l in mine),
          f"links({sw.name}): {len(mine)}, the switch has {len(connected)} cabled ports")

    # trace() between the first and the last CA, checked against lft() of
    # every switch on the way: the hops follow the tables the daemon reports.
    src, dst = cas[0], cas[-1]
    tr = c.trace(src.name, dst)
    check(tr.complete, f"trace complete: {tr.message}")
    check(tr.hops[0].node_guid == src.guid and tr.hops[-1].node_guid == dst.guid,
          "the trace reaches its destination")
    check(tr.destination_lid == dst.lid, "destination LID")
    hops = tr.hops[1:-1]
    check(hops and all(h.node_type == pb.NODE_TYPE_SWITCH for h in hops), "switches in between")
    for h in hops:
        table = c.lft(subnetd_client.by_guid(h.node_guid))
        check(table.switch_guid == h.node_guid, "lft() names its switch")
        check(table.port(dst.lid) == h.out_port,
              f"{h.node_name}: lft port {table.port(dst.lid)} for LID {dst.lid}, "
              f"the trace leaves by {h.out_port}")
    print(f"trace {src.name} -> {dst.name}: " +
          " -> ".join(f"{h.node_name}[{h.in_port}>{h.out_port}]" for h in tr.hops))

    # lft() of every switch: each CA's LID forwarded, the switch's own to 0.
    top_lid = max(n.lid for n in nodes)
    for s in switches:
        table = c.lft(s)
        check(table.linear_fdb_top >= top_lid and len(table.ports) == table.linear_fdb_top + 1,
              f"{s.name}: linear_fdb_top {table.linear_fdb_top}, highest LID {top_lid}")
        check(table.port(s.lid) == 0, f"{s.name}: its own LID goes to port 0")
        unrouted = [n.lid for n in cas if not 1 <= table.port(n.lid) <= s.num_ports]
        check(not unrouted, f"{s.name}: CA LIDs without a port: {unrouted[:5]}")

    # path_record(): the SA's answer for the same pair.
    pr = c.path_record(src, dst.name).path
    check(pr.slid == src.lid and pr.dlid == dst.lid, f"path record LIDs {pr.slid} -> {pr.dlid}")
    check(pr.switch_hops == len(hops), f"path record {pr.switch_hops} switch hops, "
                                       f"the trace {len(hops)}")
    check(pr.mtu >= 256 and pr.rate_gbps > 0, f"path record MTU {pr.mtu}, {pr.rate_gbps} Gb/s")

    # partitions(): the default partition holds every endport.
    parts = {p.pkey: p for p in c.partitions().partitions}
    default = parts.get(0x7FFF)
    if check(default is not None, f"default partition in {sorted(parts)}"):
        members = list(c.partition_members(0x7FFF, page_size=5))
        check(len(members) == default.full_members + default.limited_members == st.nodes,
              f"{len(members)} members of 0x7fff, counts {default.full_members}"
              f"+{default.limited_members}, {st.nodes} nodes")
    groups = c.multicast_groups(members=True).groups
    check(any(g.well_known for g in groups), "the IPoIB broadcast group exists")

    # verify().
    v = c.verify()
    check(v.verdict == pb.VERDICT_OK and v.switches == a.switches and v.pairs_checked > 0,
          f"verify: {pb.Verdict.Name(v.verdict)}, {v.switches} switches, {v.message}")

    # events(): the stored ones, then a followed heavy sweep.
    st = c.status()
    stored = list(c.events())
    ids = [e.id for e in stored]
    check(ids and ids == sorted(set(ids)) and ids[-1] == st.last_event_id,
          f"events(): ids {ids[:3]}..{ids[-1:]} end at {st.last_event_id}")
    sweeps = list(c.events(kinds=[pb.EVENT_KIND_SWEEP]))
    check(sweeps and all(e.kind == pb.EVENT_KIND_SWEEP for e in sweeps),
          f"events(kinds=[SWEEP]): {len(sweeps)}, all sweeps")
    check(list(c.events(st.last_event_id + 1)) == [], "nothing after the newest")
    with c.events(follow=True, kinds=[pb.EVENT_KIND_SWEEP], timeout=TIMEOUT) as follow:
        r = c.sweep()
        check(r.sweep.kind == pb.SWEEP_KIND_HEAVY and r.sweep.outcome == pb.SWEEP_OUTCOME_OK
              and r.sweep.nodes == st.nodes, f"sweep(): {r.sweep}")
        e = next(follow, None)
        check(e is not None and e.kind == pb.EVENT_KIND_SWEEP and e.id > st.last_event_id,
              f"the followed stream saw the sweep: {e}")
    r = c.sweep(light=True)
    check(r.sweep.outcome == pb.SWEEP_OUTCOME_OK, f"sweep(light=True): {r.sweep}")
    r = c.sweep(rebalance=True)
    check(r.sweep.kind == pb.SWEEP_KIND_HEAVY and r.sweep.outcome == pb.SWEEP_OUTCOME_OK,
          f"sweep(rebalance=True): {r.sweep}")
    expect_error(grpc.StatusCode.INVALID_ARGUMENT, lambda: c.sweep(light=True, rebalance=True))

    # A cable between switches pulled in the simulator: the far end named,
    # a LINK_DOWN event, and the trace still reaching its destination.
    isl = next(l for l in links if l.a.node_type == pb.NODE_TYPE_SWITCH
               and l.b.node_type == pb.NODE_TYPE_SWITCH)
    last = c.status().last_event_id
    with c.events(last + 1, follow=True, kinds=[pb.EVENT_KIND_LINK_DOWN],
                  timeout=20) as follow:
        cut = c.sim_set_link_state(isl.a.node_name, isl.a.port, up=False)
        check(cut.peer.node_guid == isl.b.node_guid and cut.peer.port == isl.b.port,
              f"sim_set_link_state names the far end: {cut.peer}")
        e = next(follow, None)
        check(e is not None and e.kind == pb.EVENT_KIND_LINK_DOWN, f"a LINK_DOWN event: {e}")
    tr = c.trace(src, dst)
    check(tr.complete and tr.hops[-1].node_guid == dst.guid,
          f"after the cut the trace reaches {dst.name}: {tr.message}")
    check(c.sim_set_link_state(isl.a.node_name, isl.a.port, up=True).peer.node_guid
          == isl.b.node_guid, "link back up")
    check(c.sim_stats().smps_handled > 0, "sim_stats counts SMPs")

    # Errors: the gRPC code, and for INVALID_ARGUMENT the field.
    expect_error(grpc.StatusCode.NOT_FOUND, lambda: c.node("no-such-node"))
    expect_error(grpc.StatusCode.NOT_FOUND, lambda: c.lft(src))
    expect_error(grpc.StatusCode.INVALID_ARGUMENT, lambda: c.nodes(page_size=5000),
                 field="page_size")
    expect_error(grpc.StatusCode.INVALID_ARGUMENT, lambda: c.trace(pb.NodeRef(), dst),
                 field="source")
    try:
        c.node(sw.guid)
        check(False, "an int node is refused (GUID or LID?)")
    except TypeError:
        pass
    e = expect_error(grpc.StatusCode.UNAVAILABLE,
                     lambda: Client(os.path.join(os.path.dirname(a.socket), "nothing.sock"),
                                    timeout=TIMEOUT).status())
    check(e is None or "nothing.sock" in str(e), f"UNAVAILABLE names the socket: {e}")

    # TCP: reads need no token, mutating calls do.
    with Client(addr=a.addr, timeout=TIMEOUT) as anonymous:
        check(anonymous.status().nodes == st.nodes, "TCP status without a token")
        expect_error(grpc.StatusCode.PERMISSION_DENIED, lambda: anonymous.sweep(light=True))
    with Client(addr=a.addr, token_file=a.token_file, timeout=TIMEOUT) as trusted:
        r = trusted.sweep(light=True)
        check(r.sweep.outcome == pb.SWEEP_OUTCOME_OK, f"TCP sweep with the token: {r.sweep}")
        # The raw stubs on the wrapper's channel, with its token.
        raw = pb_grpc.SubnetManagerStub(trusted.channel).GetStatus(
            pb.GetStatusRequest(), timeout=TIMEOUT, metadata=trusted.metadata)
        check(raw.nodes == st.nodes, "raw stub on the client's channel")
    wrong = os.path.join(os.path.dirname(a.socket), "wrong-token")
    with open(os.open(wrong, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
        f.write("0123456789abcdef0123456789abcdef\n")
    with Client(addr=a.addr, token_file=wrong, timeout=TIMEOUT) as impostor:
        expect_error(grpc.StatusCode.PERMISSION_DENIED, lambda: impostor.sweep(light=True))

    c.close()
    if failures:
        print(f"{len(failures)} check(s) failed")
        return 1
    print("python client wrapper: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
