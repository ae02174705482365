#!/usr/bin/python3
"""subnetctl against a live subnetd: outputs, --json documents and exit codes.

usage: subnetctl_test.py --subnetctl BIN --socket PATH --addr HOST:PORT --token-file FILE

Run by run_with_subnetd.py --tcp (the daemon listens on the unix socket and
on TCP with a bearer token). Exits 0 when every check passes.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

# tests/proc_helpers.py, found from this file's place.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from proc_helpers import EventFollower  # noqa: E402

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print(f"FAIL: {what}")
    return cond


class Ctl:
    def __init__(self, binary, socket):
        self.binary = binary
        self.socket = socket

    def run(self, *args, socket=True, timeout=30):
        argv = [self.binary] + (["--socket", self.socket] if socket else []) + list(args)
        p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
        return p.returncode, p.stdout, p.stderr

    def ok(self, *args, **kw):
        code, out, err = self.run(*args, **kw)
        check(code == 0, f"subnetctl {' '.join(args)}: exit {code}: {err.strip()}")
        return out

    def json(self, *args):
        out = self.ok("--json", *args)
        try:
            return json.loads(out)
        except json.JSONDecodeError as e:
            check(False, f"subnetctl --json {' '.join(args)}: not one JSON document: {e}")
            return {}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--subnetctl", required=True)
    ap.add_argument("--socket", required=True)
    ap.add_argument("--addr", required=True)
    ap.add_argument("--token-file", required=True)
    a = ap.parse_args()
    ctl = Ctl(a.subnetctl, a.socket)

    # status, as a table and as JSON.
    out = ctl.ok("status")
    print(out)
    check("MASTER" in out, "status says MASTER")
    st = ctl.json("status")
    check(st.get("state") == "SM_STATE_MASTER", "status --json state")
    switches, cas = st.get("switches", 0), st.get("cas", 0)

    # nodes with filters; node; links; lft.
    sw = ctl.json("nodes", "--type", "switch")
    check(len(sw.get("nodes", [])) == switches, f"nodes --type switch: {switches} switches")
    names = [n["name"] for n in sw.get("nodes", [])]
    table = ctl.ok("nodes", "--type", "ca")
    check(table.splitlines()[0].split() == ["GUID", "TYPE", "LID", "PORTS", "NAME"], "nodes header")
    check(f"{cas} nodes" in table, "nodes prints a count")
    node = ctl.json("node", names[0])
    check(node.get("node", {}).get("name") == names[0], "node by name")
    check("Active" in ctl.ok("node", names[0]) or "Init" in ctl.ok("node", names[0]),
          "node shows port states")
    links = ctl.json("links")
    check(len(links.get("links", [])) == st.get("links"), "links --json count")
    lft = ctl.ok("lft", names[0])
    check("valid lids dumped" in lft, "lft prints an ibroute-style table")

    # trace between two CAs, ibtracert style.
    ca_nodes = ctl.json("nodes", "--type", "ca").get("nodes", [])
    src, dst = ca_nodes[0]["name"], ca_nodes[-1]["name"]
    out = ctl.ok("trace", src, dst)
    print(out)
    lines = out.strip().splitlines()
    check(lines[0].startswith("From ca {") and src in lines[0], "trace: From line")
    check(lines[-1].startswith("To ca {") and dst in lines[-1], "trace: To line")
    check(all(l.startswith("[") and "-> " in l for l in lines[1:-1]), "trace: hop lines")
    tr = ctl.json("trace", src, f"lid:{ca_nodes[-1]['lid']}")
    check(tr.get("complete") is True, "trace --json complete")

    # path: the PathRecord the SA answers for the same pair.
    out = ctl.ok("path", src, dst)
    print(out)
    check(out.splitlines()[0].split()[0] == "Source" and src in out, "path: Source line")
    pr = ctl.json("path", src, dst).get("path", {})
    check(pr.get("slid") == ca_nodes[0]["lid"] and pr.get("dlid") == ca_nodes[-1]["lid"],
          f"path --json LIDs: {pr}")
    check(pr.get("mtu") in (256, 512, 1024, 2048, 4096) and pr.get("pkey") == 0xFFFF,
          f"path --json MTU and P_Key: {pr}")
    check(pr.get("switch_hops") == len(tr.get("hops", [])) - 2,
          "path: switch hops agree with the trace")
    check("sa" in ctl.json("status"), "status --json carries the SA counters")

    # partitions and mcast: the default partition (every port a full
    # member) and its IPoIB broadcast group, created by the SM.
    out = ctl.ok("partitions")
    print(out)
    check("0x7fff" in out and "default" in out, "partitions: the default partition")
    parts = ctl.json("partitions", "0x7fff")
    members = parts.get("members", [])
    check(len(members) == parts.get("total_members") and len(members) >= len(ca_nodes),
          f"partitions 0x7fff: every endport a member ({len(members)})")
    check(all(m.get("full") for m in members), "partitions 0x7fff: full members")
    out = ctl.ok("mcast")
    print(out)
    groups = ctl.json("mcast").get("groups", [])
    check(len(groups) == 1 and groups[0].get("mgid") == "ff12:401b:ffff:0000:0000:0000:ffff:ffff"
          and groups[0].get("mlid") == 0xC000 and groups[0].get("well_known"),
          f"mcast: the IPoIB broadcast group of the default partition: {groups}")

    # verify, events, sweep.
    check(ctl.ok("verify").startswith("OK:"), "verify says OK")
    # verify --read-back: the switches' tables compared with the published
    # ones, or, while the SM cannot read back yet, a clear refusal.
    code, out, err = ctl.run("verify", "--read-back")
    if code == 0:
        check(out.startswith("OK:") and "\nread back: " in out, f"verify --read-back: {out}")
    else:
        check(code == 1 and "read-back" in err, f"verify --read-back: exit {code}: {err.strip()}")
    events = ctl.json("events", "--last", "50")
    check(isinstance(events, list) and len(events) > 0, "events --json is a non-empty list")
    check(any(e.get("kind") == "EVENT_KIND_SWEEP" for e in events), "a sweep event was logged")
    out = ctl.ok("sweep")
    check(out.startswith("sweep OK"), f"sweep: {out.strip()}")

    # A light sweep of the quiet fabric: every switch answers, nothing
    # changed, so no heavy sweep runs and nothing is published.
    generation = int(ctl.json("status").get("generation", "0"))
    out = ctl.ok("sweep", "--light")
    print(out)
    check(out.startswith(f"light sweep OK: no change; {switches} switches answered in "),
          f"sweep --light: {out.strip()}")
    check(out.rstrip().endswith(f"; generation {generation}"),
          f"sweep --light publishes nothing (generation {generation}): {out.strip()}")
    lj = ctl.json("sweep", "--light")
    check(lj.get("sweep", {}).get("kind") == "SWEEP_KIND_LIGHT", f"sweep --light --json: {lj}")
    check(int(lj.get("generation", "0")) == generation, "sweep --light --json generation")

    # Exit codes.
    code, _, err = ctl.run("node", "no-such-node")
    check(code == 3, f"unknown node: exit {code} (want 3): {err.strip()}")
    code, _, _ = ctl.run("frobnicate")
    check(code == 2, f"unknown command: exit {code} (want 2)")
    code, _, err = ctl.run("node", "0x0")
    check(code == 2, f"GUID 0: exit {code} (want 2): {err.strip()}")
    code, _, err = ctl.run("--socket", "/nonexistent/subnetd.sock", "status", socket=False)
    check(code == 5, f"no daemon: exit {code} (want 5): {err.strip()}")
    code, _, err = ctl.run("--addr", a.addr, "sweep", socket=False)
    check(code == 4, f"TCP sweep without a token: exit {code} (want 4): {err.strip()}")
    code, out, err = ctl.run("--addr", a.addr, "--token-file", a.token_file, "sweep", socket=False)
    check(code == 0, f"TCP sweep with the token: exit {code}: {err.strip()}")
    code, _, _ = ctl.run("--addr", a.addr, "status", socket=False)
    check(code == 0, "TCP reads need no token")

    # Pull a switch-to-switch cable through the simulator (not the SM's own
    # CA link, which would cut the SM off) and watch the event log report it.
    status = ctl.json("status")
    last = status.get("last_event_id", "0")
    sweeps_at_cut = int(status.get("sweeps", "0"))
    isl = [l for l in links.get("links", [])
           if l["a"].get("node_type") == "NODE_TYPE_SWITCH"
           and l["b"].get("node_type") == "NODE_TYPE_SWITCH"]
    if not check(isl, "the fabric has switch-to-switch links"):
        return 1
    cut_node, cut_port = isl[-1]["a"]["node_name"], str(isl[-1]["a"]["port"])
    far = f'{isl[-1]["b"]["node_name"]}[{isl[-1]["b"]["port"]}]'
    # `events --follow` from the next id: the daemon streams each event as it
    # is logged (what came before the follower started is replayed first).
    with tempfile.NamedTemporaryFile(prefix="subnetctl-events-", suffix=".log") as evlog:
        follow = EventFollower([ctl.binary, "--socket", ctl.socket], int(last) + 1, None,
                               evlog.name)
        try:
            out = ctl.ok("sim", "link-down", cut_node, cut_port)
            check(out.strip() == f"cable {cut_node}[{cut_port}] - {far} down",
                  f"sim link-down names the far end: {out.strip()}")
            seen = follow.wait(lambda e: e.get("kind") == "EVENT_KIND_LINK_DOWN", 20)
        finally:
            follow.close()
    check(seen is not None, "a link_down event after sim link-down")

    # The fast path repaired routing but leaves PortStateChange set on both
    # ends of the cable until the re-balancing heavy sweep (2 s after the
    # repair): a light sweep now finds it and runs that heavy sweep at once.
    # Only if the re-balancing sweep got there first does it find nothing.
    generation = int(ctl.json("status").get("generation", "0"))
    lj = ctl.json("sweep", "--light")
    sw = lj.get("sweep", {})
    st = ctl.json("status")
    if sw.get("kind") == "SWEEP_KIND_HEAVY":
        print(f"sweep --light after the cut: {sw.get('message')}")
        check(sw.get("outcome") == "SWEEP_OUTCOME_OK", f"the light sweep's heavy sweep: {sw}")
        check(sw.get("message", "").startswith("started by a light sweep: "),
              f"the heavy summary says what the light sweep found: {sw}")
        check(int(lj.get("generation", "0")) > generation, "the heavy sweep published")
        check(int(st.get("sweeps", "0")) > sweeps_at_cut, "the heavy sweep is counted")
    else:
        print("sweep --light after the cut: the re-balancing sweep came first")
        check(sw.get("kind") == "SWEEP_KIND_LIGHT", f"sweep --light --json: {lj}")
        check(int(st.get("sweeps", "0")) > sweeps_at_cut,
              "no change found only because a heavy sweep had already seen the cut")
    now_links = ctl.json("links").get("links", [])
    check(not any((l["a"].get("node_name"), l["a"].get("port")) == (cut_node, int(cut_port))
                  or (l["b"].get("node_name"), l["b"].get("port")) == (cut_node, int(cut_port))
                  for l in now_links),
          f"the swept links no longer have {cut_node}[{cut_port}]")
    # The published topology no longer has the cable; the far end is still
    # named (issue 12.9).
    out = ctl.ok("sim", "link-up", cut_node, cut_port)
    check(out.strip() == f"cable {cut_node}[{cut_port}] - {far} up",
          f"sim link-up names the far end: {out.strip()}")
    stats = ctl.json("sim", "stats")
    check(int(stats.get("smps_handled", "0")) > 0, "sim stats count SMPs")

    if failures:
        print(f"{len(failures)} check(s) failed")
        return 1
    print("subnetctl: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
