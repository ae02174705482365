#pragma once
// OpenSM-compatible dump files, so ibutils' ibdmchk can check our routing for
// credit loops independently of our own verifier:
//   opensm-subnet.lst  one line per port-to-port link (both directions)
//   opensm.fdbs        unicast LFTs in OpenSM's dump_ucast_routes format
//                      ("0x0004 : 003  : 02   : yes": LID, port, hops the
//                      route takes, whether that is a least-hop path), the
//                      format ibdmchk -f parses
//   opensm.mcfdbs      multicast FDBs (OpenSM's dump_mcast_routes format:
//                      per switch "Switch 0x<guid>", then "0xC000 : 0x001
//                      0x003 " per MLID), what ibdmchk -m parses
//   opensm-path-sl.dump only when the routing uses VL layers: one line
//                      "0x<source node GUID> <DLID> <SL>" per CA/router
//                      port and CA/router LID, the SL of its layer, what
//                      ibdmchk -c parses (SL2VL: ibdmchk's default, the
//                      identity, is ours between switch ports). Its size is
//                      CA ports x CA LIDs lines: a small fabric's check,
//                      written up to kPathSlMaxLines (1,024 CAs with one
//                      LID each; 16,000 CAs would be 256 million lines,
//                      7.7 GB, built in memory on the SM strand).
//   opensm-sl2vl.dump  only when the VL changes hop by hop (dimension order
//                      with datelines, Routes::hop_vls): each switch's
//                      SL2VL for every (input, output) port pair, in
//                      OpenSM's format ("Switch 0x<port GUID>, base LID
//                      2, ..." then "in out : vl0 ... vl15" lines), what
//                      ibdmchk -d parses; without it ibdmchk takes SL i
//                      to VL i, as our tables do between switch ports
//                      otherwise. Written with the path-SL file (and
//                      left out with it): switch ports x links lines.
// Formats: tests/opensm/README.md and OpenSM 3.3's osm_dump.c. The SM's own
// node is marked CA-SM / SW-SM when `sm_node` is given. Only meaningful for
// 16-bit LIDs (ibdmchk is an IBA tool); wider LIDs get more hex digits.

#include <cstdint>
#include <string>

#include "routing/lft.hpp"
#include "routing/lid_map.hpp"
#include "routing/mcast.hpp"
#include "routing/result.hpp"
#include "routing/topology.hpp"

namespace subnetd::daemon {

std::string format_subnet_lst(const routing::Topology& t, const routing::LidMap& lids,
                              NodeId sm_node = kNoNode);
std::string format_fdbs(const routing::Topology& t, const routing::LidMap& lids,
                        const routing::Routes& routes);
std::string format_mcfdbs(const routing::Topology& t, const routing::McastTables* multicast);
std::string format_sl2vl(const routing::Topology& t, const routing::LidMap& lids,
                         const routing::Routes& routes);
std::string format_path_sl(const routing::Topology& t, const routing::LidMap& lids,
                           const routing::Routes& routes);

inline constexpr std::uint64_t kPathSlMaxLines = std::uint64_t{1} << 20;

// Writes the files into `dir` (created if missing; a path-SL file left from
// layered routing is removed when the routing has one layer, or when the
// file would pass `path_sl_max_lines`: then, the other files written, an
// error of code kOutOfRange says so). Each file is written to a temporary
// name and renamed, so a reader never sees half a file.
Result<void> write_dump_files(const std::string& dir, const routing::Topology& t,
                              const routing::LidMap& lids, const routing::Routes& routes,
                              NodeId sm_node = kNoNode,
                              const routing::McastTables* multicast = nullptr,
                              std::uint64_t path_sl_max_lines = kPathSlMaxLines);

}  // namespace subnetd::daemon
