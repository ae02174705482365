#pragma once
// SA wire codec: Subnet Administration MADs (management class 0x03, class
// version 2; IBA vol. 1, 13.6 and 15.2): the common MAD header, the RMPP
// header (13.6.2) and the SA header, and the records the SA serves, with the
// component masks that select them.
//
// Records stay in wire form (a byte string of the record's size) and are
// described by a table of components: component i of a record is the i-th
// field of its layout, reserved fields included, which is what bit i of a
// ComponentMask names (IBA 15.2.4). Matching a query is then one generic
// comparison of the masked components (sa::matches), and a record built by
// the SA agent is compared with a template exactly as the client wrote it.
//
// Contract, as for the SMP codec:
//  - decode_sa() never reads outside the given span and rejects malformed
//    bytes with Errc::kMalformedMad naming the field;
//  - encode_sa(decode_sa(b)) == b for every valid b (reserved bytes aside);
//  - record layouts are byte-exact; tests/unit/sa_codec_test.cpp checks them
//    against libibmad's field table where it has them.

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "discovery/mad/smp.hpp"
#include "routing/result.hpp"

namespace subnetd::discovery::mad::sa {

inline constexpr std::uint8_t kMgmtClass = 0x03;
inline constexpr std::uint8_t kClassVersion = 2;
inline constexpr std::size_t kMadSize = 256;
inline constexpr std::size_t kHeaderSize = 56;  // common 24 + RMPP 12 + SA 20
inline constexpr std::size_t kDataSize = 200;   // record bytes in one MAD

enum class Method : std::uint8_t {
  kGet = 0x01,
  kSet = 0x02,
  kReport = 0x06,
  kGetTable = 0x12,
  kGetTraceTable = 0x13,
  kGetMulti = 0x14,
  kDelete = 0x15,
  kGetResp = 0x81,
  kReportResp = 0x86,
  kGetTableResp = 0x92,
  kGetMultiResp = 0x94,
  kDeleteResp = 0x95,
};
const char* method_name(std::uint8_t method);

enum class Attr : std::uint16_t {
  kClassPortInfo = 0x0001,
  kNotice = 0x0002,
  kInformInfo = 0x0003,
  kNodeRecord = 0x0011,
  kPortInfoRecord = 0x0012,
  kSlToVlTableRecord = 0x0013,
  kSwitchInfoRecord = 0x0014,
  kLftRecord = 0x0015,
  kMftRecord = 0x0017,
  kSmInfoRecord = 0x0018,
  kLinkRecord = 0x0020,
  kGuidInfoRecord = 0x0030,
  kServiceRecord = 0x0031,
  kPKeyTableRecord = 0x0033,
  kPathRecord = 0x0035,
  kVlArbTableRecord = 0x0036,
  kMcMemberRecord = 0x0038,
  kMultiPathRecord = 0x003A,
  kInformInfoRecord = 0x00F3,
};
const char* attr_name(std::uint16_t attr);

// MAD status: the common values every class shares (IBA 13.4.7, in
// smp.hpp: kOk, kBadVersion, kMethodUnsupported, kMethodAttrUnsupported,
// kInvalidField) and the SA's class-specific codes in bits 8-14 (IBA
// 15.2.1.1).
namespace status {
using namespace ::subnetd::discovery::mad::status;
inline constexpr std::uint16_t kNoResources = 0x0100;
inline constexpr std::uint16_t kReqInvalid = 0x0200;
inline constexpr std::uint16_t kNoRecords = 0x0300;
inline constexpr std::uint16_t kTooManyRecords = 0x0400;
inline constexpr std::uint16_t kInvalidGid = 0x0500;
inline constexpr std::uint16_t kInsufficientComponents = 0x0600;
inline constexpr std::uint16_t kDenied = 0x0700;
}  // namespace status

// RMPP (IBA 13.6.2): how a GetTable answer longer than one MAD travels.
namespace rmpp {
inline constexpr std::uint8_t kVersion = 1;
inline constexpr std::uint8_t kTypeData = 1;
inline constexpr std::uint8_t kTypeAck = 2;
inline constexpr std::uint8_t kTypeStop = 3;
inline constexpr std::uint8_t kTypeAbort = 4;
inline constexpr std::uint8_t kFlagActive = 0x1;
inline constexpr std::uint8_t kFlagFirst = 0x2;
inline constexpr std::uint8_t kFlagLast = 0x4;
}  // namespace rmpp

struct RmppHeader {
  std::uint8_t version = 0;  // 0: not an RMPP transfer
  std::uint8_t type = 0;
  std::uint8_t resp_time = 0;  // 5 bits; 0x1F = none
  std::uint8_t flags = 0;      // 3 bits: active, first, last
  std::uint8_t status = 0;
  std::uint32_t data1 = 0;  // DATA: segment number (from 1)
  std::uint32_t data2 = 0;  // DATA: payload length (first, last); ACK: new window last
  bool operator==(const RmppHeader&) const = default;
};

struct SaMad {
  std::uint8_t base_version = 1;
  std::uint8_t class_version = kClassVersion;
  std::uint8_t method = static_cast<std::uint8_t>(Method::kGet);
  std::uint16_t status = 0;
  std::uint16_t class_specific = 0;
  std::uint64_t tid = 0;
  std::uint16_t attr_id = 0;
  std::uint32_t attr_mod = 0;
  RmppHeader rmpp;
  std::uint64_t sm_key = 0;
  std::uint16_t attr_offset = 0;  // record stride in 8-byte words (GetTable answers)
  std::uint64_t comp_mask = 0;
  std::array<std::uint8_t, kDataSize> data{};

  bool is_response() const { return (method & 0x80) != 0; }
  bool operator==(const SaMad&) const = default;
};

// Checks size >= 256, base version 1, class 0x03; the class version and the
// method are the agent's to judge (it answers a bad one with a status).
Result<SaMad> decode_sa(std::span<const std::uint8_t> bytes);
std::array<std::uint8_t, kMadSize> encode_sa(const SaMad& mad);

// One component of a record: `bits` bits from bit `offset` of the record,
// counted from the most significant bit of its first byte (IBA's order).
struct Component {
  const char* name;
  std::uint16_t offset;
  std::uint16_t bits;
};

struct RecordLayout {
  Attr attr;
  const char* name;
  std::uint16_t size;  // bytes on the wire
  std::span<const Component> components;
  // AttributeOffset of a GetTable answer: the size rounded up to 8 bytes.
  std::uint16_t attr_offset() const { return static_cast<std::uint16_t>((size + 7) / 8); }
};

// The layout of an SA record attribute, or null for one subnetd does not
// describe.
const RecordLayout* layout_of(std::uint16_t attr);

// Whether `record` agrees with `query` on every component `comp_mask`
// selects (both `layout.size` bytes). Bits past the last component are
// ignored, as IBA has them reserved.
bool matches(const RecordLayout& layout, std::uint64_t comp_mask,
             std::span<const std::uint8_t> query, std::span<const std::uint8_t> record);

// Reads and writes one component of a wire record (up to 64 bits; wider
// ones such as GIDs and NodeDescription are copied as bytes by the caller).
std::uint64_t get_field(std::span<const std::uint8_t> record, const Component& c);
void set_field(std::span<std::uint8_t> record, const Component& c, std::uint64_t value);
// The component of `layout` called `name` (a programming error when none).
const Component& component(const RecordLayout& layout, const char* name);

// The MADs of one answer: a single GetResp, or the segments of a GetTable
// answer (RMPP DATA packets, segment numbers from 1, payload length in the
// first and the last). `response` carries the header (method, status, TID,
// attribute, SA header); `records` holds the records back to back, each
// `attr_offset` x 8 bytes. An empty table is one segment with payload
// length 20 (the SA header alone) and no records, as IBA asks.
std::vector<std::array<std::uint8_t, kMadSize>> segment_table(
    const SaMad& response, std::span<const std::uint8_t> records);

// Reassembles the records of a segmented answer (for clients and tests):
// checks the segment numbers, flags and payload length.
Result<std::vector<std::uint8_t>> reassemble(
    std::span<const std::array<std::uint8_t, kMadSize>> segments);

}  // namespace subnetd::discovery::mad::sa
