#pragma once
// The ibnetdiscover / ibsim net-file format: reader, writer, ibsim sizing.
//
// Reader. Understands what ibsim 0.10 and `ibnetdiscover` produce:
//   vendid=0x2c9 / devid=0xbd36            (validated, not kept)
//   sysimgguid=0x...                        (system image GUID of the next node)
//   switchguid=0x...(...) / caguid= / hcaguids= / rtguid=
//                                           (GUID base of that node type, as in
//                                            ibsim: '=' absolute, '+' relative;
//                                            each switch takes one GUID, a CA or
//                                            router ports+1)
//   nodeguid=0x...                          (GUID of the next node only; ibsim
//                                            ignores this line)
//   width= / speed= / extspeed=             (default enabled width/speed)
//   Switch N "id" [# "desc" enhanced port 0 lid L lmc M]
//   Hca N "id" / Ca N "id" / Rt N "id"      [# "desc"]
//   [p](portguid) "remote-id"[q](guid) w=.. s=.. # "desc" lid L 4xQDR
//   include "file"                          (read_netfile only)
// Comments (#...) anywhere; a blank line ends every record. The record layout
// is strict where ibsim is lenient in a harmful way: a record must be ended by
// a blank line (ibsim silently swallows whatever line ends a record) and
// unknown lines are errors (ibsim ignores them). Aliases ('@'), `module=` and
// `do` lines are reported as unsupported.
//
// Nodes without a GUID line get ibsim's deterministic GUIDs (CAs from
// 0x100000, switches from 0x200000; routers from 0x300000 where ibsim would
// use 0). A node's description is the quoted text after '#' on its header, or
// its id — what ibsim answers to NodeDescription. Links may be listed on one
// side only (ibsim's own examples do) or on both, which must agree. Link width
// and speed are computed as ibsim does: the best mode both ends enable
// (defaults 4x SDR; "lid L 4xQDR" annotations and w=/s= options change them).
// Connected ports are INIT. LIDs from "lid L lmc M" annotations are kept on
// switch port 0 and on CA ports.
//
// Errors are "file:line: what" with Errc::kParse (syntax), kOutOfRange (port
// beyond the node's port count), kConflict (inconsistent link, duplicate node
// id or GUID), kNotFound (link to an unknown node), kUnsupported, kIo. Text
// from the file in a message (ids, lines) is escaped and cut with
// printable(). A loopback cable (two ports of one node linked to each other)
// is kept, as it would be found on real hardware: the simulator carries it,
// routing does not use it, and the SM reports it (Topology::loopback_cables).
//
// Writer. One record per node, CAs first — the first one whose port 1 is
// linked leads, because ibsim attaches the SM to the first port in the file —
// then routers, then switches, each in node order. Every record has its GUID
// line (caguid=/rtguid=/switchguid=, sysimgguid= when it differs), lists all
// linked ports (so each link appears from both ends) with a "# lid 0 4xQDR"
// annotation carrying width and speed (lid 0: no LIDs are pre-assigned), and
// ends with a blank line. A node's id is its description when that is a valid,
// unique ibsim id (1-64 chars, no '#', '@', '"' or control characters);
// otherwise "S-/H-/R-<guid>" with the description in a header comment.
// write_netfile(t) read back gives t's nodes, GUIDs, port GUIDs, links,
// widths and speeds (LIDs are not written).

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "routing/result.hpp"
#include "routing/topology.hpp"

namespace subnetd::discovery::topo {

// Reads a net file from disk; `include "f"` is resolved relative to the
// including file's directory (ibsim: relative to its working directory).
Result<routing::Topology> read_netfile(const std::string& path);

// Parses net-file text; `name` prefixes error locations (name:line). `include`
// lines are rejected (kUnsupported): there is no directory to resolve them in.
Result<routing::Topology> parse_netfile(std::string_view text, std::string_view name);

std::string write_netfile(const routing::Topology& topo);

// Writes write_netfile(topo) to `path` (kIo on failure).
Result<void> save_netfile(const routing::Topology& topo, const std::string& path);

// The command-line sizes ibsim needs for a topology (tests/opensm/README.md).
struct IbsimSizing {
  std::uint32_t nodes = 0;     // -N
  std::uint32_t switches = 0;  // -S
  std::uint32_t ports = 0;     // -P: a switch counts ports+1 (port 0), a CA its ports
  // -L LinearFDBCap, 0 = ibsim's default (30720 = 0x7800). Set to 49152 (the
  // whole 16-bit unicast range) when the fabric needs LIDs at or past 0x7800.
  std::uint32_t linear_fdb_cap = 0;
  // The LIDs a dense assignment needs: switches plus CA/router ports, times 2^lmc.
  std::uint64_t lids_needed = 0;

  // {"-N", "...", "-S", "...", "-P", "..."[, "-L", "..."]}
  std::vector<std::string> args() const;
};

inline constexpr std::uint32_t kIbsimDefaultLinearFdbCap = 0x7800;
inline constexpr std::uint32_t kIbsimFullLinearFdbCap = 0xC000;

IbsimSizing ibsim_sizing(const routing::Topology& topo, unsigned lmc = 0);

}  // namespace subnetd::discovery::topo
