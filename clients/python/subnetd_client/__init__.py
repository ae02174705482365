"""subnetd_client: the Python client of subnetd's gRPC API (subnet.v1).

    import subnetd_client
    with subnetd_client.Client() as c:          # $SUBNETD_SOCKET, else /run/subnetd/subnetd.sock
        print(c.status().nodes)
        for node in c.nodes("switch"):
            print(f"{node.guid:#018x} {node.name}")

`Client` wraps the common calls (client.py); `Error` is what a failed call
raises (its `code` is the grpc.StatusCode). `pb` and `pb_grpc` are the raw
messages and stubs generated from schema/subnet/v1/subnet.proto, for
everything else:

    from subnetd_client import pb, pb_grpc
    stub = pb_grpc.SubnetManagerStub(c.channel)
    stub.GetStatus(pb.GetStatusRequest(), timeout=10, metadata=c.metadata)
"""

from ._gen.subnet.v1 import subnet_pb2 as pb
from ._gen.subnet.v1 import subnet_pb2_grpc as pb_grpc
from .client import (DEFAULT_SOCKET, DEFAULT_TIMEOUT, DROP, Client, Error, EventStream,
                     ForwardingTable, NodeLike, NodeTypeLike, by_guid, by_lid, by_name,
                     node_ref, read_token)

__all__ = [
    "Client", "Error", "EventStream", "ForwardingTable", "NodeLike", "NodeTypeLike",
    "DEFAULT_SOCKET", "DEFAULT_TIMEOUT", "DROP",
    "by_guid", "by_lid", "by_name", "node_ref", "read_token", "pb", "pb_grpc",
]
