"""subnetd_client.Client: the common calls of subnetd's gRPC API, typed.

One Client holds one gRPC channel (to the unix socket or a TCP address) and
turns each call into a method: paged lists become iterators over every page,
the LFT stream one ForwardingTable, WatchEvents an EventStream, and a failed
call an Error carrying its gRPC status code. Answers are the generated
messages (subnetd_client.pb), whose fields schema/subnet/v1/subnet.proto
documents. A Client may be shared by threads (gRPC channels are
thread-safe); an EventStream belongs to one reader.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Iterable, Iterator, Optional, Tuple, Union

import grpc

from ._gen.subnet.v1 import subnet_pb2 as pb
from ._gen.subnet.v1 import subnet_pb2_grpc as pb_grpc

# As subnetctl: --socket defaults to $SUBNETD_SOCKET, else this.
DEFAULT_SOCKET = "/run/subnetd/subnetd.sock"
DEFAULT_TIMEOUT = 30.0  # seconds per call, as subnetctl --timeout
MAX_PAGE_SIZE = 1000  # the daemon refuses larger pages (INVALID_ARGUMENT)
DROP = 255  # an LFT entry that drops the packet

# A node (or port) as the methods take it: a string read as subnetctl reads
# it (see node_ref), a NodeRef, or a Node from nodes() (by its GUID).
NodeLike = Union[str, pb.NodeRef, pb.Node]
# A node type filter: "switch", "ca", "router", or a pb.NODE_TYPE_* value.
NodeTypeLike = Union[str, int]

_NODE_TYPES = {"switch": pb.NODE_TYPE_SWITCH, "ca": pb.NODE_TYPE_CA,
               "router": pb.NODE_TYPE_ROUTER}


class Error(Exception):
    """A call to subnetd failed.

    `code` is the gRPC status code (grpc.StatusCode.NOT_FOUND, ...; the
    header of subnet.proto says what each means), `details` the daemon's
    message (for INVALID_ARGUMENT it starts with the offending field, e.g.
    "page_size: 5000 is above the maximum 1000"), `method` the RPC's name.
    """

    def __init__(self, method: str, code: grpc.StatusCode, details: str, target: str = ""):
        where = f" (subnetd at {target})" if code == grpc.StatusCode.UNAVAILABLE and target else ""
        super().__init__(f"{method}: {code.name}: {details}{where}")
        self.method = method
        self.code = code
        self.details = details


def by_guid(guid: int, port: int = 0) -> pb.NodeRef:
    """A node (or one of its ports) by node GUID, or a port by port GUID."""
    return pb.NodeRef(guid=guid, port=port)


def by_lid(lid: int) -> pb.NodeRef:
    """The port that owns a LID (a CA port, or a switch's port 0)."""
    return pb.NodeRef(lid=lid)


def by_name(name: str, port: int = 0) -> pb.NodeRef:
    """A node by its description, exactly as Node.name has it."""
    return pb.NodeRef(name=name, port=port)


def node_ref(node: NodeLike) -> pb.NodeRef:
    """The NodeRef for a node given the way the methods accept it.

    A string is read as subnetctl reads a node: "0x..." a node or port GUID,
    decimal digits a LID, "guid:", "lid:" or "name:" to say which, anything
    else a name. A Node (from nodes()) is taken by its GUID. An int is
    refused: it could be a GUID or a LID; use by_guid() or by_lid().
    """
    if isinstance(node, pb.NodeRef):
        return node
    if isinstance(node, pb.Node):
        return by_guid(node.guid)
    if isinstance(node, int):
        raise TypeError(f"{node}: an int could be a GUID or a LID; "
                        "pass by_guid(x) or by_lid(x)")
    if not isinstance(node, str):
        raise TypeError(f"a node is a str, NodeRef or Node, not {type(node).__name__}")
    if not node:
        raise ValueError("empty node name")
    if node.startswith("guid:"):
        return by_guid(_parse_guid(node[5:], node))
    if node.startswith("lid:"):
        return by_lid(_parse_lid(node[4:], node))
    if node.startswith("name:"):
        if len(node) == 5:
            raise ValueError('"name:": empty name')
        return by_name(node[5:])
    if node[:2] in ("0x", "0X") and len(node) > 2:
        return by_guid(_parse_guid(node, node))
    if node.isascii() and node.isdigit():
        return by_lid(_parse_lid(node, node))
    return by_name(node)


def _parse_guid(text: str, word: str) -> int:
    digits = text[2:] if text[:2] in ("0x", "0X") else text
    try:
        ok = 0 < len(digits) <= 16 and digits.isascii() and digits.isalnum()
        guid = int(digits, 16) if ok else 0
    except ValueError:
        guid = 0
    if guid == 0:
        raise ValueError(f'"{word}": a GUID is 1 to 16 hex digits and not zero')
    return guid


def _parse_lid(text: str, word: str) -> int:
    lid = int(text) if text.isascii() and text.isdigit() else 0
    if not 0 < lid <= 0xFFFFFF:
        raise ValueError(f'"{word}": a LID is a decimal number from 1 to 16777215')
    return lid


def _node_type(node_type: Optional[NodeTypeLike]) -> int:
    if node_type is None:
        return pb.NODE_TYPE_UNSPECIFIED
    if isinstance(node_type, str):
        if node_type not in _NODE_TYPES:
            raise ValueError(f"node type {node_type!r}: one of {', '.join(_NODE_TYPES)}")
        return _NODE_TYPES[node_type]
    return int(node_type)


def read_token(path: Union[str, os.PathLike]) -> str:
    """The bearer token in a file, as subnetctl --token-file reads it:
    the content without surrounding white space, printable, no spaces."""
    with open(path, encoding="ascii", errors="replace") as f:
        token = f.read().strip()
    if not token:
        raise ValueError(f"token file {os.fspath(path)}: empty")
    if not all("!" <= c <= "~" for c in token):
        raise ValueError(f"token file {os.fspath(path)}: the token contains a space or a "
                         "non-printable character")
    return token


@dataclass(frozen=True)
class ForwardingTable:
    """A switch's linear forwarding table, its blocks joined.

    `ports[lid]` is the output port for `lid`, 0 <= lid <= linear_fdb_top:
    0 is the switch itself, DROP (255) drops the packet. Every block came
    from the snapshot `generation`.
    """

    switch_guid: int
    linear_fdb_top: int
    generation: int
    ports: bytes

    def port(self, lid: int) -> int:
        """The output port for a LID; DROP above linear_fdb_top."""
        return self.ports[lid] if 0 <= lid < len(self.ports) else DROP


class EventStream(Iterator[pb.Event]):
    """WatchEvents as an iterator of pb.Event, oldest first.

    close() (or leaving a `with` block) cancels the stream; iteration ends
    when the daemon ends the stream (it is stopping) or, for a stream that
    does not follow, after the newest event the status reported. A failure
    raises Error.
    """

    def __init__(self, call: Optional[grpc.Call], until_id: Optional[int], kinds: frozenset,
                 target: str):
        self._call = call  # None: nothing to read
        self._until_id = until_id
        self._kinds = kinds
        self._target = target
        self._done = call is None

    def __next__(self) -> pb.Event:
        while not self._done:
            try:
                event = next(self._call)
            except StopIteration:
                self._done = True
                break
            except grpc.RpcError as e:
                self._done = True
                raise Error("WatchEvents", e.code(), e.details() or "", self._target) from e
            if self._until_id is not None and event.id >= self._until_id:
                self.close()
            if not self._kinds or event.kind in self._kinds:
                return event
        raise StopIteration

    def close(self) -> None:
        """Cancels the stream (the daemon sees the client leave)."""
        self._done = True
        if self._call is not None:
            self._call.cancel()

    def __enter__(self) -> "EventStream":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Client:
    """A connection to subnetd: `Client()` (the unix socket from
    $SUBNETD_SOCKET, else /run/subnetd/subnetd.sock), `Client("/path/sock")`,
    or `Client(addr="host:port", token_file=..., tls_ca=...)` over TCP.

    The channel connects lazily: building a Client touches no network, and
    an unreachable daemon shows as Error(UNAVAILABLE) on the first call.

    Authorisation: over the unix socket the daemon trusts whoever it let
    connect (root, its own user, members of api.socket_group); over TCP the
    mutating calls (sweep, set_port_state, the sim_* calls) need the bearer
    token of `token_file`. The token goes with every call, so the daemon
    also counts this client's reads as trusted for its call limits; use TLS
    (`tls_ca`, the CA bundle that signed the daemon's certificate) when it
    crosses a network.

    `timeout` (seconds) bounds every call; each method takes `timeout=` to
    override it for that call. Use as a context manager, or call close().
    The raw stubs are `sm` (pb_grpc.SubnetManagerStub) and `simulator`
    (pb_grpc.SimulatorStub) on the same channel; pass `metadata=client.metadata`
    to carry the token.
    """

    def __init__(self, socket: Optional[str] = None, *, addr: Optional[str] = None,
                 token_file: Union[str, os.PathLike, None] = None,
                 tls_ca: Union[str, os.PathLike, None] = None,
                 timeout: float = DEFAULT_TIMEOUT) -> None:
        if socket and addr:
            raise ValueError("give either socket or addr, not both")
        if tls_ca and not addr:
            raise ValueError("tls_ca is for TCP connections (addr)")
        # Files first: nothing to close when one cannot be read.
        self.metadata: Tuple[Tuple[str, str], ...] = ()
        if token_file is not None:
            self.metadata = (("authorization", "Bearer " + read_token(token_file)),)
        if addr:
            self.target = addr
            if tls_ca:
                with open(tls_ca, "rb") as f:
                    creds = grpc.ssl_channel_credentials(root_certificates=f.read())
                self.channel = grpc.secure_channel(addr, creds)
            else:
                self.channel = grpc.insecure_channel(addr)
        else:
            path = socket or os.environ.get("SUBNETD_SOCKET") or DEFAULT_SOCKET
            self.target = "unix:" + os.path.abspath(path)
            self.channel = grpc.insecure_channel(self.target)
        self.timeout = timeout
        self.sm = pb_grpc.SubnetManagerStub(self.channel)
        self.simulator = pb_grpc.SimulatorStub(self.channel)

    def close(self) -> None:
        self.channel.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- calls --------------------------------------------------------------

    def _call(self, method: str, rpc, request, timeout: Optional[float]):
        try:
            return rpc(request, timeout=self._timeout(timeout), metadata=self.metadata)
        except grpc.RpcError as e:
            raise Error(method, e.code(), e.details() or "", self.target) from e

    def _timeout(self, timeout: Optional[float]) -> float:
        return self.timeout if timeout is None else timeout

    def _pages(self, method: str, rpc, request, field: str, timeout: Optional[float]) -> Iterator:
        # The first page is asked for now, so a bad request fails at the
        # call; the others as the iterator reaches them.
        page = self._call(method, rpc, request, timeout)

        def items():
            nonlocal page
            while True:
                yield from getattr(page, field)
                if not page.next_page_token:
                    return
                request.page_token = page.next_page_token
                page = self._call(method, rpc, request, timeout)

        return items()

    def status(self, *, timeout: Optional[float] = None) -> pb.GetStatusResponse:
        """GetStatus: SM state, counts, last sweep, verification verdict."""
        return self._call("GetStatus", self.sm.GetStatus, pb.GetStatusRequest(), timeout)

    def nodes(self, node_type: Optional[NodeTypeLike] = None, name_contains: str = "", *,
              page_size: int = MAX_PAGE_SIZE,
              timeout: Optional[float] = None) -> Iterator[pb.Node]:
        """ListNodes, every page: the nodes ordered by GUID, optionally only
        of one type ("switch", "ca", "router") or with `name_contains` in
        their name. The first page is fetched at the call (a bad request
        raises here), the others as the iterator reaches them; paging
        resumes after the last GUID even when a new snapshot comes between
        pages. `timeout` bounds each page's call."""
        request = pb.ListNodesRequest(page_size=page_size, type=_node_type(node_type),
                                      name_contains=name_contains)
        return self._pages("ListNodes", self.sm.ListNodes, request, "nodes", timeout)

    def node(self, node: NodeLike, *, timeout: Optional[float] = None) -> pb.GetNodeResponse:
        """GetNode: one node with its ports and links (Error NOT_FOUND if
        none matches)."""
        return self._call("GetNode", self.sm.GetNode, pb.GetNodeRequest(node=node_ref(node)),
                          timeout)

    def links(self, node: Optional[NodeLike] = None, *, page_size: int = MAX_PAGE_SIZE,
              timeout: Optional[float] = None) -> Iterator[pb.Link]:
        """ListLinks, every page: the cables ordered by (a.node_guid, a.port),
        or only those with an end on `node`."""
        request = pb.ListLinksRequest(page_size=page_size)
        if node is not None:
            request.node.CopyFrom(node_ref(node))
        return self._pages("ListLinks", self.sm.ListLinks, request, "links", timeout)

    def lft(self, switch: NodeLike, *, timeout: Optional[float] = None) -> ForwardingTable:
        """GetForwardingTable: a switch's LFT as the daemon programmed it
        (Error NOT_FOUND for a node that is not a switch, FAILED_PRECONDITION
        before the first routing pass)."""
        request = pb.GetForwardingTableRequest(node=node_ref(switch))
        table = bytearray()
        guid = top = generation = 0
        try:
            for block in self.sm.GetForwardingTable(request, timeout=self._timeout(timeout),
                                                    metadata=self.metadata):
                guid, top, generation = block.switch_guid, block.linear_fdb_top, block.generation
                start = block.block * 64
                if len(table) < start + len(block.ports):
                    table.extend(bytes([DROP]) * (start + len(block.ports) - len(table)))
                table[start:start + len(block.ports)] = block.ports
        except grpc.RpcError as e:
            raise Error("GetForwardingTable", e.code(), e.details() or "", self.target) from e
        return ForwardingTable(switch_guid=guid, linear_fdb_top=top, generation=generation,
                               ports=bytes(table[:top + 1]) if table else b"")

    def trace(self, source: NodeLike, destination: NodeLike, *,
              timeout: Optional[float] = None) -> pb.TracePathResponse:
        """TracePath: the hops from source to destination through the
        programmed tables, as ibtracert prints them. A trace that stops
        early is an answer, not an Error: `complete` is false and `message`
        says where the packet is lost."""
        request = pb.TracePathRequest(source=node_ref(source),
                                      destination=node_ref(destination))
        return self._call("TracePath", self.sm.TracePath, request, timeout)

    def path_record(self, source: NodeLike, destination: NodeLike, *,
                    timeout: Optional[float] = None) -> pb.GetPathRecordResponse:
        """GetPathRecord: the PathRecord the SA answers for the pair (Error
        UNAVAILABLE when the daemon runs without an SA, FAILED_PRECONDITION
        when the tables do not deliver the pair)."""
        request = pb.GetPathRecordRequest(source=node_ref(source),
                                          destination=node_ref(destination))
        return self._call("GetPathRecord", self.sm.GetPathRecord, request, timeout)

    def partitions(self, *, timeout: Optional[float] = None) -> pb.ListPartitionsResponse:
        """ListPartitions: every partition with its member counts (members
        of one: partition_members)."""
        return self._call("ListPartitions", self.sm.ListPartitions,
                          pb.ListPartitionsRequest(), timeout)

    def partition_members(self, pkey: int, *, page_size: int = MAX_PAGE_SIZE,
                          timeout: Optional[float] = None) -> Iterator[pb.PartitionMember]:
        """ListPartitions with `pkey`, every page: the partition's member
        ports by (node GUID, port). Error NOT_FOUND for a P_Key no partition
        has."""
        request = pb.ListPartitionsRequest(pkey=pkey, page_size=page_size)
        return self._pages("ListPartitions", self.sm.ListPartitions, request, "members", timeout)

    def multicast_groups(self, members: bool = False, *,
                         timeout: Optional[float] = None) -> pb.ListMulticastGroupsResponse:
        """ListMulticastGroups: the groups by MLID, with their member ports
        when `members`."""
        return self._call("ListMulticastGroups", self.sm.ListMulticastGroups,
                          pb.ListMulticastGroupsRequest(members=members), timeout)

    def events(self, from_id: Optional[int] = None, *, kinds: Iterable[int] = (),
               follow: bool = False, timeout: Optional[float] = None) -> EventStream:
        """WatchEvents: the daemon's events, oldest first.

        Without `follow`: the stored events from `from_id` (default: the
        oldest the daemon keeps) up to the newest at the time of the call;
        the stream then ends. With `follow`: from `from_id` on (default:
        only events after this call), then each new event as it happens,
        with no deadline unless `timeout` is given; the call returns once
        the daemon has subscribed the stream, so an event caused after it
        returns is seen. Resume with from_id = the last id seen + 1.

        `kinds`: only events of these pb.EVENT_KIND_* values.
        """
        kind_set = frozenset(kinds)
        if follow:
            request = pb.WatchEventsRequest(from_event_id=from_id or 0, kinds=sorted(kind_set))
            call = self.sm.WatchEvents(request, timeout=timeout, metadata=self.metadata)
            call.initial_metadata()  # the daemon sends headers once the stream is subscribed
            return EventStream(call, None, frozenset(), self.target)
        newest = self.status(timeout=timeout).last_event_id
        start = from_id or 1
        if newest == 0 or start > newest:
            return EventStream(None, newest, kind_set, self.target)
        # Every kind is asked for and the filter applied here, so the stream
        # ends at the newest event whatever its kind.
        call = self.sm.WatchEvents(pb.WatchEventsRequest(from_event_id=start),
                                   timeout=self._timeout(timeout), metadata=self.metadata)
        return EventStream(call, newest, kind_set, self.target)

    def sweep(self, light: bool = False, *, wait: bool = True, rebalance: bool = False,
              timeout: Optional[float] = None) -> pb.TriggerSweepResponse:
        """TriggerSweep (mutating): a heavy sweep, or a light one (every
        switch's SwitchInfo; a heavy sweep at once if a port changed). With
        `rebalance` (heavy only) the sweep routes afresh: layered routes
        that failures left repaired in their layers are re-balanced, and
        LIDs may change SL. With `wait`, returns when it has finished, with
        its summary: check `.sweep.outcome` (a failed sweep is an answer,
        not an Error)."""
        request = pb.TriggerSweepRequest(
            kind=pb.SWEEP_KIND_LIGHT if light else pb.SWEEP_KIND_HEAVY, wait=wait,
            rebalance=rebalance)
        return self._call("TriggerSweep", self.sm.TriggerSweep, request, timeout)

    def verify(self, read_back: bool = False, *,
               timeout: Optional[float] = None) -> pb.VerifyRoutingResponse:
        """VerifyRouting: re-runs the verifier over the programmed tables
        (and with `read_back` compares them with what the switches hold).
        A verdict other than VERDICT_OK is an answer, not an Error."""
        return self._call("VerifyRouting", self.sm.VerifyRouting,
                          pb.VerifyRoutingRequest(read_back=read_back), timeout)

    def set_port_state(self, node: NodeLike, port: int, *, enabled: bool,
                       timeout: Optional[float] = None) -> pb.SetPortStateResponse:
        """SetPortState (mutating): disables or re-enables a switch port;
        routing is repaired around it as for a failed link."""
        request = pb.SetPortStateRequest(
            node=node_ref(node), port=port,
            state=pb.PORT_ADMIN_STATE_ENABLED if enabled else pb.PORT_ADMIN_STATE_DISABLED)
        return self._call("SetPortState", self.sm.SetPortState, request, timeout)

    # --- the embedded simulator (FAILED_PRECONDITION on real hardware) ------

    def sim_set_link_state(self, node: NodeLike, port: int, *, up: bool,
                           timeout: Optional[float] = None) -> pb.SetLinkStateResponse:
        """Simulator.SetLinkState (mutating): pulls the cable on (node, port)
        or plugs it back in."""
        request = pb.SetLinkStateRequest(node=node_ref(node), port=port,
                                         state=pb.SIM_STATE_UP if up else pb.SIM_STATE_DOWN)
        return self._call("SetLinkState", self.simulator.SetLinkState, request, timeout)

    def sim_set_switch_state(self, switch: NodeLike, *, up: bool,
                             timeout: Optional[float] = None) -> pb.SetSwitchStateResponse:
        """Simulator.SetSwitchState (mutating): powers a switch off or on."""
        request = pb.SetSwitchStateRequest(node=node_ref(switch),
                                           state=pb.SIM_STATE_UP if up else pb.SIM_STATE_DOWN)
        return self._call("SetSwitchState", self.simulator.SetSwitchState, request, timeout)

    def sim_stats(self, *, timeout: Optional[float] = None) -> pb.GetStatsResponse:
        """Simulator.GetStats: the simulator's packet counters."""
        return self._call("GetStats", self.simulator.GetStats, pb.GetStatsRequest(), timeout)
