#!/usr/bin/python3
"""A non-C++ client of subnetd: reads status, nodes and a path over gRPC.

usage: PYTHONPATH=clients/python /usr/bin/python3 python_client_test.py SOCKET

Uses only the raw stubs of the Python client package (subnetd_client.pb and
.pb_grpc, generated from schema/subnet/v1/subnet.proto and checked in) and
Debian's python3-grpcio, as a client that needs more than the wrapper does;
python_client_wrapper_test.py tests the wrapper. Exits 0 when every check
passes, 1 with the failed checks listed otherwise.
"""

import sys

import grpc
from subnetd_client import pb, pb_grpc

TIMEOUT = 10  # seconds per call
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print(f"FAIL: {what}")
    return cond


def expect_error(code, fn, field=None):
    try:
        fn()
    except grpc.RpcError as e:
        ok = check(e.code() == code, f"expected {code.name}, got {e.code().name}: {e.details()}")
        if ok and field:
            check(e.details().startswith(field + ":"), f"error should name {field}: {e.details()}")
        return
    check(False, f"expected {code.name}, the call succeeded")


def list_all_nodes(sm, **filters):
    nodes, token, pages = [], "", 0
    while True:
        r = sm.ListNodes(pb.ListNodesRequest(page_size=7, page_token=token, **filters),
                         timeout=TIMEOUT)
        nodes.extend(r.nodes)
        pages += 1
        token = r.next_page_token
        if not token:
            return nodes, r.total_size, pages


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    channel = grpc.insecure_channel("unix:" + sys.argv[1])
    grpc.channel_ready_future(channel).result(timeout=TIMEOUT)
    sm = pb_grpc.SubnetManagerStub(channel)

    # Status.
    st = sm.GetStatus(pb.GetStatusRequest(), timeout=TIMEOUT)
    check(st.state == pb.SM_STATE_MASTER, f"state {pb.SmState.Name(st.state)}")
    check(st.switches > 0 and st.cas > 0, f"{st.switches} switches, {st.cas} CAs")
    check(st.nodes == st.switches + st.cas + st.routers, "nodes = switches + CAs + routers")
    check(st.lids >= st.nodes, f"{st.lids} LIDs for {st.nodes} nodes")
    check(st.verdict == pb.VERDICT_OK, f"verdict {pb.Verdict.Name(st.verdict)}: {st.verdict_message}")
    check(st.generation > 0, "generation > 0")
    print(f"status: {pb.SmState.Name(st.state)}, {st.switches} switches, {st.cas} CAs, "
          f"{st.links} links, engine {st.routing_engine}, generation {st.generation}")

    # Nodes, paged.
    nodes, total, pages = list_all_nodes(sm)
    guids = [n.guid for n in nodes]
    check(len(nodes) == st.nodes == total, f"{len(nodes)} nodes listed, status says {st.nodes}")
    check(guids == sorted(guids) and len(set(guids)) == len(guids), "ordered by GUID, no repeats")
    check(pages == (len(nodes) + 6) // 7, f"{pages} pages of 7")
    switches, _, _ = list_all_nodes(sm, type=pb.NODE_TYPE_SWITCH)
    check(len(switches) == st.switches, "type filter")
    check(all(n.lid != 0 for n in nodes), "every node has a LID")
    print(f"nodes: {len(nodes)} in {pages} pages")

    # One switch in detail.
    sw = sm.GetNode(pb.GetNodeRequest(node=pb.NodeRef(name=switches[0].name)), timeout=TIMEOUT)
    check(sw.node.guid == switches[0].guid, "GetNode by name")
    check(len(sw.ports) == sw.node.num_ports + 1 and sw.ports[0].number == 0,
          "a switch lists port 0 and its ports")
    check(all(l.a.node_guid == sw.node.guid for l in sw.links), "links start at the node")

    # A path between the first and the last CA, by name and by LID.
    cas = [n for n in nodes if n.type == pb.NODE_TYPE_CA]
    src, dst = cas[0], cas[-1]
    tr = sm.TracePath(pb.TracePathRequest(source=pb.NodeRef(name=src.name),
                                          destination=pb.NodeRef(lid=dst.lid)), timeout=TIMEOUT)
    check(tr.complete, f"trace complete: {tr.message}")
    check(tr.destination_lid == dst.lid, "destination LID")
    check(tr.hops[0].node_guid == src.guid and tr.hops[-1].node_guid == dst.guid, "end points")
    check(tr.hops[0].in_port == 0 and tr.hops[-1].out_port == 0, "ends have no in/out port")
    check(all(h.node_type == pb.NODE_TYPE_SWITCH for h in tr.hops[1:-1]), "switches in between")
    check(all(h.in_port > 0 for h in tr.hops[1:]), "every later hop enters by a port")
    print(f"path {src.name} -> {dst.name}: " +
          " -> ".join(f"{h.node_name}[{h.in_port}>{h.out_port}]" for h in tr.hops))

    # Errors a client can rely on.
    expect_error(grpc.StatusCode.NOT_FOUND,
                 lambda: sm.GetNode(pb.GetNodeRequest(node=pb.NodeRef(name="no-such-node")),
                                    timeout=TIMEOUT))
    expect_error(grpc.StatusCode.INVALID_ARGUMENT,
                 lambda: sm.ListNodes(pb.ListNodesRequest(page_size=5000), timeout=TIMEOUT),
                 field="page_size")
    expect_error(grpc.StatusCode.INVALID_ARGUMENT,
                 lambda: sm.TracePath(pb.TracePathRequest(destination=pb.NodeRef(lid=dst.lid)),
                                      timeout=TIMEOUT), field="source")

    # The standard health service, called with raw bytes: HealthCheckRequest{}
    # is empty and HealthCheckResponse{status: SERVING} is 08 01.
    health = channel.unary_unary("/grpc.health.v1.Health/Check")
    check(health(b"", timeout=TIMEOUT) == b"\x08\x01", "health: SERVING")

    channel.close()
    if failures:
        print(f"{len(failures)} check(s) failed")
        return 1
    print("python client: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
