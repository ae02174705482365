#!/bin/bash
# once_families.sh SUBNETD
#
# Runs the real binary: `subnetd --config F --once` on the embedded simulator
# for every topology generator family and every ibsim example net file, and
# checks the exit code and the summary (switch and CA counts against what the
# spec or the net file says, the verified line, nothing unreachable). Then the
# ways it must fail: minhop on a ring (verification, nothing programmed), a bad
# config key, a bad topology spec, a missing net file, a missing config; and
# a second run on the same store keeps every LID.
#
# Exit 0 when every check passed; prints one line per check.
set -u
subnetd=${1:?usage: $0 SUBNETD}
work=$(mktemp -d "${TMPDIR:-/tmp}/subnetd_once.XXXXXX")
trap 'rm -rf "$work"' EXIT
failures=0

fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

# config TOPOLOGY [extra yaml lines...] -> path of a fresh config file with
# its own store (called in $(...), so no counters: mktemp names it)
config() {
  local f
  f=$(mktemp "$work/c.XXXXXX")
  {
    echo "fabric:"
    echo "  transport: sim"
    echo "  topology: \"$1\""
    echo "store:"
    echo "  path: $f.db"
    shift
    for line in "$@"; do echo "$line"; done
  } > "$f"
  echo "$f"
}

# expect_up NAME TOPOLOGY SWITCHES CAS [subnetd args...]; the config gets the
# lines in extra_yaml too.
extra_yaml=()
expect_up() {
  local name=$1 topo=$2 sw=$3 cas=$4
  shift 4
  local cfg out rc
  cfg=$(config "$topo" "${extra_yaml[@]}")
  out=$("$subnetd" --config "$cfg" --once "$@" 2>&1)
  rc=$?
  if [ $rc -ne 0 ]; then
    fail "$name: exit $rc: $(echo "$out" | head -3)"
    return
  fi
  local head
  head=$(echo "$out" | grep -m1 '^subnet up on sim: ')
  if ! [[ "$head" =~ ^subnet\ up\ on\ sim:\ ([0-9]+)\ switches,\ ([0-9]+)\ CAs ]]; then
    fail "$name: no summary line in: $(echo "$out" | head -3)"
    return
  fi
  [ "${BASH_REMATCH[1]}" = "$sw" ] || fail "$name: ${BASH_REMATCH[1]} switches, expected $sw"
  [ "${BASH_REMATCH[2]}" = "$cas" ] || fail "$name: ${BASH_REMATCH[2]} CAs, expected $cas"
  echo "$out" | grep -q '^  verified: complete, loop-free, deadlock-free' ||
    fail "$name: no verified line"
  echo "$out" | grep -q ' 0 unreachable$' || fail "$name: something unreachable"
  echo "$out" | grep -q '^  unreachable:\|^  warning:' && fail "$name: unreachable/warnings listed"
  echo "ok: $name: $head"
}

# expect_fail NAME RC PATTERN CONFIG [subnetd args...]
expect_fail() {
  local name=$1 want_rc=$2 pattern=$3 cfg=$4
  shift 4
  local out rc
  out=$("$subnetd" --config "$cfg" --once "$@" 2>&1)
  rc=$?
  if [ $rc -ne "$want_rc" ]; then
    fail "$name: exit $rc, expected $want_rc: $(echo "$out" | head -3)"
  elif ! echo "$out" | grep -q -- "$pattern"; then
    fail "$name: message does not match '$pattern': $(echo "$out" | head -3)"
  else
    echo "ok: $name: exit $rc: $(echo "$out" | head -1)"
  fi
}

# Every generator family (switches and CAs from the spec's formulas; see
# discovery/topo/generators.hpp).
expect_up fat-tree-2 "fat-tree:levels=2,radix=8" 12 32
expect_up fat-tree-2-dual "fat-tree:levels=2,radix=6,ca_ports=2" 9 9
expect_up fat-tree-3 "fat-tree:levels=3,k=4" 20 16
expect_up fat-tree-3-k16 "fat-tree:levels=3,k=16" 320 1024
expect_up pgft "pgft:h=2,m=4.4,w=1.4,p=1.2" 8 16
expect_up torus-2d "torus:dims=4x4" 16 16
expect_up torus-3d "torus:dims=3x3x3" 27 27
expect_up mesh "mesh:dims=3x4,hosts=2" 12 24
expect_up ring "ring:switches=6,hosts=2" 6 12
expect_up dragonfly "dragonfly:a=4,p=2,h=2,g=5" 20 40
expect_up random "random:switches=16,degree=4,hosts=2,seed=7" 16 32
expect_up random-200 "random:switches=200,degree=8,hosts=8,seed=1" 200 1600
for e in minhop updn auto; do
  expect_up "fat-tree-3/$e" "fat-tree:levels=3,k=4" 20 16 --engine "$e"
done
extra_yaml=("addressing:" "  lmc: 2")
expect_up "random/lmc2" "random:switches=16,degree=4,hosts=2,seed=7" 16 32
extra_yaml=("addressing:" "  lid_bits: 24")
expect_up "torus-3d/24bit" "torus:dims=3x3x3" 27 27
extra_yaml=()

# Every ibsim example net file (switches and CAs counted from its records).
examples=/usr/share/doc/ibsim-utils/net-examples
if [ -d "$examples" ]; then
  for f in "$examples"/net*; do
    sw=$(grep -c '^Switch' "$f")
    cas=$(grep -cE '^(Hca|Ca)' "$f")
    expect_up "$(basename "$f")" "$f" "$sw" "$cas"
  done
else
  echo "skip: $examples not installed"
fi

# Dump files for ibdmchk.
cfg=$(config "torus:dims=3x3")
if "$subnetd" --config "$cfg" --once --dump-dir "$work/dump" > /dev/null 2>&1 &&
  [ -s "$work/dump/opensm-subnet.lst" ] && [ -s "$work/dump/opensm.fdbs" ] &&
  [ -e "$work/dump/opensm.mcfdbs" ] && grep -q '^dump_ucast_routes: Switch 0x' "$work/dump/opensm.fdbs" &&
  grep -q '^{ CA-SM Ports:' "$work/dump/opensm-subnet.lst"; then
  echo "ok: --dump-dir writes opensm-subnet.lst (SM's CA as CA-SM), opensm.fdbs, opensm.mcfdbs"
else
  fail "--dump-dir: dump files missing or not in dump_ucast_routes layout"
fi

# A second run on the same store: every LID remembered, none changed.
cfg=$(config "fat-tree:levels=3,k=4")
first=$("$subnetd" --config "$cfg" --once 2>&1 | grep '^  LIDs:')
second=$("$subnetd" --config "$cfg" --once 2>&1 | grep '^  LIDs:')
if [[ "$first" == *" 36 changed,"* && "$second" == *" 0 changed,"* ]]; then
  echo "ok: store keeps LIDs: '$first' then '$second'"
else
  fail "store: first '$first', second '$second'"
fi

# The grid placement is kept in the store. A second run places the torus
# as the store says: here with every ring turned by one, as if it had been
# placed so before a switch died; the run keeps that placement (routing
# afresh would write the canonical one back). A placement that cannot be
# read is placed afresh, with a warning, and written over.
grid_rows() {
  python3 -c 'import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
if len(sys.argv) > 2: db.executescript(sys.argv[2])
print(db.execute("SELECT group_concat(node_guid || \":\" || dim || \"=\" || pos, \" \") FROM "
                 "(SELECT * FROM grid_switches ORDER BY node_guid, dim)").fetchone()[0])' "$@"
}
cfg=$(config "torus:dims=4x4" "routing:" "  engine: layered")
"$subnetd" --config "$cfg" --once > /dev/null 2>&1
canonical=$(grid_rows "$cfg.db")
turned=$(grid_rows "$cfg.db" "UPDATE grid_switches SET pos = (pos + 1) %
  (SELECT size FROM grid_dimensions d WHERE d.dim = grid_switches.dim)")
out=$("$subnetd" --config "$cfg" --once 2>&1)
rc=$?
again=$(grid_rows "$cfg.db")
if [ $rc -eq 0 ] && [ -n "$canonical" ] && [ "$canonical" != "None" ] &&
  [ "$turned" != "$canonical" ] && [ "$again" = "$turned" ]; then
  echo "ok: store keeps the grid placement across a restart (${again:0:40}...)"
else
  fail "grid placement: exit $rc, canonical '${canonical:0:60}', turned '${turned:0:60}', after '${again:0:60}'"
fi
grid_rows "$cfg.db" "UPDATE grid_switches SET pos = 9 WHERE dim = 1 AND pos = 0" > /dev/null
out=$("$subnetd" --config "$cfg" --once 2>&1)
rc=$?
again=$(grid_rows "$cfg.db")
if [ $rc -eq 0 ] && echo "$out" | grep -q "the grid placement: grid_switches puts switch 0x[0-9a-f]* at 9 on dimension 1 of size [0-9]*; the grid is placed afresh" &&
  [ "$again" = "$canonical" ]; then
  echo "ok: a broken grid placement is named, placed afresh and written over"
else
  fail "broken grid placement: exit $rc, after '${again:0:60}': $(echo "$out" | grep -m1 grid)"
fi

# A grid seed (routing.grid_seed) places the grid: its origin at 0 on
# every dimension, said in the routing notes; one that does not fit is said
# too, and the grid placed as before.
seed="[0x0002c9000000000c, 0x0002c90000000011, 0x0002c9000000000d]"
cfg=$(config "torus:dims=5x5" "routing:" "  engine: layered" "  grid_seed: $seed")
out=$("$subnetd" --config "$cfg" --once 2>&1)
origin=$((0x0002c9000000000c))
if echo "$out" | grep -q "^  routing note: layered: the grid placed by its seed (switch 0x0002c9000000000c at the origin)" &&
  [[ " $(grid_rows "$cfg.db") " == *" $origin:0=0 $origin:1=0 "* ]]; then
  echo "ok: routing.grid_seed puts its origin at 0"
else
  fail "grid seed: $(echo "$out" | grep -m1 'routing note') / $(grid_rows "$cfg.db" | cut -c1-80)"
fi
cfg=$(config "torus:dims=5x5" "routing:" "  engine: layered" "  grid_seed: [0x0002c9000000000c, 0x0002c90000000012]")
out=$("$subnetd" --config "$cfg" --once 2>&1)
if echo "$out" | grep -q "^  routing note: layered: the grid seed was not applied (2 switches named; the 5x5 torus needs 3: the origin and its neighbour along each dimension): the grid placed canonically"; then
  echo "ok: a grid seed that does not fit is said"
else
  fail "grid seed that does not fit: $(echo "$out" | grep -m1 'routing note')"
fi

# The ways it must fail, each with a clear message.
expect_fail minhop-ring 1 "verification failed: .*credit loop.*nothing was programmed" \
  "$(config "ring:switches=6,hosts=2")" --engine minhop
expect_fail minhop-torus-2d 1 "verification failed: .*credit loop" \
  "$(config "torus:dims=4x4")" --engine minhop
expect_fail lids-exhausted 1 "LID assignment failed: .*LIDs needed.*holds 49151" \
  "$(config "fat-tree:levels=2,radix=32,hosts=384" "addressing:" "  lmc: 7")"
expect_fail bad-key 3 "c\.[A-Za-z0-9]*:7:3: routing.engin: unknown key" \
  "$(config "ring:switches=4" "routing:" "  engin: updn")"
expect_fail bad-engine 3 "routing.engine: unknown engine" \
  "$(config "ring:switches=4" "routing:" "  engine: fastest")"
# A bad generator spec is a config error (exit 3) at the value's file:line:col.
expect_fail bad-spec 3 "c\.[A-Za-z0-9]*:3:13: fabric.topology: fat-tree" "$(config "fat-tree:levels=9,k=4")"
expect_fail bad-family 3 "c\.[A-Za-z0-9]*:3:13: fabric.topology: .*hypercube" "$(config "hypercube:dims=4")"
expect_fail missing-netfile 5 "$work/no/such.net" "$(config "$work/no/such.net")"
printf 'Switch 4 "s"\n[1] "h"[1]\n\nHca 1 "h"\n[1] "s"[7]\n\n' > "$work/bad.net"
expect_fail bad-netfile 5 "bad.net:[0-9]*:" "$(config "$work/bad.net")"
expect_fail missing-config 3 "$work/none.yaml" "$work/none.yaml"
expect_fail bad-cli-engine 3 "unknown engine \"fastest\"" "$(config "ring:switches=4")" --engine fastest

if [ $failures -ne 0 ]; then
  echo "$failures check(s) failed"
  exit 1
fi
echo "all checks passed"
