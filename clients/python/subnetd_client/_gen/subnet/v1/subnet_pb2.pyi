from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

CABLING_FINDING_KIND_DESCRIPTION_MISMATCH: CablingFindingKind
CABLING_FINDING_KIND_DUPLICATE_GUID: CablingFindingKind
CABLING_FINDING_KIND_MISSING_CABLE: CablingFindingKind
CABLING_FINDING_KIND_MISSING_NODE: CablingFindingKind
CABLING_FINDING_KIND_MISWIRED: CablingFindingKind
CABLING_FINDING_KIND_NODE_MISMATCH: CablingFindingKind
CABLING_FINDING_KIND_SPEED_BELOW: CablingFindingKind
CABLING_FINDING_KIND_SWAPPED: CablingFindingKind
CABLING_FINDING_KIND_UNEXPECTED_CABLE: CablingFindingKind
CABLING_FINDING_KIND_UNEXPECTED_NODE: CablingFindingKind
CABLING_FINDING_KIND_UNSPECIFIED: CablingFindingKind
CABLING_FINDING_KIND_WIDTH_BELOW: CablingFindingKind
DESCRIPTOR: _descriptor.FileDescriptor
EVENT_KIND_CABLING: EventKind
EVENT_KIND_CONFIG_RELOAD: EventKind
EVENT_KIND_COUNTERS: EventKind
EVENT_KIND_ERROR: EventKind
EVENT_KIND_FAILOVER: EventKind
EVENT_KIND_LINK_DOWN: EventKind
EVENT_KIND_LINK_UP: EventKind
EVENT_KIND_MULTICAST: EventKind
EVENT_KIND_PORT_DISABLE: EventKind
EVENT_KIND_PORT_ENABLE: EventKind
EVENT_KIND_PORT_HEALTH: EventKind
EVENT_KIND_REROUTE: EventKind
EVENT_KIND_SM_STATE: EventKind
EVENT_KIND_SWEEP: EventKind
EVENT_KIND_SWITCH_DOWN: EventKind
EVENT_KIND_SWITCH_UP: EventKind
EVENT_KIND_UNSPECIFIED: EventKind
HEALTH_CAUSE_ERRORS: HealthCause
HEALTH_CAUSE_FLAPPING: HealthCause
HEALTH_CAUSE_UNSPECIFIED: HealthCause
HEALTH_STATUS_ISOLATED: HealthStatus
HEALTH_STATUS_REFUSED: HealthStatus
HEALTH_STATUS_UNSPECIFIED: HealthStatus
LINK_SPEED_DDR: LinkSpeed
LINK_SPEED_EDR: LinkSpeed
LINK_SPEED_FDR: LinkSpeed
LINK_SPEED_FDR10: LinkSpeed
LINK_SPEED_HDR: LinkSpeed
LINK_SPEED_NDR: LinkSpeed
LINK_SPEED_QDR: LinkSpeed
LINK_SPEED_SDR: LinkSpeed
LINK_SPEED_UNSPECIFIED: LinkSpeed
LINK_SPEED_XDR: LinkSpeed
NODE_TYPE_CA: NodeType
NODE_TYPE_ROUTER: NodeType
NODE_TYPE_SWITCH: NodeType
NODE_TYPE_UNSPECIFIED: NodeType
PORT_ADMIN_STATE_DISABLED: PortAdminState
PORT_ADMIN_STATE_ENABLED: PortAdminState
PORT_ADMIN_STATE_UNSPECIFIED: PortAdminState
PORT_STATE_ACTIVE: PortState
PORT_STATE_ARMED: PortState
PORT_STATE_DOWN: PortState
PORT_STATE_INIT: PortState
PORT_STATE_UNSPECIFIED: PortState
SIM_STATE_DOWN: SimState
SIM_STATE_UNSPECIFIED: SimState
SIM_STATE_UP: SimState
SM_STATE_DISCOVERING: SmState
SM_STATE_MASTER: SmState
SM_STATE_NOT_ACTIVE: SmState
SM_STATE_STANDBY: SmState
SM_STATE_UNSPECIFIED: SmState
SWEEP_KIND_HEAVY: SweepKind
SWEEP_KIND_LIGHT: SweepKind
SWEEP_KIND_UNSPECIFIED: SweepKind
SWEEP_OUTCOME_CANCELLED: SweepOutcome
SWEEP_OUTCOME_FAILED: SweepOutcome
SWEEP_OUTCOME_OK: SweepOutcome
SWEEP_OUTCOME_UNSPECIFIED: SweepOutcome
VERDICT_CREDIT_LOOP: Verdict
VERDICT_FAILED: Verdict
VERDICT_INCOMPLETE: Verdict
VERDICT_LOOP: Verdict
VERDICT_OK: Verdict
VERDICT_TABLES_DIFFER: Verdict
VERDICT_UNSPECIFIED: Verdict

class CablingFinding(_message.Message):
    __slots__ = ["expected", "found", "kind", "message", "node_guid", "node_name", "port"]
    EXPECTED_FIELD_NUMBER: _ClassVar[int]
    FOUND_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    NODE_GUID_FIELD_NUMBER: _ClassVar[int]
    NODE_NAME_FIELD_NUMBER: _ClassVar[int]
    PORT_FIELD_NUMBER: _ClassVar[int]
    expected: str
    found: str
    kind: CablingFindingKind
    message: str
    node_guid: int
    node_name: str
    port: int
    def __init__(self, kind: _Optional[_Union[CablingFindingKind, str]] = ..., node_guid: _Optional[int] = ..., node_name: _Optional[str] = ..., port: _Optional[int] = ..., expected: _Optional[str] = ..., found: _Optional[str] = ..., message: _Optional[str] = ...) -> None: ...

class CheckCablingRequest(_message.Message):
    __slots__ = ["plan", "plan_name"]
    PLAN_FIELD_NUMBER: _ClassVar[int]
    PLAN_NAME_FIELD_NUMBER: _ClassVar[int]
    plan: str
    plan_name: str
    def __init__(self, plan: _Optional[str] = ..., plan_name: _Optional[str] = ...) -> None: ...

class CheckCablingResponse(_message.Message):
    __slots__ = ["duration_us", "findings", "found_cables", "found_nodes", "generation", "plan", "plan_cables", "plan_nodes"]
    DURATION_US_FIELD_NUMBER: _ClassVar[int]
    FINDINGS_FIELD_NUMBER: _ClassVar[int]
    FOUND_CABLES_FIELD_NUMBER: _ClassVar[int]
    FOUND_NODES_FIELD_NUMBER: _ClassVar[int]
    GENERATION_FIELD_NUMBER: _ClassVar[int]
    PLAN_CABLES_FIELD_NUMBER: _ClassVar[int]
    PLAN_FIELD_NUMBER: _ClassVar[int]
    PLAN_NODES_FIELD_NUMBER: _ClassVar[int]
    duration_us: int
    findings: _containers.RepeatedCompositeFieldContainer[CablingFinding]
    found_cables: int
    found_nodes: int
    generation: int
    plan: str
    plan_cables: int
    plan_nodes: int
    def __init__(self, plan: _Optional[str] = ..., generation: _Optional[int] = ..., plan_nodes: _Optional[int] = ..., plan_cables: _Optional[int] = ..., found_nodes: _Optional[int] = ..., found_cables: _Optional[int] = ..., findings: _Optional[_Iterable[_Union[CablingFinding, _Mapping]]] = ..., duration_us: _Optional[int] = ...) -> None: ...

class Event(_message.Message):
    __slots__ = ["details_json", "id", "kind", "message", "node_guid", "node_name", "port", "time"]
    DETAILS_JSON_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    NODE_GUID_FIELD_NUMBER: _ClassVar[int]
    NODE_NAME_FIELD_NUMBER: _ClassVar[int]
    PORT_FIELD_NUMBER: _ClassVar[int]
    TIME_FIELD_NUMBER: _ClassVar[int]
    details_json: str
    id: int
    kind: EventKind
    message: str
    node_guid: int
    node_name: str
    port: int
    time: _timestamp_pb2.Timestamp
    def __init__(self, id: _Optional[int] = ..., time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., kind: _Optional[_Union[EventKind, str]] = ..., node_guid: _Optional[int] = ..., node_name: _Optional[str] = ..., port: _Optional[int] = ..., message: _Optional[str] = ..., details_json: _Optional[str] = ...) -> None: ...

class ForwardingTableBlock(_message.Message):
    __slots__ = ["block", "generation", "linear_fdb_top", "ports", "switch_guid"]
    BLOCK_FIELD_NUMBER: _ClassVar[int]
    GENERATION_FIELD_NUMBER: _ClassVar[int]
    LINEAR_FDB_TOP_FIELD_NUMBER: _ClassVar[int]
    PORTS_FIELD_NUMBER: _ClassVar[int]
    SWITCH_GUID_FIELD_NUMBER: _ClassVar[int]
    block: int
    generation: int
    linear_fdb_top: int
    ports: bytes
    switch_guid: int
    def __init__(self, switch_guid: _Optional[int] = ..., linear_fdb_top: _Optional[int] = ..., block: _Optional[int] = ..., ports: _Optional[bytes] = ..., generation: _Optional[int] = ...) -> None: ...

class GetForwardingTableRequest(_message.Message):
    __slots__ = ["node"]
    NODE_FIELD_NUMBER: _ClassVar[int]
    node: NodeRef
    def __init__(self, node: _Optional[_Union[NodeRef, _Mapping]] = ...) -> None: ...

class GetNodeRequest(_message.Message):
    __slots__ = ["node"]
    NODE_FIELD_NUMBER: _ClassVar[int]
    node: NodeRef
    def __init__(self, node: _Optional[_Union[NodeRef, _Mapping]] = ...) -> None: ...

class GetNodeResponse(_message.Message):
    __slots__ = ["generation", "links", "node", "ports"]
    GENERATION_FIELD_NUMBER: _ClassVar[int]
    LINKS_FIELD_NUMBER: _ClassVar[int]
    NODE_FIELD_NUMBER: _ClassVar[int]
    PORTS_FIELD_NUMBER: _ClassVar[int]
    generation: int
    links: _containers.RepeatedCompositeFieldContainer[Link]
    node: Node
    ports: _containers.RepeatedCompositeFieldContainer[Port]
    def __init__(self, node: _Optional[_Union[Node, _Mapping]] = ..., ports: _Optional[_Iterable[_Union[Port, _Mapping]]] = ..., links: _Optional[_Iterable[_Union[Link, _Mapping]]] = ..., generation: _Optional[int] = ...) -> None: ...

class GetPathRecordRequest(_message.Message):
    __slots__ = ["destination", "source"]
    DESTINATION_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    destination: NodeRef
    source: NodeRef
    def __init__(self, source: _Optional[_Union[NodeRef, _Mapping]] = ..., destination: _Optional[_Union[NodeRef, _Mapping]] = ...) -> None: ...

class GetPathRecordResponse(_message.Message):
    __slots__ = ["generation", "path"]
    GENERATION_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    generation: int
    path: PathRecord
    def __init__(self, path: _Optional[_Union[PathRecord, _Mapping]] = ..., generation: _Optional[int] = ...) -> None: ...

class GetPortCountersRequest(_message.Message):
    __slots__ = ["node", "port"]
    NODE_FIELD_NUMBER: _ClassVar[int]
    PORT_FIELD_NUMBER: _ClassVar[int]
    node: NodeRef
    port: int
    def __init__(self, node: _Optional[_Union[NodeRef, _Mapping]] = ..., port: _Optional[int] = ...) -> None: ...

class GetPortCountersResponse(_message.Message):
    __slots__ = ["ports", "sweep", "sweep_at"]
    PORTS_FIELD_NUMBER: _ClassVar[int]
    SWEEP_AT_FIELD_NUMBER: _ClassVar[int]
    SWEEP_FIELD_NUMBER: _ClassVar[int]
    ports: _containers.RepeatedCompositeFieldContainer[PortCountersEntry]
    sweep: int
    sweep_at: _timestamp_pb2.Timestamp
    def __init__(self, ports: _Optional[_Iterable[_Union[PortCountersEntry, _Mapping]]] = ..., sweep: _Optional[int] = ..., sweep_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class GetStatsRequest(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class GetStatsResponse(_message.Message):
    __slots__ = ["delivered_to_sm", "drops_by_reason", "drops_total", "lid_routed_drops", "link_state_changes", "link_traversals", "links_down", "sent_by_sm", "smps_handled", "switches_down", "traps_repressed", "traps_sent"]
    class DropsByReasonEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    DELIVERED_TO_SM_FIELD_NUMBER: _ClassVar[int]
    DROPS_BY_REASON_FIELD_NUMBER: _ClassVar[int]
    DROPS_TOTAL_FIELD_NUMBER: _ClassVar[int]
    LID_ROUTED_DROPS_FIELD_NUMBER: _ClassVar[int]
    LINKS_DOWN_FIELD_NUMBER: _ClassVar[int]
    LINK_STATE_CHANGES_FIELD_NUMBER: _ClassVar[int]
    LINK_TRAVERSALS_FIELD_NUMBER: _ClassVar[int]
    SENT_BY_SM_FIELD_NUMBER: _ClassVar[int]
    SMPS_HANDLED_FIELD_NUMBER: _ClassVar[int]
    SWITCHES_DOWN_FIELD_NUMBER: _ClassVar[int]
    TRAPS_REPRESSED_FIELD_NUMBER: _ClassVar[int]
    TRAPS_SENT_FIELD_NUMBER: _ClassVar[int]
    delivered_to_sm: int
    drops_by_reason: _containers.ScalarMap[str, int]
    drops_total: int
    lid_routed_drops: int
    link_state_changes: int
    link_traversals: int
    links_down: int
    sent_by_sm: int
    smps_handled: int
    switches_down: int
    traps_repressed: int
    traps_sent: int
    def __init__(self, sent_by_sm: _Optional[int] = ..., smps_handled: _Optional[int] = ..., delivered_to_sm: _Optional[int] = ..., link_traversals: _Optional[int] = ..., traps_sent: _Optional[int] = ..., traps_repressed: _Optional[int] = ..., link_state_changes: _Optional[int] = ..., drops_total: _Optional[int] = ..., drops_by_reason: _Optional[_Mapping[str, int]] = ..., links_down: _Optional[int] = ..., switches_down: _Optional[int] = ..., lid_routed_drops: _Optional[int] = ...) -> None: ...

class GetStatusRequest(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class GetStatusResponse(_message.Message):
    __slots__ = ["cas", "generation", "last_event_id", "last_reroute_us", "last_routing_us", "last_sweep", "lid_bits", "lids", "links", "lmc", "master_guid", "master_lid", "message", "nodes", "ports", "reroutes", "routers", "routing_engine", "routing_notes", "routing_vls", "sa", "sm_lid", "sm_peers", "sm_port_guid", "sm_priority", "started_at", "state", "sweeps", "switches", "verdict", "verdict_message", "version"]
    CAS_FIELD_NUMBER: _ClassVar[int]
    GENERATION_FIELD_NUMBER: _ClassVar[int]
    LAST_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    LAST_REROUTE_US_FIELD_NUMBER: _ClassVar[int]
    LAST_ROUTING_US_FIELD_NUMBER: _ClassVar[int]
    LAST_SWEEP_FIELD_NUMBER: _ClassVar[int]
    LIDS_FIELD_NUMBER: _ClassVar[int]
    LID_BITS_FIELD_NUMBER: _ClassVar[int]
    LINKS_FIELD_NUMBER: _ClassVar[int]
    LMC_FIELD_NUMBER: _ClassVar[int]
    MASTER_GUID_FIELD_NUMBER: _ClassVar[int]
    MASTER_LID_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    NODES_FIELD_NUMBER: _ClassVar[int]
    PORTS_FIELD_NUMBER: _ClassVar[int]
    REROUTES_FIELD_NUMBER: _ClassVar[int]
    ROUTERS_FIELD_NUMBER: _ClassVar[int]
    ROUTING_ENGINE_FIELD_NUMBER: _ClassVar[int]
    ROUTING_NOTES_FIELD_NUMBER: _ClassVar[int]
    ROUTING_VLS_FIELD_NUMBER: _ClassVar[int]
    SA_FIELD_NUMBER: _ClassVar[int]
    SM_LID_FIELD_NUMBER: _ClassVar[int]
    SM_PEERS_FIELD_NUMBER: _ClassVar[int]
    SM_PORT_GUID_FIELD_NUMBER: _ClassVar[int]
    SM_PRIORITY_FIELD_NUMBER: _ClassVar[int]
    STARTED_AT_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    SWEEPS_FIELD_NUMBER: _ClassVar[int]
    SWITCHES_FIELD_NUMBER: _ClassVar[int]
    VERDICT_FIELD_NUMBER: _ClassVar[int]
    VERDICT_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    cas: int
    generation: int
    last_event_id: int
    last_reroute_us: int
    last_routing_us: int
    last_sweep: SweepSummary
    lid_bits: int
    lids: int
    links: int
    lmc: int
    master_guid: int
    master_lid: int
    message: str
    nodes: int
    ports: int
    reroutes: int
    routers: int
    routing_engine: str
    routing_notes: _containers.RepeatedScalarFieldContainer[str]
    routing_vls: int
    sa: SaStatus
    sm_lid: int
    sm_peers: _containers.RepeatedCompositeFieldContainer[SmPeer]
    sm_port_guid: int
    sm_priority: int
    started_at: _timestamp_pb2.Timestamp
    state: SmState
    sweeps: int
    switches: int
    verdict: Verdict
    verdict_message: str
    version: str
    def __init__(self, state: _Optional[_Union[SmState, str]] = ..., generation: _Optional[int] = ..., version: _Optional[str] = ..., started_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., message: _Optional[str] = ..., nodes: _Optional[int] = ..., switches: _Optional[int] = ..., cas: _Optional[int] = ..., routers: _Optional[int] = ..., ports: _Optional[int] = ..., links: _Optional[int] = ..., lids: _Optional[int] = ..., lid_bits: _Optional[int] = ..., lmc: _Optional[int] = ..., routing_engine: _Optional[str] = ..., sm_port_guid: _Optional[int] = ..., sm_lid: _Optional[int] = ..., last_sweep: _Optional[_Union[SweepSummary, _Mapping]] = ..., last_routing_us: _Optional[int] = ..., last_reroute_us: _Optional[int] = ..., verdict: _Optional[_Union[Verdict, str]] = ..., verdict_message: _Optional[str] = ..., last_event_id: _Optional[int] = ..., sweeps: _Optional[int] = ..., reroutes: _Optional[int] = ..., sa: _Optional[_Union[SaStatus, _Mapping]] = ..., sm_priority: _Optional[int] = ..., master_guid: _Optional[int] = ..., master_lid: _Optional[int] = ..., sm_peers: _Optional[_Iterable[_Union[SmPeer, _Mapping]]] = ..., routing_vls: _Optional[int] = ..., routing_notes: _Optional[_Iterable[str]] = ...) -> None: ...

class Hop(_message.Message):
    __slots__ = ["in_port", "lid", "node_guid", "node_name", "node_type", "out_port"]
    IN_PORT_FIELD_NUMBER: _ClassVar[int]
    LID_FIELD_NUMBER: _ClassVar[int]
    NODE_GUID_FIELD_NUMBER: _ClassVar[int]
    NODE_NAME_FIELD_NUMBER: _ClassVar[int]
    NODE_TYPE_FIELD_NUMBER: _ClassVar[int]
    OUT_PORT_FIELD_NUMBER: _ClassVar[int]
    in_port: int
    lid: int
    node_guid: int
    node_name: str
    node_type: NodeType
    out_port: int
    def __init__(self, node_guid: _Optional[int] = ..., node_name: _Optional[str] = ..., node_type: _Optional[_Union[NodeType, str]] = ..., in_port: _Optional[int] = ..., out_port: _Optional[int] = ..., lid: _Optional[int] = ...) -> None: ...

class InjectPortErrorsRequest(_message.Message):
    __slots__ = ["excessive_buffer_overruns", "link_downed", "link_error_recoveries", "local_link_integrity_errors", "node", "port", "rcv_errors", "symbol_errors", "xmit_discards", "xmit_wait"]
    EXCESSIVE_BUFFER_OVERRUNS_FIELD_NUMBER: _ClassVar[int]
    LINK_DOWNED_FIELD_NUMBER: _ClassVar[int]
    LINK_ERROR_RECOVERIES_FIELD_NUMBER: _ClassVar[int]
    LOCAL_LINK_INTEGRITY_ERRORS_FIELD_NUMBER: _ClassVar[int]
    NODE_FIELD_NUMBER: _ClassVar[int]
    PORT_FIELD_NUMBER: _ClassVar[int]
    RCV_ERRORS_FIELD_NUMBER: _ClassVar[int]
    SYMBOL_ERRORS_FIELD_NUMBER: _ClassVar[int]
    XMIT_DISCARDS_FIELD_NUMBER: _ClassVar[int]
    XMIT_WAIT_FIELD_NUMBER: _ClassVar[int]
    excessive_buffer_overruns: int
    link_downed: int
    link_error_recoveries: int
    local_link_integrity_errors: int
    node: NodeRef
    port: int
    rcv_errors: int
    symbol_errors: int
    xmit_discards: int
    xmit_wait: int
    def __init__(self, node: _Optional[_Union[NodeRef, _Mapping]] = ..., port: _Optional[int] = ..., symbol_errors: _Optional[int] = ..., link_error_recoveries: _Optional[int] = ..., link_downed: _Optional[int] = ..., rcv_errors: _Optional[int] = ..., xmit_discards: _Optional[int] = ..., local_link_integrity_errors: _Optional[int] = ..., excessive_buffer_overruns: _Optional[int] = ..., xmit_wait: _Optional[int] = ...) -> None: ...

class InjectPortErrorsResponse(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class Link(_message.Message):
    __slots__ = ["a", "b", "speed", "state", "width_lanes"]
    A_FIELD_NUMBER: _ClassVar[int]
    B_FIELD_NUMBER: _ClassVar[int]
    SPEED_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    WIDTH_LANES_FIELD_NUMBER: _ClassVar[int]
    a: LinkEnd
    b: LinkEnd
    speed: LinkSpeed
    state: PortState
    width_lanes: int
    def __init__(self, a: _Optional[_Union[LinkEnd, _Mapping]] = ..., b: _Optional[_Union[LinkEnd, _Mapping]] = ..., state: _Optional[_Union[PortState, str]] = ..., width_lanes: _Optional[int] = ..., speed: _Optional[_Union[LinkSpeed, str]] = ...) -> None: ...

class LinkEnd(_message.Message):
    __slots__ = ["node_guid", "node_name", "node_type", "port", "port_guid"]
    NODE_GUID_FIELD_NUMBER: _ClassVar[int]
    NODE_NAME_FIELD_NUMBER: _ClassVar[int]
    NODE_TYPE_FIELD_NUMBER: _ClassVar[int]
    PORT_FIELD_NUMBER: _ClassVar[int]
    PORT_GUID_FIELD_NUMBER: _ClassVar[int]
    node_guid: int
    node_name: str
    node_type: NodeType
    port: int
    port_guid: int
    def __init__(self, node_guid: _Optional[int] = ..., node_name: _Optional[str] = ..., node_type: _Optional[_Union[NodeType, str]] = ..., port: _Optional[int] = ..., port_guid: _Optional[int] = ...) -> None: ...

class ListLinksRequest(_message.Message):
    __slots__ = ["node", "page_size", "page_token"]
    NODE_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    node: NodeRef
    page_size: int
    page_token: str
    def __init__(self, page_size: _Optional[int] = ..., page_token: _Optional[str] = ..., node: _Optional[_Union[NodeRef, _Mapping]] = ...) -> None: ...

class ListLinksResponse(_message.Message):
    __slots__ = ["generation", "links", "next_page_token", "total_size"]
    GENERATION_FIELD_NUMBER: _ClassVar[int]
    LINKS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    TOTAL_SIZE_FIELD_NUMBER: _ClassVar[int]
    generation: int
    links: _containers.RepeatedCompositeFieldContainer[Link]
    next_page_token: str
    total_size: int
    def __init__(self, links: _Optional[_Iterable[_Union[Link, _Mapping]]] = ..., next_page_token: _Optional[str] = ..., total_size: _Optional[int] = ..., generation: _Optional[int] = ...) -> None: ...

class ListMulticastGroupsRequest(_message.Message):
    __slots__ = ["members"]
    MEMBERS_FIELD_NUMBER: _ClassVar[int]
    members: bool
    def __init__(self, members: bool = ...) -> None: ...

class ListMulticastGroupsResponse(_message.Message):
    __slots__ = ["generation", "groups"]
    GENERATION_FIELD_NUMBER: _ClassVar[int]
    GROUPS_FIELD_NUMBER: _ClassVar[int]
    generation: int
    groups: _containers.RepeatedCompositeFieldContainer[MulticastGroup]
    def __init__(self, groups: _Optional[_Iterable[_Union[MulticastGroup, _Mapping]]] = ..., generation: _Optional[int] = ...) -> None: ...

class ListNodesRequest(_message.Message):
    __slots__ = ["name_contains", "page_size", "page_token", "type"]
    NAME_CONTAINS_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    name_contains: str
    page_size: int
    page_token: str
    type: NodeType
    def __init__(self, page_size: _Optional[int] = ..., page_token: _Optional[str] = ..., type: _Optional[_Union[NodeType, str]] = ..., name_contains: _Optional[str] = ...) -> None: ...

class ListNodesResponse(_message.Message):
    __slots__ = ["generation", "next_page_token", "nodes", "total_size"]
    GENERATION_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    NODES_FIELD_NUMBER: _ClassVar[int]
    TOTAL_SIZE_FIELD_NUMBER: _ClassVar[int]
    generation: int
    next_page_token: str
    nodes: _containers.RepeatedCompositeFieldContainer[Node]
    total_size: int
    def __init__(self, nodes: _Optional[_Iterable[_Union[Node, _Mapping]]] = ..., next_page_token: _Optional[str] = ..., total_size: _Optional[int] = ..., generation: _Optional[int] = ...) -> None: ...

class ListPartitionsRequest(_message.Message):
    __slots__ = ["page_size", "page_token", "pkey"]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    PKEY_FIELD_NUMBER: _ClassVar[int]
    page_size: int
    page_token: str
    pkey: int
    def __init__(self, pkey: _Optional[int] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListPartitionsResponse(_message.Message):
    __slots__ = ["generation", "members", "next_page_token", "partitions", "total_members", "warnings"]
    GENERATION_FIELD_NUMBER: _ClassVar[int]
    MEMBERS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_MEMBERS_FIELD_NUMBER: _ClassVar[int]
    WARNINGS_FIELD_NUMBER: _ClassVar[int]
    generation: int
    members: _containers.RepeatedCompositeFieldContainer[PartitionMember]
    next_page_token: str
    partitions: _containers.RepeatedCompositeFieldContainer[Partition]
    total_members: int
    warnings: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, partitions: _Optional[_Iterable[_Union[Partition, _Mapping]]] = ..., members: _Optional[_Iterable[_Union[PartitionMember, _Mapping]]] = ..., next_page_token: _Optional[str] = ..., total_members: _Optional[int] = ..., warnings: _Optional[_Iterable[str]] = ..., generation: _Optional[int] = ...) -> None: ...

class ListPortErrorsRequest(_message.Message):
    __slots__ = ["limit", "since_start"]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    SINCE_START_FIELD_NUMBER: _ClassVar[int]
    limit: int
    since_start: bool
    def __init__(self, limit: _Optional[int] = ..., since_start: bool = ...) -> None: ...

class ListPortErrorsResponse(_message.Message):
    __slots__ = ["last_error", "matching", "ports", "ports_failed", "ports_read", "sweep", "sweep_at"]
    LAST_ERROR_FIELD_NUMBER: _ClassVar[int]
    MATCHING_FIELD_NUMBER: _ClassVar[int]
    PORTS_FAILED_FIELD_NUMBER: _ClassVar[int]
    PORTS_FIELD_NUMBER: _ClassVar[int]
    PORTS_READ_FIELD_NUMBER: _ClassVar[int]
    SWEEP_AT_FIELD_NUMBER: _ClassVar[int]
    SWEEP_FIELD_NUMBER: _ClassVar[int]
    last_error: str
    matching: int
    ports: _containers.RepeatedCompositeFieldContainer[PortCountersEntry]
    ports_failed: int
    ports_read: int
    sweep: int
    sweep_at: _timestamp_pb2.Timestamp
    def __init__(self, ports: _Optional[_Iterable[_Union[PortCountersEntry, _Mapping]]] = ..., matching: _Optional[int] = ..., sweep: _Optional[int] = ..., sweep_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., ports_read: _Optional[int] = ..., ports_failed: _Optional[int] = ..., last_error: _Optional[str] = ...) -> None: ...

class ListUnhealthyPortsRequest(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class ListUnhealthyPortsResponse(_message.Message):
    __slots__ = ["isolated_total", "policy_enabled", "ports", "refused_total", "restored_total"]
    ISOLATED_TOTAL_FIELD_NUMBER: _ClassVar[int]
    POLICY_ENABLED_FIELD_NUMBER: _ClassVar[int]
    PORTS_FIELD_NUMBER: _ClassVar[int]
    REFUSED_TOTAL_FIELD_NUMBER: _ClassVar[int]
    RESTORED_TOTAL_FIELD_NUMBER: _ClassVar[int]
    isolated_total: int
    policy_enabled: bool
    ports: _containers.RepeatedCompositeFieldContainer[UnhealthyPort]
    refused_total: int
    restored_total: int
    def __init__(self, ports: _Optional[_Iterable[_Union[UnhealthyPort, _Mapping]]] = ..., isolated_total: _Optional[int] = ..., restored_total: _Optional[int] = ..., refused_total: _Optional[int] = ..., policy_enabled: bool = ...) -> None: ...

class MulticastGroup(_message.Message):
    __slots__ = ["member_count", "members", "mgid", "mlid", "mtu", "pkey", "qkey", "rate_gbps", "sl", "tree_switches", "well_known"]
    MEMBERS_FIELD_NUMBER: _ClassVar[int]
    MEMBER_COUNT_FIELD_NUMBER: _ClassVar[int]
    MGID_FIELD_NUMBER: _ClassVar[int]
    MLID_FIELD_NUMBER: _ClassVar[int]
    MTU_FIELD_NUMBER: _ClassVar[int]
    PKEY_FIELD_NUMBER: _ClassVar[int]
    QKEY_FIELD_NUMBER: _ClassVar[int]
    RATE_GBPS_FIELD_NUMBER: _ClassVar[int]
    SL_FIELD_NUMBER: _ClassVar[int]
    TREE_SWITCHES_FIELD_NUMBER: _ClassVar[int]
    WELL_KNOWN_FIELD_NUMBER: _ClassVar[int]
    member_count: int
    members: _containers.RepeatedCompositeFieldContainer[MulticastMember]
    mgid: str
    mlid: int
    mtu: int
    pkey: int
    qkey: int
    rate_gbps: float
    sl: int
    tree_switches: int
    well_known: bool
    def __init__(self, mgid: _Optional[str] = ..., mlid: _Optional[int] = ..., pkey: _Optional[int] = ..., qkey: _Optional[int] = ..., mtu: _Optional[int] = ..., rate_gbps: _Optional[float] = ..., sl: _Optional[int] = ..., well_known: bool = ..., member_count: _Optional[int] = ..., tree_switches: _Optional[int] = ..., members: _Optional[_Iterable[_Union[MulticastMember, _Mapping]]] = ...) -> None: ...

class MulticastMember(_message.Message):
    __slots__ = ["join_state", "lid", "node_name", "port", "port_guid"]
    JOIN_STATE_FIELD_NUMBER: _ClassVar[int]
    LID_FIELD_NUMBER: _ClassVar[int]
    NODE_NAME_FIELD_NUMBER: _ClassVar[int]
    PORT_FIELD_NUMBER: _ClassVar[int]
    PORT_GUID_FIELD_NUMBER: _ClassVar[int]
    join_state: int
    lid: int
    node_name: str
    port: int
    port_guid: int
    def __init__(self, port_guid: _Optional[int] = ..., node_name: _Optional[str] = ..., port: _Optional[int] = ..., lid: _Optional[int] = ..., join_state: _Optional[int] = ...) -> None: ...

class Node(_message.Message):
    __slots__ = ["guid", "lid", "name", "num_ports", "system_image_guid", "type"]
    GUID_FIELD_NUMBER: _ClassVar[int]
    LID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    NUM_PORTS_FIELD_NUMBER: _ClassVar[int]
    SYSTEM_IMAGE_GUID_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    guid: int
    lid: int
    name: str
    num_ports: int
    system_image_guid: int
    type: NodeType
    def __init__(self, guid: _Optional[int] = ..., type: _Optional[_Union[NodeType, str]] = ..., name: _Optional[str] = ..., system_image_guid: _Optional[int] = ..., num_ports: _Optional[int] = ..., lid: _Optional[int] = ...) -> None: ...

class NodeRef(_message.Message):
    __slots__ = ["guid", "lid", "name", "port"]
    GUID_FIELD_NUMBER: _ClassVar[int]
    LID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    PORT_FIELD_NUMBER: _ClassVar[int]
    guid: int
    lid: int
    name: str
    port: int
    def __init__(self, guid: _Optional[int] = ..., lid: _Optional[int] = ..., name: _Optional[str] = ..., port: _Optional[int] = ...) -> None: ...

class Partition(_message.Message):
    __slots__ = ["full_members", "ipoib", "ipoib_mtu", "ipoib_qkey", "ipoib_rate_gbps", "ipoib_sl", "limited_members", "name", "pkey"]
    FULL_MEMBERS_FIELD_NUMBER: _ClassVar[int]
    IPOIB_FIELD_NUMBER: _ClassVar[int]
    IPOIB_MTU_FIELD_NUMBER: _ClassVar[int]
    IPOIB_QKEY_FIELD_NUMBER: _ClassVar[int]
    IPOIB_RATE_GBPS_FIELD_NUMBER: _ClassVar[int]
    IPOIB_SL_FIELD_NUMBER: _ClassVar[int]
    LIMITED_MEMBERS_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    PKEY_FIELD_NUMBER: _ClassVar[int]
    full_members: int
    ipoib: bool
    ipoib_mtu: int
    ipoib_qkey: int
    ipoib_rate_gbps: float
    ipoib_sl: int
    limited_members: int
    name: str
    pkey: int
    def __init__(self, name: _Optional[str] = ..., pkey: _Optional[int] = ..., ipoib: bool = ..., full_members: _Optional[int] = ..., limited_members: _Optional[int] = ..., ipoib_mtu: _Optional[int] = ..., ipoib_rate_gbps: _Optional[float] = ..., ipoib_qkey: _Optional[int] = ..., ipoib_sl: _Optional[int] = ...) -> None: ...

class PartitionMember(_message.Message):
    __slots__ = ["full", "lid", "node_guid", "node_name", "pkey_index", "port", "port_guid"]
    FULL_FIELD_NUMBER: _ClassVar[int]
    LID_FIELD_NUMBER: _ClassVar[int]
    NODE_GUID_FIELD_NUMBER: _ClassVar[int]
    NODE_NAME_FIELD_NUMBER: _ClassVar[int]
    PKEY_INDEX_FIELD_NUMBER: _ClassVar[int]
    PORT_FIELD_NUMBER: _ClassVar[int]
    PORT_GUID_FIELD_NUMBER: _ClassVar[int]
    full: bool
    lid: int
    node_guid: int
    node_name: str
    pkey_index: int
    port: int
    port_guid: int
    def __init__(self, node_guid: _Optional[int] = ..., node_name: _Optional[str] = ..., port: _Optional[int] = ..., port_guid: _Optional[int] = ..., lid: _Optional[int] = ..., full: bool = ..., pkey_index: _Optional[int] = ...) -> None: ...

class PathRecord(_message.Message):
    __slots__ = ["destination_guid", "destination_name", "dlid", "mtu", "packet_life_time", "pkey", "rate_code", "rate_gbps", "reversible", "sl", "slid", "source_guid", "source_name", "subnet_prefix", "switch_hops"]
    DESTINATION_GUID_FIELD_NUMBER: _ClassVar[int]
    DESTINATION_NAME_FIELD_NUMBER: _ClassVar[int]
    DLID_FIELD_NUMBER: _ClassVar[int]
    MTU_FIELD_NUMBER: _ClassVar[int]
    PACKET_LIFE_TIME_FIELD_NUMBER: _ClassVar[int]
    PKEY_FIELD_NUMBER: _ClassVar[int]
    RATE_CODE_FIELD_NUMBER: _ClassVar[int]
    RATE_GBPS_FIELD_NUMBER: _ClassVar[int]
    REVERSIBLE_FIELD_NUMBER: _ClassVar[int]
    SLID_FIELD_NUMBER: _ClassVar[int]
    SL_FIELD_NUMBER: _ClassVar[int]
    SOURCE_GUID_FIELD_NUMBER: _ClassVar[int]
    SOURCE_NAME_FIELD_NUMBER: _ClassVar[int]
    SUBNET_PREFIX_FIELD_NUMBER: _ClassVar[int]
    SWITCH_HOPS_FIELD_NUMBER: _ClassVar[int]
    destination_guid: int
    destination_name: str
    dlid: int
    mtu: int
    packet_life_time: int
    pkey: int
    rate_code: int
    rate_gbps: float
    reversible: bool
    sl: int
    slid: int
    source_guid: int
    source_name: str
    subnet_prefix: int
    switch_hops: int
    def __init__(self, subnet_prefix: _Optional[int] = ..., source_guid: _Optional[int] = ..., destination_guid: _Optional[int] = ..., slid: _Optional[int] = ..., dlid: _Optional[int] = ..., sl: _Optional[int] = ..., pkey: _Optional[int] = ..., mtu: _Optional[int] = ..., rate_code: _Optional[int] = ..., rate_gbps: _Optional[float] = ..., packet_life_time: _Optional[int] = ..., reversible: bool = ..., switch_hops: _Optional[int] = ..., source_name: _Optional[str] = ..., destination_name: _Optional[str] = ...) -> None: ...

class Port(_message.Message):
    __slots__ = ["admin_disabled", "connected", "guid", "lid", "lmc", "number", "phys_state", "remote", "speed", "state", "width_lanes"]
    ADMIN_DISABLED_FIELD_NUMBER: _ClassVar[int]
    CONNECTED_FIELD_NUMBER: _ClassVar[int]
    GUID_FIELD_NUMBER: _ClassVar[int]
    LID_FIELD_NUMBER: _ClassVar[int]
    LMC_FIELD_NUMBER: _ClassVar[int]
    NUMBER_FIELD_NUMBER: _ClassVar[int]
    PHYS_STATE_FIELD_NUMBER: _ClassVar[int]
    REMOTE_FIELD_NUMBER: _ClassVar[int]
    SPEED_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    WIDTH_LANES_FIELD_NUMBER: _ClassVar[int]
    admin_disabled: bool
    connected: bool
    guid: int
    lid: int
    lmc: int
    number: int
    phys_state: int
    remote: LinkEnd
    speed: LinkSpeed
    state: PortState
    width_lanes: int
    def __init__(self, number: _Optional[int] = ..., guid: _Optional[int] = ..., lid: _Optional[int] = ..., lmc: _Optional[int] = ..., state: _Optional[_Union[PortState, str]] = ..., phys_state: _Optional[int] = ..., width_lanes: _Optional[int] = ..., speed: _Optional[_Union[LinkSpeed, str]] = ..., admin_disabled: bool = ..., connected: bool = ..., remote: _Optional[_Union[LinkEnd, _Mapping]] = ...) -> None: ...

class PortCounters(_message.Message):
    __slots__ = ["errors", "excessive_buffer_overruns", "link_downed", "link_error_recoveries", "local_link_integrity_errors", "rcv_bytes", "rcv_constraint_errors", "rcv_errors", "rcv_packets", "rcv_remote_physical_errors", "rcv_switch_relay_errors", "symbol_errors", "vl15_dropped", "xmit_bytes", "xmit_constraint_errors", "xmit_discards", "xmit_packets", "xmit_wait"]
    ERRORS_FIELD_NUMBER: _ClassVar[int]
    EXCESSIVE_BUFFER_OVERRUNS_FIELD_NUMBER: _ClassVar[int]
    LINK_DOWNED_FIELD_NUMBER: _ClassVar[int]
    LINK_ERROR_RECOVERIES_FIELD_NUMBER: _ClassVar[int]
    LOCAL_LINK_INTEGRITY_ERRORS_FIELD_NUMBER: _ClassVar[int]
    RCV_BYTES_FIELD_NUMBER: _ClassVar[int]
    RCV_CONSTRAINT_ERRORS_FIELD_NUMBER: _ClassVar[int]
    RCV_ERRORS_FIELD_NUMBER: _ClassVar[int]
    RCV_PACKETS_FIELD_NUMBER: _ClassVar[int]
    RCV_REMOTE_PHYSICAL_ERRORS_FIELD_NUMBER: _ClassVar[int]
    RCV_SWITCH_RELAY_ERRORS_FIELD_NUMBER: _ClassVar[int]
    SYMBOL_ERRORS_FIELD_NUMBER: _ClassVar[int]
    VL15_DROPPED_FIELD_NUMBER: _ClassVar[int]
    XMIT_BYTES_FIELD_NUMBER: _ClassVar[int]
    XMIT_CONSTRAINT_ERRORS_FIELD_NUMBER: _ClassVar[int]
    XMIT_DISCARDS_FIELD_NUMBER: _ClassVar[int]
    XMIT_PACKETS_FIELD_NUMBER: _ClassVar[int]
    XMIT_WAIT_FIELD_NUMBER: _ClassVar[int]
    errors: int
    excessive_buffer_overruns: int
    link_downed: int
    link_error_recoveries: int
    local_link_integrity_errors: int
    rcv_bytes: int
    rcv_constraint_errors: int
    rcv_errors: int
    rcv_packets: int
    rcv_remote_physical_errors: int
    rcv_switch_relay_errors: int
    symbol_errors: int
    vl15_dropped: int
    xmit_bytes: int
    xmit_constraint_errors: int
    xmit_discards: int
    xmit_packets: int
    xmit_wait: int
    def __init__(self, symbol_errors: _Optional[int] = ..., link_error_recoveries: _Optional[int] = ..., link_downed: _Optional[int] = ..., rcv_errors: _Optional[int] = ..., rcv_remote_physical_errors: _Optional[int] = ..., rcv_switch_relay_errors: _Optional[int] = ..., xmit_discards: _Optional[int] = ..., xmit_constraint_errors: _Optional[int] = ..., rcv_constraint_errors: _Optional[int] = ..., local_link_integrity_errors: _Optional[int] = ..., excessive_buffer_overruns: _Optional[int] = ..., vl15_dropped: _Optional[int] = ..., xmit_wait: _Optional[int] = ..., xmit_bytes: _Optional[int] = ..., rcv_bytes: _Optional[int] = ..., xmit_packets: _Optional[int] = ..., rcv_packets: _Optional[int] = ..., errors: _Optional[int] = ...) -> None: ...

class PortCountersEntry(_message.Message):
    __slots__ = ["clears", "delta", "extended", "interval_s", "node_guid", "node_name", "peer", "port", "rcv_bytes_per_s", "read_at", "total", "xmit_bytes_per_s"]
    CLEARS_FIELD_NUMBER: _ClassVar[int]
    DELTA_FIELD_NUMBER: _ClassVar[int]
    EXTENDED_FIELD_NUMBER: _ClassVar[int]
    INTERVAL_S_FIELD_NUMBER: _ClassVar[int]
    NODE_GUID_FIELD_NUMBER: _ClassVar[int]
    NODE_NAME_FIELD_NUMBER: _ClassVar[int]
    PEER_FIELD_NUMBER: _ClassVar[int]
    PORT_FIELD_NUMBER: _ClassVar[int]
    RCV_BYTES_PER_S_FIELD_NUMBER: _ClassVar[int]
    READ_AT_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    XMIT_BYTES_PER_S_FIELD_NUMBER: _ClassVar[int]
    clears: int
    delta: PortCounters
    extended: bool
    interval_s: float
    node_guid: int
    node_name: str
    peer: str
    port: int
    rcv_bytes_per_s: float
    read_at: _timestamp_pb2.Timestamp
    total: PortCounters
    xmit_bytes_per_s: float
    def __init__(self, node_guid: _Optional[int] = ..., node_name: _Optional[str] = ..., port: _Optional[int] = ..., total: _Optional[_Union[PortCounters, _Mapping]] = ..., delta: _Optional[_Union[PortCounters, _Mapping]] = ..., interval_s: _Optional[float] = ..., read_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., extended: bool = ..., clears: _Optional[int] = ..., xmit_bytes_per_s: _Optional[float] = ..., rcv_bytes_per_s: _Optional[float] = ..., peer: _Optional[str] = ...) -> None: ...

class ReadBack(_message.Message):
    __slots__ = ["blocks_differ", "blocks_read", "differences", "switches", "switches_silent"]
    BLOCKS_DIFFER_FIELD_NUMBER: _ClassVar[int]
    BLOCKS_READ_FIELD_NUMBER: _ClassVar[int]
    DIFFERENCES_FIELD_NUMBER: _ClassVar[int]
    SWITCHES_FIELD_NUMBER: _ClassVar[int]
    SWITCHES_SILENT_FIELD_NUMBER: _ClassVar[int]
    blocks_differ: int
    blocks_read: int
    differences: _containers.RepeatedScalarFieldContainer[str]
    switches: int
    switches_silent: int
    def __init__(self, switches: _Optional[int] = ..., switches_silent: _Optional[int] = ..., blocks_read: _Optional[int] = ..., blocks_differ: _Optional[int] = ..., differences: _Optional[_Iterable[str]] = ...) -> None: ...

class SaStatus(_message.Message):
    __slots__ = ["errors", "ignored", "malformed", "records", "report_acks", "reports", "requests", "subscriptions"]
    ERRORS_FIELD_NUMBER: _ClassVar[int]
    IGNORED_FIELD_NUMBER: _ClassVar[int]
    MALFORMED_FIELD_NUMBER: _ClassVar[int]
    RECORDS_FIELD_NUMBER: _ClassVar[int]
    REPORTS_FIELD_NUMBER: _ClassVar[int]
    REPORT_ACKS_FIELD_NUMBER: _ClassVar[int]
    REQUESTS_FIELD_NUMBER: _ClassVar[int]
    SUBSCRIPTIONS_FIELD_NUMBER: _ClassVar[int]
    errors: int
    ignored: int
    malformed: int
    records: int
    report_acks: int
    reports: int
    requests: int
    subscriptions: int
    def __init__(self, requests: _Optional[int] = ..., errors: _Optional[int] = ..., records: _Optional[int] = ..., malformed: _Optional[int] = ..., ignored: _Optional[int] = ..., subscriptions: _Optional[int] = ..., reports: _Optional[int] = ..., report_acks: _Optional[int] = ...) -> None: ...

class SetLinkStateRequest(_message.Message):
    __slots__ = ["node", "port", "state"]
    NODE_FIELD_NUMBER: _ClassVar[int]
    PORT_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    node: NodeRef
    port: int
    state: SimState
    def __init__(self, node: _Optional[_Union[NodeRef, _Mapping]] = ..., port: _Optional[int] = ..., state: _Optional[_Union[SimState, str]] = ...) -> None: ...

class SetLinkStateResponse(_message.Message):
    __slots__ = ["changed", "peer"]
    CHANGED_FIELD_NUMBER: _ClassVar[int]
    PEER_FIELD_NUMBER: _ClassVar[int]
    changed: bool
    peer: LinkEnd
    def __init__(self, changed: bool = ..., peer: _Optional[_Union[LinkEnd, _Mapping]] = ...) -> None: ...

class SetPortStateRequest(_message.Message):
    __slots__ = ["node", "port", "state"]
    NODE_FIELD_NUMBER: _ClassVar[int]
    PORT_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    node: NodeRef
    port: int
    state: PortAdminState
    def __init__(self, node: _Optional[_Union[NodeRef, _Mapping]] = ..., port: _Optional[int] = ..., state: _Optional[_Union[PortAdminState, str]] = ...) -> None: ...

class SetPortStateResponse(_message.Message):
    __slots__ = ["changed", "port"]
    CHANGED_FIELD_NUMBER: _ClassVar[int]
    PORT_FIELD_NUMBER: _ClassVar[int]
    changed: bool
    port: Port
    def __init__(self, port: _Optional[_Union[Port, _Mapping]] = ..., changed: bool = ...) -> None: ...

class SetSwitchStateRequest(_message.Message):
    __slots__ = ["node", "state"]
    NODE_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    node: NodeRef
    state: SimState
    def __init__(self, node: _Optional[_Union[NodeRef, _Mapping]] = ..., state: _Optional[_Union[SimState, str]] = ...) -> None: ...

class SetSwitchStateResponse(_message.Message):
    __slots__ = ["changed", "links_affected"]
    CHANGED_FIELD_NUMBER: _ClassVar[int]
    LINKS_AFFECTED_FIELD_NUMBER: _ClassVar[int]
    changed: bool
    links_affected: int
    def __init__(self, changed: bool = ..., links_affected: _Optional[int] = ...) -> None: ...

class SmPeer(_message.Message):
    __slots__ = ["guid", "last_contact", "lid", "priority", "state"]
    GUID_FIELD_NUMBER: _ClassVar[int]
    LAST_CONTACT_FIELD_NUMBER: _ClassVar[int]
    LID_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    guid: int
    last_contact: _timestamp_pb2.Timestamp
    lid: int
    priority: int
    state: SmState
    def __init__(self, guid: _Optional[int] = ..., lid: _Optional[int] = ..., priority: _Optional[int] = ..., state: _Optional[_Union[SmState, str]] = ..., last_contact: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class SweepPhase(_message.Message):
    __slots__ = ["duration_us", "name"]
    DURATION_US_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    duration_us: int
    name: str
    def __init__(self, name: _Optional[str] = ..., duration_us: _Optional[int] = ...) -> None: ...

class SweepSummary(_message.Message):
    __slots__ = ["cas", "ended_at", "id", "kind", "lids", "message", "nodes", "outcome", "phases", "started_at", "switches"]
    CAS_FIELD_NUMBER: _ClassVar[int]
    ENDED_AT_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    LIDS_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    NODES_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    PHASES_FIELD_NUMBER: _ClassVar[int]
    STARTED_AT_FIELD_NUMBER: _ClassVar[int]
    SWITCHES_FIELD_NUMBER: _ClassVar[int]
    cas: int
    ended_at: _timestamp_pb2.Timestamp
    id: int
    kind: SweepKind
    lids: int
    message: str
    nodes: int
    outcome: SweepOutcome
    phases: _containers.RepeatedCompositeFieldContainer[SweepPhase]
    started_at: _timestamp_pb2.Timestamp
    switches: int
    def __init__(self, id: _Optional[int] = ..., kind: _Optional[_Union[SweepKind, str]] = ..., started_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., ended_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., nodes: _Optional[int] = ..., switches: _Optional[int] = ..., cas: _Optional[int] = ..., lids: _Optional[int] = ..., phases: _Optional[_Iterable[_Union[SweepPhase, _Mapping]]] = ..., outcome: _Optional[_Union[SweepOutcome, str]] = ..., message: _Optional[str] = ...) -> None: ...

class TopPortsRequest(_message.Message):
    __slots__ = ["limit"]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    limit: int
    def __init__(self, limit: _Optional[int] = ...) -> None: ...

class TopPortsResponse(_message.Message):
    __slots__ = ["busiest", "erring", "sweep", "sweep_at"]
    BUSIEST_FIELD_NUMBER: _ClassVar[int]
    ERRING_FIELD_NUMBER: _ClassVar[int]
    SWEEP_AT_FIELD_NUMBER: _ClassVar[int]
    SWEEP_FIELD_NUMBER: _ClassVar[int]
    busiest: _containers.RepeatedCompositeFieldContainer[PortCountersEntry]
    erring: _containers.RepeatedCompositeFieldContainer[PortCountersEntry]
    sweep: int
    sweep_at: _timestamp_pb2.Timestamp
    def __init__(self, busiest: _Optional[_Iterable[_Union[PortCountersEntry, _Mapping]]] = ..., erring: _Optional[_Iterable[_Union[PortCountersEntry, _Mapping]]] = ..., sweep: _Optional[int] = ..., sweep_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class TracePathRequest(_message.Message):
    __slots__ = ["destination", "source"]
    DESTINATION_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    destination: NodeRef
    source: NodeRef
    def __init__(self, source: _Optional[_Union[NodeRef, _Mapping]] = ..., destination: _Optional[_Union[NodeRef, _Mapping]] = ...) -> None: ...

class TracePathResponse(_message.Message):
    __slots__ = ["complete", "destination_lid", "generation", "hops", "message", "source_lid"]
    COMPLETE_FIELD_NUMBER: _ClassVar[int]
    DESTINATION_LID_FIELD_NUMBER: _ClassVar[int]
    GENERATION_FIELD_NUMBER: _ClassVar[int]
    HOPS_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    SOURCE_LID_FIELD_NUMBER: _ClassVar[int]
    complete: bool
    destination_lid: int
    generation: int
    hops: _containers.RepeatedCompositeFieldContainer[Hop]
    message: str
    source_lid: int
    def __init__(self, hops: _Optional[_Iterable[_Union[Hop, _Mapping]]] = ..., source_lid: _Optional[int] = ..., destination_lid: _Optional[int] = ..., complete: bool = ..., message: _Optional[str] = ..., generation: _Optional[int] = ...) -> None: ...

class TriggerSweepRequest(_message.Message):
    __slots__ = ["kind", "rebalance", "wait"]
    KIND_FIELD_NUMBER: _ClassVar[int]
    REBALANCE_FIELD_NUMBER: _ClassVar[int]
    WAIT_FIELD_NUMBER: _ClassVar[int]
    kind: SweepKind
    rebalance: bool
    wait: bool
    def __init__(self, kind: _Optional[_Union[SweepKind, str]] = ..., wait: bool = ..., rebalance: bool = ...) -> None: ...

class TriggerSweepResponse(_message.Message):
    __slots__ = ["generation", "sweep"]
    GENERATION_FIELD_NUMBER: _ClassVar[int]
    SWEEP_FIELD_NUMBER: _ClassVar[int]
    generation: int
    sweep: SweepSummary
    def __init__(self, sweep: _Optional[_Union[SweepSummary, _Mapping]] = ..., generation: _Optional[int] = ...) -> None: ...

class UnhealthyPort(_message.Message):
    __slots__ = ["cause", "errors_per_minute", "isolations", "link_downs", "node_guid", "node_name", "peer_guid", "peer_name", "peer_port", "port", "reason", "since", "status", "until"]
    CAUSE_FIELD_NUMBER: _ClassVar[int]
    ERRORS_PER_MINUTE_FIELD_NUMBER: _ClassVar[int]
    ISOLATIONS_FIELD_NUMBER: _ClassVar[int]
    LINK_DOWNS_FIELD_NUMBER: _ClassVar[int]
    NODE_GUID_FIELD_NUMBER: _ClassVar[int]
    NODE_NAME_FIELD_NUMBER: _ClassVar[int]
    PEER_GUID_FIELD_NUMBER: _ClassVar[int]
    PEER_NAME_FIELD_NUMBER: _ClassVar[int]
    PEER_PORT_FIELD_NUMBER: _ClassVar[int]
    PORT_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    SINCE_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    UNTIL_FIELD_NUMBER: _ClassVar[int]
    cause: HealthCause
    errors_per_minute: float
    isolations: int
    link_downs: _containers.RepeatedCompositeFieldContainer[_timestamp_pb2.Timestamp]
    node_guid: int
    node_name: str
    peer_guid: int
    peer_name: str
    peer_port: int
    port: int
    reason: str
    since: _timestamp_pb2.Timestamp
    status: HealthStatus
    until: _timestamp_pb2.Timestamp
    def __init__(self, node_guid: _Optional[int] = ..., node_name: _Optional[str] = ..., port: _Optional[int] = ..., peer_guid: _Optional[int] = ..., peer_name: _Optional[str] = ..., peer_port: _Optional[int] = ..., status: _Optional[_Union[HealthStatus, str]] = ..., cause: _Optional[_Union[HealthCause, str]] = ..., reason: _Optional[str] = ..., link_downs: _Optional[_Iterable[_Union[_timestamp_pb2.Timestamp, _Mapping]]] = ..., errors_per_minute: _Optional[float] = ..., since: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., until: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., isolations: _Optional[int] = ...) -> None: ...

class VerifyRoutingRequest(_message.Message):
    __slots__ = ["read_back"]
    READ_BACK_FIELD_NUMBER: _ClassVar[int]
    read_back: bool
    def __init__(self, read_back: bool = ...) -> None: ...

class VerifyRoutingResponse(_message.Message):
    __slots__ = ["cdg_channels", "cdg_dependencies", "duration_us", "generation", "message", "pairs_checked", "pairs_unrouted", "read_back", "shared", "switches", "verdict", "virtual_lanes"]
    CDG_CHANNELS_FIELD_NUMBER: _ClassVar[int]
    CDG_DEPENDENCIES_FIELD_NUMBER: _ClassVar[int]
    DURATION_US_FIELD_NUMBER: _ClassVar[int]
    GENERATION_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    PAIRS_CHECKED_FIELD_NUMBER: _ClassVar[int]
    PAIRS_UNROUTED_FIELD_NUMBER: _ClassVar[int]
    READ_BACK_FIELD_NUMBER: _ClassVar[int]
    SHARED_FIELD_NUMBER: _ClassVar[int]
    SWITCHES_FIELD_NUMBER: _ClassVar[int]
    VERDICT_FIELD_NUMBER: _ClassVar[int]
    VIRTUAL_LANES_FIELD_NUMBER: _ClassVar[int]
    cdg_channels: int
    cdg_dependencies: int
    duration_us: int
    generation: int
    message: str
    pairs_checked: int
    pairs_unrouted: int
    read_back: ReadBack
    shared: bool
    switches: int
    verdict: Verdict
    virtual_lanes: int
    def __init__(self, verdict: _Optional[_Union[Verdict, str]] = ..., message: _Optional[str] = ..., pairs_checked: _Optional[int] = ..., pairs_unrouted: _Optional[int] = ..., switches: _Optional[int] = ..., virtual_lanes: _Optional[int] = ..., cdg_channels: _Optional[int] = ..., cdg_dependencies: _Optional[int] = ..., duration_us: _Optional[int] = ..., generation: _Optional[int] = ..., shared: bool = ..., read_back: _Optional[_Union[ReadBack, _Mapping]] = ...) -> None: ...

class WatchEventsRequest(_message.Message):
    __slots__ = ["from_event_id", "kinds"]
    FROM_EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    KINDS_FIELD_NUMBER: _ClassVar[int]
    from_event_id: int
    kinds: _containers.RepeatedScalarFieldContainer[EventKind]
    def __init__(self, from_event_id: _Optional[int] = ..., kinds: _Optional[_Iterable[_Union[EventKind, str]]] = ...) -> None: ...

class NodeType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class PortState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class LinkSpeed(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class SmState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class Verdict(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class SweepKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class SweepOutcome(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class EventKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class PortAdminState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class SimState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class CablingFindingKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class HealthStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class HealthCause(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []
