"""The operations suite on ibsim, against the long-running daemon: the
performance manager's counters against perfquery (errors set with ibsim's
PerformanceSet and caused by its Error command), bring-up screening
against the ibsim net file and a YAML plan with two cables swapped,
/metrics parsed by prometheus_client, and the fault policy isolating a
flapping switch link. Called by interop_daemon.check_daemon.
"""
import json
import os
import re
import socket

from interop_lib import follow_events, log, subnetctl, subnetctl_json
from metrics_helpers import scrape, value


def free_port():
    """A TCP port nothing listens on now (for /metrics)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def perfquery(env, lid, port):
    """perfquery LID PORT as {field: int}; None when it fails."""
    rc, out, err = env.run(["perfquery", str(lid), str(port)])
    if rc != 0:
        return None
    fields = {}
    for line in out.splitlines():
        m = re.match(r"(\w+):\.+(\d+)$", line.strip())
        if m:
            fields[m.group(1)] = int(m.group(2))
    return fields


def check_counters(env, fab, ib, args, api_sock, workdir, where, fails):
    """The performance manager over ibsim's PMAs: errors set on a few
    switch ports with ibsim's console (PerformanceSet) reach subnetd (a
    counters event for each port) and subnetd's totals equal what
    perfquery reads from the same ports; data counters only grow."""
    links = fab.sw_links()[:3]
    if not links:
        return
    follow = follow_events(env, args, api_sock, workdir, "counter-events.log", where, fails)
    if follow is None:
        return
    try:
        wanted = []
        for i, (a, pa, _b, _pb) in enumerate(links):
            desc = fab.nodes[a]["desc"]
            sym, rcv = 5 + i, 2 + i
            ib.console('PerformanceSet "%s"[%d] PortCounters.SymbolErrorCounter=%d' % (desc, pa, sym))
            ib.console('PerformanceSet "%s"[%d] PortCounters.PortRcvErrors=%d' % (desc, pa, rcv))
            wanted.append((a, pa, desc, sym, rcv))
        for a, pa, desc, sym, rcv in wanted:
            # The two PerformanceSets may straddle a counter sweep: each
            # counters event for the port is a new look, until subnetd's
            # totals show both (or 30 s pass).
            seen, got, err, mine = 0, None, "", None
            while mine != (sym, rcv):
                ev = follow.wait(lambda e, a=a, pa=pa, seen=seen: e.get("kind") == "EVENT_KIND_COUNTERS"
                                 and int(e.get("node_guid", "0")) == a and e.get("port") == pa
                                 and int(e.get("id", "0")) > seen, 30)
                if ev is None:
                    break
                seen = int(ev.get("id", "0"))
                got, err = subnetctl(env, args, api_sock, ["counters", "0x%016x" % a, str(pa)])
                if got is None:
                    break
                total = got["ports"][0]["total"]
                mine = (int(total.get("symbol_errors", 0)), int(total.get("rcv_errors", 0)))
            if seen == 0:
                fails.add(where, "counters: no counters event for %s port %d within 30 s, see %s"
                          % (desc, pa, workdir))
                continue
            pq = perfquery(env, fab.lid_of[a], pa)
            if got is None or pq is None:
                fails.add(where, "counters: %s port %d: %s" % (desc, pa, err or "perfquery failed"))
                continue
            total = got["ports"][0]["total"]
            theirs = (pq.get("SymbolErrorCounter"), pq.get("PortRcvErrors"))
            if mine != (sym, rcv) or theirs != (sym, rcv):
                fails.add(where, "counters: %s port %d: symbol/receive errors subnetd %s, perfquery "
                          "%s, set %s" % (desc, pa, mine, theirs, (sym, rcv)))
            xmit = int(total.get("xmit_bytes", 0))
            if xmit > 4 * pq.get("PortXmitData", 0):
                fails.add(where, "counters: %s port %d: subnetd counted %d bytes sent, more than "
                          "perfquery's later %d words" % (desc, pa, xmit, pq.get("PortXmitData", 0)))
        log("  daemon: counters of %d switch ports: subnetd = perfquery after PerformanceSet"
            % len(wanted))
    finally:
        follow.close()


def check_error_rate(env, fab, ib, args, api_sock, workdir, sm_node, where, fails):
    """ibsim's console `Error` command: the switch port the SM's requests
    enter drops 5% of the packets it receives and counts each in its
    PortRcvErrors. subnetd's counter sweeps must see them (a counters event
    naming receive errors on that port) and never count more than
    perfquery reads afterwards. 5% leaves the SM's retries (3) enough."""
    if sm_node is None or (sm_node, 1) not in fab.links:
        return
    leaf, lp = fab.links[(sm_node, 1)]
    if fab.nodes[leaf]["type"] != "SW":
        return
    desc = fab.nodes[leaf]["desc"]
    follow = follow_events(env, args, api_sock, workdir, "error-rate-events.log", where, fails)
    if follow is None:
        return
    try:
        before = perfquery(env, fab.lid_of[leaf], lp) or {}
        ib.console('Error "%s"[%d] 5' % (desc, lp))
        ev = follow.wait(lambda e: e.get("kind") == "EVENT_KIND_COUNTERS"
                         and int(e.get("node_guid", "0")) == leaf and e.get("port") == lp
                         and "receive errors" in e.get("message", ""), 60)
        ib.console('Error "%s"[%d] 0' % (desc, lp))
        if ev is None:
            fails.add(where, "counters: no event naming receive errors on %s port %d within 60 s "
                      "of ibsim's Error command, see %s" % (desc, lp, workdir))
            return
        got, err = subnetctl(env, args, api_sock, ["counters", "0x%016x" % leaf, str(lp)])
        pq = perfquery(env, fab.lid_of[leaf], lp)
        if got is None or pq is None:
            fails.add(where, "counters: %s port %d: %s" % (desc, lp, err or "perfquery failed"))
            return
        mine = int(got["ports"][0]["total"].get("rcv_errors", 0))
        theirs = pq.get("PortRcvErrors", 0)
        if mine <= before.get("PortRcvErrors", 0) or mine > theirs:
            fails.add(where, "counters: %s port %d after ibsim's Error: subnetd counts %d receive "
                      "errors, perfquery %d before and %d after" % (desc, lp, mine,
                                                                  before.get("PortRcvErrors", 0), theirs))
            return
        log("  daemon: ibsim Error on %s port %d: %s; subnetd %d receive errors, perfquery %d"
            % (desc, lp, ev.get("message", ""), mine, theirs))
    finally:
        follow.close()


def check_cabling(env, fab, ib, args, api_sock, workdir, where, fails):
    """`subnetctl check cabling`: the ibsim net file the fabric was made
    from is a plan it matches (0 findings, widths and speeds included); a
    YAML plan of the fabric with two switch cables exchanged at one end
    gives exactly one `swapped` finding naming that switch."""
    plan = os.path.abspath(ib.netfile)
    doc, err = subnetctl_json(env, args, api_sock, ["check", "cabling", "--plan", plan])
    if doc is None or doc.get("findings"):
        fails.add(where, "cabling: the ibsim net file %s as the plan: %s" %
                  (plan, err or [f.get("message") for f in doc.get("findings", [])][:3]))
        return
    # Two cables of one switch exchanged at that switch, in a YAML plan.
    names = [v["desc"] for v in fab.nodes.values()]
    if len(set(names)) != len(names):
        log("  daemon: cabling: the net file matches; node descriptions repeat, no YAML plan")
        return
    sw_ports = {}
    for (a, pa), (b, pb) in fab.links.items():
        if fab.nodes[a]["type"] == "SW" and fab.nodes[b]["type"] == "SW":
            sw_ports.setdefault(a, []).append(pa)
    # The first two switch ports of a switch, if they lead to two
    # different switches (a swap between cables to one neighbour is
    # invisible).
    pick = next(((a, ps[:2]) for a, ps in ((a, sorted(ps)) for a, ps in sorted(sw_ports.items()))
                 if len(ps) >= 2 and len({fab.links[(a, p)][0] for p in ps[:2]}) == 2), None)
    if pick is None:
        log("  daemon: cabling: the net file matches; no switch with two switch neighbours")
        return
    sw, (p1, p2) = pick
    lines = ["nodes:"]
    for g, v in sorted(fab.nodes.items()):
        kind = "switch" if v["type"] == "SW" else "ca"
        lines.append('  - {name: %s, guid: %#x, type: %s}' % (json.dumps(v["desc"]), g, kind))
    lines.append("cables:")
    for (a, pa), (b, pb) in sorted(fab.links.items()):
        if (a, pa) > (b, pb):
            continue
        if a == sw and pa in (p1, p2):
            pa = p2 if pa == p1 else p1
        elif b == sw and pb in (p1, p2):
            pb = p2 if pb == p1 else p1
        lines.append("  - [%s, %s]" % (json.dumps("%s/%d" % (fab.nodes[a]["desc"], pa)),
                                       json.dumps("%s/%d" % (fab.nodes[b]["desc"], pb))))
    swapped = os.path.join(workdir, "swapped-plan.yaml")
    with open(swapped, "w") as f:
        f.write("\n".join(lines) + "\n")
    doc, err = subnetctl_json(env, args, api_sock, ["check", "cabling", "--plan", swapped])
    kinds = [f.get("kind") for f in (doc or {}).get("findings", [])]
    found = (doc or {}).get("findings", [{}])[0] if kinds else {}
    if kinds != ["CABLING_FINDING_KIND_SWAPPED"] or int(found.get("node_guid", "0")) != sw:
        fails.add(where, "cabling: %s ports %d and %d swapped in the plan: findings %s %s"
                  % (fab.nodes[sw]["desc"], p1, p2, kinds, err))
        return
    log("  daemon: cabling: the ibsim net file matches; a plan with %s ports %d/%d swapped: %s"
        % (fab.nodes[sw]["desc"], p1, p2, found.get("message", "")))


def check_metrics(addr, fab, where, fails):
    """/metrics of the daemon on ibsim, parsed: master, the fabric's
    switches and links, SMPs sent over umad."""
    try:
        m = scrape(addr)
    except Exception as e:  # parse errors, connection refused
        fails.add(where, "metrics: %s: %s" % (addr, e))
        return
    switches = sum(1 for v in fab.nodes.values() if v["type"] == "SW")
    links = len(fab.links) // 2
    want = {("subnetd_sm_state", (("state", "MASTER"),)): 1,
            ("subnetd_nodes", (("type", "switch"),)): switches,
            ("subnetd_links", (("state", "active"),)): links}
    bad = []
    for (name, labels), v in want.items():
        got = value(m, name, **dict(labels))
        if got != v:
            bad.append("%s%s = %s, want %s" % (name, dict(labels) or "", got, v))
    if (value(m, "subnetd_mads_sent_total") or 0) <= 0:
        bad.append("subnetd_mads_sent_total = %s" % value(m, "subnetd_mads_sent_total"))
    if bad:
        fails.add(where, "metrics: " + "; ".join(bad))
        return
    log("  daemon: /metrics parsed by prometheus_client: master, %d switches, %d links up, "
        "%d MADs sent" % (switches, links, value(m, "subnetd_mads_sent_total")))


def check_health(env, fab, ib, args, api_sock, workdir, metrics, unlinked, where, fails):
    """The fault policy on ibsim: a switch link unlinked three times
    (ibsim's Unlink/ReLink, each a trap 128) is isolated at its third down:
    subnetd disables the end nearer it by SMP (PortInfo shows PhysLinkState
    Disabled), `ports --unhealthy` lists it with its three downs, /metrics
    counts it; the operator's `port enable` ends the isolation and the
    relinked cable is swept in again. Where removing the link would cut
    endpoints off (a bridge of a random graph), the isolation must be
    refused instead. (ibsim keeps an SMP-disabled port's physical state
    until a ReLink, so the cable stays unlinked while isolated.) The links
    earlier checks left `unlinked` are relinked first: on a fabric of two
    switches the flapping link is otherwise their last, and a link whose
    far end the SM cannot reach any more is not a flap."""
    links = fab.sw_links()
    if not links:
        return
    a, pa, b, pb = links[-1]
    desc = fab.nodes[a]["desc"]
    follow = follow_events(env, args, api_sock, workdir, "health-events.log", where, fails)
    if follow is None:
        return
    def kind(k, after=0):
        return lambda e: e.get("kind") == k and int(e.get("id", "0")) > after
    try:
        last = 0
        for g, p in unlinked:
            ib.console('ReLink "%s"' % fab.nodes[g]["desc"])
            up = follow.wait(lambda e: e.get("kind") == "EVENT_KIND_LINK_UP" and
                             int(e.get("id", "0")) > last and int(e.get("node_guid", "0")) in
                             (g, fab.links[(g, p)][0]), 30)
            if up is None:
                fails.add(where, "health: %s[%d], relinked, not swept in within 30 s"
                          % (fab.nodes[g]["desc"], p))
                return
            last = int(up.get("id", "0"))
        verdict = None
        for flap in range(1, 4):
            ib.console('Unlink "%s"[%d]' % (desc, pa))
            if flap < 3:
                # Each down seen before the cable returns, each return swept
                # in before the next down (the stream is read from its start:
                # every wait is for an event after the last one).
                # The cable returns once the SM has acted on the down (the
                # fast path's reroute, or the sweep of a refused repair):
                # a ReLink before that sweep's discovery would leave it
                # nothing to see, neither the down nor the return.
                down = follow.wait(kind("EVENT_KIND_LINK_DOWN", last), 30)
                acted = up = None
                if down is not None:
                    last = int(down.get("id", "0"))
                    acted = follow.wait(lambda e: e.get("kind") in ("EVENT_KIND_REROUTE",
                                                                    "EVENT_KIND_SWEEP") and
                                        int(e.get("id", "0")) > last, 30)
                if acted is not None:
                    last = int(acted.get("id", "0"))
                    ib.console('ReLink "%s"' % desc)
                    up = follow.wait(kind("EVENT_KIND_LINK_UP", last), 30)
                if up is None:
                    what = "down" if down is None else "repair" if acted is None else "return"
                    fails.add(where, "health: flap %d of %s[%d]: link %s not seen within 30 s"
                              % (flap, desc, pa, what))
                    return
                last = int(up.get("id", "0"))
            else:
                verdict = follow.wait(lambda e: e.get("kind") == "EVENT_KIND_PORT_HEALTH" and
                                      int(e.get("id", "0")) > last and
                                      re.search(r"isolated|refused", e.get("message", "")), 30)
        if verdict is None:
            fails.add(where, "health: no isolation (or refusal) of %s[%d] after 3 downs, see %s"
                      % (desc, pa, workdir))
            return
        message = verdict.get("message", "")
        if "refused" in message:
            ib.console('ReLink "%s"' % desc)
            log("  daemon: health: isolating %s[%d] refused: %s" % (desc, pa, message))
            return
        doc, err = subnetctl(env, args, api_sock, ["ports", "--unhealthy"])
        ports = (doc or {}).get("ports", [])
        if len(ports) != 1 or ports[0].get("status") != "HEALTH_STATUS_ISOLATED" or \
                len(ports[0].get("link_downs", [])) != 3:
            fails.add(where, "health: ports --unhealthy after isolating %s[%d]: %s %s"
                      % (desc, pa, doc, err))
            return
        near, near_port = int(ports[0]["node_guid"]), ports[0]["port"]
        lid = fab.lid_of.get(near)
        rc, out, _ = env.run(["smpquery", "portinfo", str(lid), str(near_port)])
        if rc != 0 or not re.search(r"PhysLinkState:\.+Disabled", out):
            fails.add(where, "health: %s port %d not disabled by SMP: %s"
                      % (fab.nodes[near]["desc"], near_port, out.strip()[-300:]))
            return
        m = scrape(metrics)
        isolated = value(m, "subnetd_unhealthy_links", status="isolated")
        if isolated != 1:
            fails.add(where, "health: /metrics subnetd_unhealthy_links{status=isolated} = %s"
                      % isolated)
        # The operator returns it; the cable comes back.
        last = int(verdict.get("id", "0"))
        doc, err = subnetctl(env, args, api_sock, ["port", "enable", "%#x" % near, str(near_port)])
        if doc is None:
            fails.add(where, "health: port enable: %s" % err)
            return
        ib.console('ReLink "%s"' % desc)
        up = follow.wait(kind("EVENT_KIND_LINK_UP", last), 30)
        doc, err = subnetctl(env, args, api_sock, ["ports", "--unhealthy"])
        if up is None or doc is None or doc.get("ports"):
            fails.add(where, "health: after port enable and ReLink: link up %s, unhealthy %s %s"
                      % (up is not None, doc, err))
            return
        log("  daemon: %s; PhysLinkState Disabled on %s port %d; port enable and "
            "ReLink bring it back" % (message, fab.nodes[near]["desc"], near_port))
    finally:
        follow.close()
