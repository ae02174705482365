"""The interop checks of the long-running daemon (`subnetd --config F` over
umad on ibsim): READY, sminfo, its gRPC answers against ibroute/ibtracert,
a power-cycled switch next to the SM, and the reroute after an `Unlink`
(see interop.py for the list), and the operations suite of
interop_ops.py. stdlib only; imported by interop.py.
"""
import base64
import os
import random
import re
import signal
import subprocess
import time

from ibsim_helpers import INTEROP_PKEY
from interop_lib import (SA_FIELD, Child, Fabric, Failures, follow_events, log, parse_sa_dump,
                         parse_sminfo, parse_tracert, subnetctl, subnetctl_json, trace_pairs)
from interop_ops import (check_cabling, check_counters, check_error_rate, check_health, check_metrics,
                         free_port)
from proc_helpers import NotifySocket


def check_daemon(env, fab, ib, args, workdir, cfg, api_sock, sm_lid, sm_node, where, fails):
    dump = os.path.join(workdir, "dump-daemon")
    notify = NotifySocket(os.path.join(os.path.dirname(api_sock), "notify.sock"))
    # The operations suite on: /metrics on a free local port, and a fault
    # policy that isolates a link at its third down (the power cycle and
    # the reroute below take links down once or twice).
    metrics = "127.0.0.1:%d" % free_port()
    daemon_cfg = os.path.join(workdir, "subnetd-daemon.yaml")
    with open(cfg) as f, open(daemon_cfg, "w") as out:
        out.write(f.read() + "metrics:\n  listen: %s\n" % metrics +
                  "health:\n  flap_count: 3\n  flap_window: 10m\n  hold_down: 10m\n")
    d = Child([args.subnetd, "--config", daemon_cfg, "--dump-dir", dump], env,
              os.path.join(workdir, "daemon.log"), extra_env=notify.env)
    follows = []
    try:
        # READY=1 comes with the first MASTER state, after the dump files
        # were written and with the API socket listening.
        if notify.wait_for("READY=1", d.proc, 60) is None:
            fails.add(where, "daemon: not READY within 60 s (rc %s), see %s/daemon.log"
                      % (d.proc.poll(), workdir))
            return
        rc, out, err = env.run(["sminfo"])
        s = parse_sminfo(out)
        if rc != 0 or not s or s["state"] != 3 or s["lid"] != sm_lid:
            fails.add(where, "daemon: sminfo: rc %d %s %s" % (rc, out.strip(), err.strip()[-200:]))
        else:
            log("  daemon: sminfo: %s" % out.strip())
        check_sa(env, fab, where, fails)
        check_partitions(env, fab, sm_lid, where, fails)
        check_vl_tables(env, fab, where, fails)
        if args.mcast_join:
            check_multicast(env, fab, args, api_sock, sm_lid, workdir, dump, where, fails)
        check_grpc(env, fab, args, api_sock, where, fails)
        check_cabling(env, fab, ib, args, api_sock, workdir, where, fails)
        check_metrics(metrics, fab, where, fails)
        check_counters(env, fab, ib, args, api_sock, workdir, where, fails)
        check_error_rate(env, fab, ib, args, api_sock, workdir, sm_node, where, fails)
        check_power_cycle(env, fab, ib, args, workdir, api_sock, sm_lid, sm_node, where, fails)

        unlinked = []  # (node GUID, port) the checks unlinked and left so

        def reroute():
            # The switch-to-switch link that most CA pairs' paths cross (ties:
            # the first), so the reroute has something to prove.
            best = None
            for link in fab.sw_links():
                n = len(fab.pairs_using((link[0], link[1]), (link[2], link[3])))
                if best is None or n > best[0]:
                    best = (n, link)
            if not best:
                return
            a, pa, b, pb = best[1]
            cut = "%s[%d]" % (fab.nodes[a]["desc"], pa)
            affected = fab.pairs_using((a, pa), (b, pb))
            affected = affected[:args.sample]
            follow = follow_events(env, args, api_sock, workdir, "daemon-events.log", where,
                                   fails)
            if follow is None:
                return
            follows.append(follow)
            t0 = time.time()
            ib.console('Unlink "%s"[%d]' % (fab.nodes[a]["desc"], pa))
            unlinked.append((a, pa))
            # New tables: the fast path's reroute, or the heavy sweep that
            # replaces a refused repair.
            first = follow.wait(lambda e: e.get("kind") in ("EVENT_KIND_REROUTE", "EVENT_KIND_SWEEP"), 30)
            if first is None:
                fails.add(where, "daemon: no reroute or sweep within 30 s of Unlink %s, see %s/daemon.log"
                          % (cut, workdir))
                return
            took = time.time() - t0
            what = "reroute" if first["kind"] == "EVENT_KIND_REROUTE" else "heavy sweep"
            # After a reroute 20 traces: they finish before the re-balancing
            # sweep, which gets them all.
            own = 1 if fab.nodes.get(sm_node, {}).get("type") == "SW" else 0
            aside = check_new_tables(env, args, api_sock, dump, (a, pa), (b, pb), affected, where, fails,
                                     "after Unlink %s (%s)" % (cut, what), final=(what != "reroute"),
                                     traced=20 if what == "reroute" else None, silent_ok=own)
            log("  daemon: Unlink %s: %s after %.2f s" % (cut, what, took))
            if what == "reroute":
                # A heavy sweep re-balances 2 s after a repair; its tables must
                # avoid the cable too (and checks it overlapped are made again).
                first_id = int(first.get("id", "0"))
                sweep = follow.wait(lambda e: e.get("kind") == "EVENT_KIND_SWEEP"
                                    and int(e.get("id", "0")) > first_id, 30)
                if sweep is None:
                    fails.add(where, "daemon: no re-balancing sweep within 30 s of the reroute, see "
                              "%s/daemon.log" % workdir)
                    return
                check_new_tables(env, args, api_sock, dump, (a, pa), (b, pb), affected, where, fails,
                                 "after the re-balancing sweep" + (" (the reroute's checks overlapped it)"
                                                                   if aside else ""), final=True,
                                 silent_ok=own)

        reroute()
        if args.sa_client:
            # Last: it pulls a CA cable and puts it back.
            check_reports(env, fab, ib, args, sm_lid, where, fails)
        # Last: it leaves a link isolated.
        check_health(env, fab, ib, args, api_sock, workdir, metrics, unlinked, where, fails)
    finally:
        d.finish(sig=signal.SIGTERM)
        for f in follows:
            f.close()
        notify.close()


def client_cas(fab, sm_lid):
    """(node GUID, description, port-1 GUID) of every CA whose port 1 is
    cabled and has a LID, the SM's own port aside: where an SA client
    can run (SIM_HOST)."""
    cas = []
    for g, v in sorted(fab.nodes.items()):
        if v["type"] != "CA":
            continue
        pg = fab.port_guid.get((g, 1))
        if pg in fab.lid_of and (g, 1) in fab.links and fab.lid_of[pg] != sm_lid:
            cas.append((g, v["desc"], pg))
    return cas


def check_reports(env, fab, ib, args, sm_lid, where, fails):
    """An application on one simulated CA (sa_client under SIM_HOST)
    registers a ServiceRecord, which `saquery SR` then lists, and subscribes
    to notices (InformInfo); another CA's cable is pulled (ibsim Unlink) and
    put back (ReLink): the subscriber must get the Report of trap 65 (GID
    out of service) naming that port, then trap 64 (back in service), each
    from the SM, and acknowledge them."""
    cas = client_cas(fab, sm_lid)
    if len(cas) < 2:
        return
    sub, pulled = cas[0], cas[-1]
    rc, out, err = env.run([args.sa_client, "service", "0x1234", "interop-svc"],
                           extra_env={"SIM_HOST": sub[1]})
    if rc != 0 or "status 0x0000" not in out:
        fails.add(where, "daemon: sa_client service from %s: rc %d %s %s"
                  % (sub[1], rc, out.strip(), err.strip()[-200:]))
        return
    rc, out, err = env.run(["saquery", "SR"])
    if rc != 0 or "interop-svc" not in out:
        fails.add(where, "daemon: saquery SR does not list the service: rc %d %s %s"
                  % (rc, out.strip()[-300:], err.strip()[-200:]))
    logpath = os.path.join(env.scratch, "sa-client-subscribe.log")
    # --issm: ibsim gives requests on QP1 (a Report) only to a client that
    # holds the issm device.
    c = Child([args.sa_client, "subscribe", "--traps", "65,64", "--wait", "120", "--issm", "1"],
              env, logpath,
              extra_env={"SIM_HOST": sub[1]})
    try:
        if c.wait_line(r"subscribed status 0x0000", 30) is None:
            fails.add(where, "daemon: sa_client subscribe from %s: no subscription (see %s)"
                      % (sub[1], logpath))
            return
        ib.console('Unlink "%s"[1]' % pulled[1])
        gid = "gid 0x%016x" % pulled[2]
        if c.wait_line(r"report trap 65 issuer 0x%04x %s" % (sm_lid, gid), 60) is None:
            fails.add(where, "daemon: no trap 65 Report for %s within 60 s of Unlink (see %s)"
                      % (pulled[1], logpath))
            return
        ib.console('ReLink "%s"[1]' % pulled[1])
        if c.wait_line(r"report trap 64 issuer 0x%04x %s" % (sm_lid, gid), 60) is None:
            fails.add(where, "daemon: no trap 64 Report for %s within 60 s of ReLink (see %s)"
                      % (pulled[1], logpath))
            return
    finally:
        rc = c.finish(timeout=30)
    if rc != 0:
        fails.add(where, "daemon: sa_client subscribe exited %s (see %s)" % (rc, logpath))
        return
    log("  daemon: InformInfo: %s registered a service (saquery SR lists it), subscribed, and "
        "got Reports of trap 65 and 64 when %s's cable was pulled and put back"
        % (sub[1], pulled[1]))


def check_new_tables(env, args, api_sock, dump, end_a, end_b, pairs, where, fails, label, final,
                     traced=None, silent_ok=0):
    """After an event that announced new tables (the SM's handling of it has
    written the dump files and published them):
      a. the switches hold them: VerifyRouting with read-back, which the SM
         takes up after that step, compares every LFT block with them;
      b. the pairs' paths through them (the dump files) avoid the link
         end_a-end_b;
      c. ibtracert follows those paths hop by hop (the first `traced` pairs:
         each ibtracert is a process attaching to ibsim, tens of ms).
    A heavy sweep may start meanwhile (one re-balances 2 s after a reroute)
    and reprogram the switches under the checks. It publishes when it starts,
    so GetStatus after (a, b) and after (c) tells: when the generation moved,
    what the checks before found is set aside, unless `final` (then a moving
    generation is a failure itself). Returns True when something was set
    aside (the caller checks again after that sweep). `silent_ok`: switches
    the read-back may leave unread (1 when the SM sits on a switch: subnetd
    does not read back the switch it is on, whose directed route is empty)."""
    def status_generation():
        st, _ = subnetctl(env, args, api_sock, ["status"])
        return int(st.get("generation", "0")) if st else None

    def settle(found, g_before, what):
        g_now = status_generation()
        if g_before is not None and g_now == g_before:
            fails.merge(found)
            return False
        if final:
            fails.merge(found)
            fails.add(where, "daemon: the tables changed while %s were checked %s (generation %s -> %s)"
                      % (what, label, g_before, g_now))
            return False
        log("  daemon: %s: generation %s -> %s while %s were checked (a sweep overlapped), "
            "%d finding(s) set aside" % (label, g_before, g_now, what, len(found.items)))
        return True

    found = Failures(quiet=True)
    v, err = subnetctl_json(env, args, api_sock, ["verify", "--read-back"])
    g0 = int(v.get("generation", "0")) if v else None
    rb = (v or {}).get("read_back", {})
    if v is None:
        found.add(where, "daemon: " + err)
    elif v.get("verdict") != "VERDICT_OK" or int(rb.get("blocks_differ", "0")) != 0 \
            or rb.get("switches_silent", 0) > silent_ok:
        found.add(where, "daemon: verify --read-back %s: %s %s, %s switch(es) silent, %s" % (
            label, v.get("verdict"), v.get("message", ""), rb.get("switches_silent", 0),
            rb.get("differences", [])[:3]))
    after = Fabric(dump)
    ends = {end_a, end_b}
    for s_, t in pairs:
        hops = after.walk(s_, t)
        node, crossed = after.port_of_guid[s_][0], False
        for out_port, guid, _ in ([] if isinstance(hops, str) else hops):
            crossed |= (node, out_port) in ends
            node = guid
        if isinstance(hops, str) or crossed:
            found.add(where, "daemon: subnetd's tables %s: %d -> %d %s" % (
                label, after.lid_of[s_], after.lid_of[t], hops if isinstance(hops, str) else "crosses the link"))
    aside = settle(found, g0, "the read-back and the dump files")
    if not aside:
        log("  daemon: %s: read back %s LFT blocks of %s switches as published%s, the paths of %d "
            "affected pairs avoid the link" % (
                label, rb.get("blocks_read", 0), rb.get("switches", 0),
                " (not the SM's own switch)" if rb.get("switches_silent", 0) else "", len(pairs)))
    found = Failures(quiet=True)
    some = pairs[:traced] if traced is not None else pairs
    ok = trace_pairs(env, after, some, where, found, "ibtracert " + label)
    if not settle(found, g0, "the ibtracert paths"):
        log("  daemon: %s: ibtracert follows them for %d/%d pairs" % (label, ok, len(some)))
        return aside
    return True


def check_power_cycle(env, fab, ib, args, workdir, api_sock, sm_lid, sm_node, where, fails):
    """Issue 12.1 over ibsim: the switch next to the SM power-cycled, then a
    light sweep; afterwards the switch holds subnetd's table again (ibroute ==
    GetForwardingTable), verify --read-back finds no difference, and the SM
    said it found the switch without its tables.

    ibsim has no power cycle (see umad_reset_switch.cpp): it is composed of
    umad_reset_switch (LFT blocks emptied, LinearFDBTop 0, by SMP Sets to the
    switch's SMA, the state a reboot leaves them in) and ibsim's `Clear` (every
    port's PortInfo reset: LID, LMC and SMLid 0, links down) and `ReLink`
    (the links train again, to Init). The SM's own link goes down with it, and
    the switch's traps cannot reach the SM (its LID is 0, the table that led
    to the SM is gone): only a sweep can find it."""
    if fab.nodes.get(sm_node, {}).get("type") != "CA":
        log("  daemon: power cycle: skipped, the SM sits on a switch (no switch next to it)")
        return
    port = next((p for (n, p), pg in fab.port_guid.items() if n == sm_node and fab.lid_of.get(pg) == sm_lid),
                None)
    sw, _ = fab.links.get((sm_node, port), (None, None))
    if sw is None or fab.nodes[sw]["type"] != "SW":
        fails.add(where, "daemon: power cycle: no switch next to the SM's port %s" % port)
        return
    name, lid = fab.nodes[sw]["desc"], fab.lid_of[sw]
    follow = follow_events(env, args, api_sock, workdir, "daemon-events-power.log", where, fails)
    if follow is None:
        return
    try:
        rc, out, err = env.run([args.reset_switch, str(port)], timeout=60)
        if rc != 0 or not out.startswith("reset top "):
            fails.add(where, "daemon: power cycle: umad_reset_switch %d: rc %d %s" % (port, rc, err.strip()[-200:]))
            return
        answers = [ib.console('Clear "%s"' % name), ib.console('ReLink "%s"' % name)]
        if any(re.search(r"(^|sim> )# ", a, re.M) for a in answers):
            fails.add(where, "daemon: power cycle: ibsim refused Clear/ReLink of %s: %s" % (name, answers))
            return
        sweep, err = subnetctl_json(env, args, api_sock, ["sweep", "--light"])
        sw_kind = (sweep or {}).get("sweep", {})
        if sweep is None or sw_kind.get("outcome") != "SWEEP_OUTCOME_OK":
            fails.add(where, "daemon: power cycle: sweep --light: %s" % (err or sweep))
            return
        # Who found it says so: the light sweep in its answer (it read
        # LinearFDBTop 0), or the heavy sweep of a trap that came first in a
        # switch_up event (it read the port-0 LID 0).
        said = sw_kind.get("message", "")
        if '"%s" lost its forwarding table' % name not in said:
            lost = follow.wait(lambda e: e.get("kind") == "EVENT_KIND_SWITCH_UP"
                               and int(e.get("node_guid", "0")) == sw
                               and "lost its tables" in e.get("message", ""), 30)
            said = lost.get("message", "") if lost else ""
        if not said:
            fails.add(where, "daemon: power cycle of %s: the SM never said the switch lost its tables "
                      "(sweep --light: %s; events: %s)" % (name, sw_kind.get("message"),
                                                           [e.get("message", "")[:80] for e in follow.seen()]))
        served, err = served_lft(env, args, api_sock, sw)
        real = ibroute_table(env, lid)
        if served is None or real != served:
            diff = sorted(set((real or {}).items()) ^ set((served or {}).items()))[:4]
            fails.add(where, "daemon: power cycle of %s: ibroute %d differs from subnetd's table: %s %s"
                      % (name, lid, diff if real is not None else "ibroute failed", err))
        v, err = subnetctl_json(env, args, api_sock, ["verify", "--read-back"])
        rb = (v or {}).get("read_back", {})
        if v is None or v.get("verdict") != "VERDICT_OK" or int(rb.get("blocks_differ", "0")) != 0 \
                or rb.get("switches_silent", 0) != 0:
            fails.add(where, "daemon: power cycle of %s: verify --read-back: %s" % (name, err or v))
        elif said and real == served:
            log("  daemon: power cycle of %s (%s, Clear, ReLink): %s; ibroute == subnetd's table "
                "(%d LIDs), read back %s LFT blocks, no difference"
                % (name, out.strip(), said, len(real), rb.get("blocks_read", 0)))
    finally:
        follow.close()


def served_lft(env, args, sock, guid):
    """The daemon's LFT of switch `guid` (GetForwardingTable) as {LID: port},
    like ibroute prints it; (None, why) when subnetctl fails."""
    blocks, err = subnetctl(env, args, sock, ["lft", "0x%016x" % guid])
    if blocks is None:
        return None, err
    served = {}
    for b in blocks:
        ports = base64.b64decode(b.get("ports", ""))
        top = int(b.get("linear_fdb_top", 0))
        for i, port in enumerate(ports):
            lid = int(b.get("block", 0)) * 64 + i
            if port != 255 and lid <= top:
                served[lid] = port
    served.pop(0, None)  # LID 0 is not a LID; ibroute starts at 1
    return served, ""


def ibroute_table(env, lid):
    rc, out, err = env.run(["ibroute", str(lid)])
    if rc != 0:
        return None
    got = {}
    for line in out.splitlines():
        m = re.match(r"^0x([0-9a-f]+) (\d+) :", line)
        if m:
            got[int(m.group(1), 16)] = int(m.group(2))
    return got


# PortInfo fields that change on their own (error counters), or that
# depend on who reads (LocalPort: the port the reading SMP entered a switch
# by), which a PortInfoRecord need not repeat.
PIR_LIVE_FIELDS = {"MkeyViolations", "PkeyViolations", "QkeyViolations", "LocalPhysErr",
                   "OverrunErr", "LocalPort"}


def check_sa(env, fab, where, fails):
    """saquery against the daemon's SA: ClassPortInfo, NodeRecords and
    LinkRecords by LID, block 0 of sampled switches' LFTs, PathRecords
    between endports. umad2sim carries one
    MAD per answer (no RMPP), so every query asks for one record."""
    ends = []  # (LID, node GUID, port GUID, port number)
    for g, v in sorted(fab.nodes.items()):
        if v["type"] == "SW":
            if g in fab.lid_of:
                ends.append((fab.lid_of[g], g, g, 0))
            continue
        for p in range(1, v["ports"] + 1):
            pg = fab.port_guid.get((g, p))
            if pg is not None and pg in fab.lid_of:
                ends.append((fab.lid_of[pg], g, pg, p))
    rng = random.Random(5)
    sample = ends if len(ends) <= 12 else rng.sample(ends, 12)
    bad = 0
    rc, out, err = env.run(["saquery", "-c"])
    if rc != 0 or "ClassPortInfo" not in out:
        fails.add(where, "daemon: saquery -c: rc %d %s %s" % (rc, out.strip()[-200:], err.strip()[-200:]))
        bad += 1
    for lid, g, pg, port in sample:
        rc, out, err = env.run(["saquery", "NR", str(lid)])
        recs = parse_sa_dump(out)
        want = {"lid": lid, "node_guid": g, "port_guid": pg, "port_num": port}
        got = recs[0] if len(recs) == 1 else {}

        def num(v):
            try:
                return int(v, 0)
            except (TypeError, ValueError):
                return None
        diff = {k: (v, got.get(k)) for k, v in want.items() if num(got.get(k)) != v}
        if rc != 0 or diff:
            fails.add(where, "daemon: saquery NR %d: rc %d, %d records, differs %s %s"
                      % (lid, rc, len(recs), diff, err.strip()[-200:]))
            bad += 1
    for lid, g, pg, port in sample:
        if port == 0:
            continue
        # A CA port's one cable.
        rc, out, err = env.run(["saquery", "LR", "%d/%d" % (lid, port)])
        recs = parse_sa_dump(out)
        peer = fab.links.get((g, port))
        if rc != 0 or len(recs) != 1 or peer is None or \
                int(recs[0].get("ToPort", "-1"), 0) != peer[1] or \
                int(recs[0].get("ToLID", "-1"), 0) != fab.lid_of.get(peer[0], -2):
            fails.add(where, "daemon: saquery LR %d/%d: rc %d %s want to %s %s"
                      % (lid, port, rc, recs, peer, err.strip()[-200:]))
            bad += 1
    lftrs = 0
    for lid, g, pg, port in sample:
        if port != 0 or g not in fab.lft:
            continue
        # Block 0 of a switch's table, against the dump of what was programmed.
        rc, out, err = env.run(["saquery", "LFTR", "%d/0" % lid])
        got = {}
        for line in out.split("LFT:", 1)[-1].splitlines():
            f = line.split()
            if len(f) == 2 and f[0].isdigit() and f[1].isdigit():
                got[int(f[0])] = int(f[1])
        want = {l: p for l, p in fab.lft[g].items() if l < 64}
        diff = {l: (p, got.get(l)) for l, p in want.items() if got.get(l) != p}
        if rc != 0 or not want or diff:
            fails.add(where, "daemon: saquery LFTR %d/0: rc %d, differs from the dump at %s %s"
                      % (lid, rc, sorted(diff.items())[:8], err.strip()[-200:]))
            bad += 1
        lftrs += 1
    pirs = 0
    for lid, g, pg, port in sample:
        # A port's PortInfoRecord against the port itself (smpquery reads
        # its PortInfo now): every field, the SM's settings included.
        rc, out, err = env.run(["saquery", "PIR", "%d/%d" % (lid, port)])
        recs = parse_sa_dump(out)
        got = recs[0] if rc == 0 and len(recs) == 1 else {}
        rc2, out2, err2 = env.run(["smpquery", "portinfo", str(lid), str(port)])
        real = {}
        for line in out2.splitlines():
            m = SA_FIELD.match(line)
            if m:
                real[m.group(1).strip()] = m.group(2).strip()
        diff = {k: (v, got.get(k)) for k, v in real.items()
                if got.get(k) != v and k not in PIR_LIVE_FIELDS}
        if rc != 0 or rc2 != 0 or not got or not real or diff or \
                int(got.get("EndPortLid", "-1"), 0) != lid or int(got.get("PortNum", "-1"), 0) != port:
            fails.add(where, "daemon: saquery PIR %d/%d: rc %d/%d, %d records, differs from "
                      "smpquery portinfo: %s %s" % (lid, port, rc, rc2, len(recs), diff,
                                                     err.strip()[-200:]))
            bad += 1
        pirs += 1
    pairs = [(a, b) for a in sample for b in sample if a != b]
    for a, b in (pairs if len(pairs) <= 20 else rng.sample(pairs, 20)):
        rc, out, err = env.run(["saquery", "-p", "--src-to-dst", "%d:%d" % (a[0], b[0])])
        recs = parse_sa_dump(out)
        got = recs[0] if len(recs) == 1 else {}
        ok = rc == 0 and got and int(got.get("slid", "-1"), 0) == a[0] and \
            int(got.get("dlid", "-1"), 0) == b[0] and got.get("pkey", "").lower() == "0xffff"
        if not ok:
            fails.add(where, "daemon: saquery -p --src-to-dst %d:%d: rc %d %s %s"
                      % (a[0], b[0], rc, got or out.strip()[-300:], err.strip()[-200:]))
            bad += 1
    if bad == 0:
        log("  daemon: saquery: ClassPortInfo, %d NodeRecords, %d PortInfoRecords (== smpquery), "
            "LinkRecords, %d LFT blocks and %d PathRecords agree"
            % (len(sample), pirs, lftrs, min(len(pairs), 20)))


def read_pkeys(env, lid, port):
    """The P_Key table smpquery reads from a port (trailing zeros dropped),
    or None."""
    rc, out, _ = env.run(["smpquery", "pkeys", str(lid), str(port)])
    if rc != 0:
        return None
    keys = []
    for line in out.splitlines():
        m = re.match(r"\s*\d+:\s*(.*)$", line)
        if m:
            keys += [int(k, 16) for k in m.group(1).split()]
    while keys and keys[-1] == 0:
        keys.pop()
    return keys


def read_sl2vl(env, lid, port):
    """The SL-to-VL rows smpquery reads ([VL of SL 0..15] per in/out pair),
    or None."""
    rc, out, _ = env.run(["smpquery", "sl2vl", str(lid), str(port)])
    if rc != 0:
        return None
    rows = []
    for line in out.splitlines():
        if line.startswith("ports:"):
            rows.append([int(v) for v in line.split(":", 2)[2].split("|") if v.strip()])
    return rows or None


def read_vlarb_low(env, lid, port):
    """The low-priority VL arbitration entries [(VL, weight)] smpquery reads,
    or None."""
    rc, out, _ = env.run(["smpquery", "vlarb", str(lid), str(port)])
    if rc != 0:
        return None
    vls = weights = None
    in_low = False
    for line in out.splitlines():
        if "priority" in line:
            in_low = "Low" in line
            continue
        if not in_low:
            continue
        name, _, rest = line.partition(":")
        values = [int(v, 0) for v in rest.split("|") if v.strip()]
        if name.strip().upper() == "VL" and vls is None:
            vls = values
        elif name.strip().upper() == "WEIGHT" and weights is None:
            weights = values
    if vls is None or weights is None:
        return None
    return list(zip(vls, weights))


def check_vl_tables(env, fab, where, fails):
    """The SL-to-VL and VL arbitration tables the daemon programmed, read by
    smpquery: every SL on VL0 (one data VL) on sampled CA ports and on every
    input port of a sampled switch's output port, and VL0 alone, weight 64,
    in the low-priority arbitration table."""
    bad = checked = 0
    targets = []
    for g, v in sorted(fab.nodes.items()):
        for p in range(1, v["ports"] + 1):
            if (g, p) not in fab.links:
                continue
            lid = fab.lid_of.get(g if v["type"] == "SW" else fab.port_guid.get((g, p)))
            if lid:
                targets.append((lid, p, v["type"]))
    rng = random.Random(11)
    for lid, port, kind in (targets if len(targets) <= 8 else rng.sample(targets, 8)):
        checked += 1
        rows = read_sl2vl(env, lid, port)
        arb = read_vlarb_low(env, lid, port)
        ok_rows = rows is not None and all(len(r) == 16 and not any(r) for r in rows)
        ok_arb = arb is not None and arb[0] == (0, 64) and all(w == 0 for _, w in arb[1:])
        if not ok_rows or not ok_arb:
            fails.add(where, "daemon: VL tables of %s LID %d port %d: SL2VL %s, VLArb low %s"
                      % (kind, lid, port, rows, arb))
            bad += 1
    if bad == 0:
        log("  daemon: smpquery: SL2VL (every SL on VL0) and VLArb (VL0, weight 64) on %d ports"
            % checked)


def check_partitions(env, fab, sm_lid, where, fails):
    """The P_Key tables the daemon programmed (INTEROP_PARTITIONS), read by
    smpquery from the ports: the default at index 0, the interop P_Key
    limited (full at the SM's port); the switch side of a CA link holds the
    CA's table (ibsim does not keep PortInfo's enforcement bits, so those
    are checked on the embedded simulator only: pkey_programming_test).
    saquery PathRecords with --pkey: none between two limited members, one
    from the SM's port."""
    limited = [0xffff, INTEROP_PKEY]
    sm_table = [0xffff, 0x8000 | INTEROP_PKEY]
    cas = []  # (LID, node GUID, port)
    bad = checked = 0
    for g, v in sorted(fab.nodes.items()):
        if v["type"] == "SW":
            continue
        for p in range(1, v["ports"] + 1):
            pg = fab.port_guid.get((g, p))
            if pg in fab.lid_of and (g, p) in fab.links:
                cas.append((fab.lid_of[pg], g, p))
    rng = random.Random(7)
    for lid, g, p in (cas if len(cas) <= 8 else rng.sample(cas, 8)):
        want = sm_table if lid == sm_lid else limited
        got = read_pkeys(env, lid, p)
        peer_guid, peer_port = fab.links[(g, p)]
        sw_lid = fab.lid_of.get(peer_guid)
        sw_got = read_pkeys(env, sw_lid, peer_port) if sw_lid else None
        checked += 1
        if got != want or sw_got != want:
            fails.add(where, "daemon: P_Keys of LID %d port %d: %s, switch LID %s port %d: %s, "
                      "want %s" % (lid, p, got, sw_lid, peer_port, sw_got, want))
            bad += 1
    for g, v in sorted(fab.nodes.items()):
        if v["type"] == "SW" and g in fab.lid_of:
            got = read_pkeys(env, fab.lid_of[g], 0)
            want = sm_table if fab.lid_of[g] == sm_lid else limited
            if got != want:
                fails.add(where, "daemon: P_Keys of switch LID %d port 0: %s, want %s"
                          % (fab.lid_of[g], got, want))
                bad += 1
            break
    others = [c for c in cas if c[0] != sm_lid]
    pr = 0
    if len(others) >= 2:
        a, b = others[0], others[-1]
        for src, dst, records in ((a, b, 0), (sm_lid, b, 1)):
            slid = src if isinstance(src, int) else src[0]
            rc, out, err = env.run(["saquery", "-p", "--pkey", "0x%04x" % INTEROP_PKEY,
                                    "--src-to-dst", "%d:%d" % (slid, dst[0])])
            recs = parse_sa_dump(out)
            ok = len(recs) == records and (
                records == 0 or int(recs[0].get("pkey", "0"), 0) & 0x7fff == INTEROP_PKEY)
            if not ok:
                fails.add(where, "daemon: saquery -p --pkey 0x%04x --src-to-dst %d:%d: rc %d, "
                          "want %d records, got %s %s" % (INTEROP_PKEY, slid, dst[0], rc, records,
                                                          recs, err.strip()[-200:]))
                bad += 1
            pr += 1
    if bad == 0:
        log("  daemon: partitions: %d CA ports and their switch ports hold the planned P_Key "
            "tables, %d PathRecords by P_Key as the membership says" % (checked, pr))


IPOIB_BCAST = "ff12:401b:ffff:0:0:0:ffff:ffff"


def read_mft(env, lid, mlid):
    """The ports `ibroute -M` shows switch LID forwarding `mlid` to, or None."""
    rc, out, _ = env.run(["ibroute", "-M", str(lid)])
    if rc != 0:
        return None
    col0 = None
    for line in out.splitlines():
        if "Ports:" in line:
            col0 = line.index("Ports:") + len("Ports: ")
        elif col0 is not None and line.lower().startswith("0x%04x" % mlid):
            return {(i - col0) // 2 for i, ch in enumerate(line) if ch == "x" and i >= col0}
    return set()


def check_multicast(env, fab, args, api_sock, sm_lid, workdir, dump, where, fails):
    """Three CAs join the IPoIB broadcast group the SM created, each from its
    own simulated node (mcast_join under SIM_HOST: MCMemberRecord Set to the
    SA); once the SM says it re-programmed the trees (a MULTICAST event
    after which `subnetctl mcast` counts the three), `ibroute -M` on every
    switch must show one tree: symmetric across every cable, no cycle, and
    each member's port on its switch; and ibdmchk, given the daemon's dump
    files (opensm.mcfdbs written with the trees), must read the same tree
    with the three members and find no credit loop."""
    cas = [(g, desc) for g, desc, _ in client_cas(fab, sm_lid)]
    if len(cas) < 3:
        return
    rng = random.Random(11)
    joiners = rng.sample(cas, 3)
    follow = follow_events(env, args, api_sock, workdir, "mcast-events.log", where, fails)
    if follow is None:
        return
    try:
        for g, desc in joiners:
            rc, out, err = env.run([args.mcast_join, IPOIB_BCAST], extra_env={"SIM_HOST": desc})
            if rc != 0 or "status 0x0000 mlid 0xc000" not in out:
                fails.add(where, "daemon: mcast_join from %s: rc %d %s %s"
                          % (desc, rc, out.strip(), err.strip()[-200:]))
                return
        def members():
            got, _ = subnetctl(env, args, api_sock, ["mcast"])
            for grp in (got or {}).get("groups", []):
                if grp.get("mlid") == 0xC000:
                    return int(grp.get("member_count", 0))
            return 0
        last = 0
        while True:
            e = follow.wait(lambda ev: ev.get("kind") == "EVENT_KIND_MULTICAST"
                            and int(ev.get("id", "0")) > last, 30)
            if e is None:
                fails.add(where, "daemon: no MULTICAST event with the 3 members within 30 s of "
                          "the joins")
                return
            if members() == 3:
                break
            last = int(e.get("id", "0"))
        masks = {}
        for g, v in fab.nodes.items():
            if v["type"] == "SW" and g in fab.lid_of:
                m = read_mft(env, fab.lid_of[g], 0xC000)
                if m is None:
                    fails.add(where, "daemon: ibroute -M %d failed" % fab.lid_of[g])
                    return
                if m:
                    masks[g] = m
        bad = []
        edges = 0
        for g, m in masks.items():
            for p in m:
                peer = fab.links.get((g, p))
                if p == 0 or peer is None:
                    continue
                if fab.nodes[peer[0]]["type"] == "SW":
                    if peer[1] not in masks.get(peer[0], set()):
                        bad.append("%s[%d] forwards to %s, which does not forward back"
                                   % (fab.nodes[g]["desc"], p, fab.nodes[peer[0]]["desc"]))
                    edges += 1
        edges //= 2
        if edges + 1 != len(masks):
            bad.append("%d switches forward 0xc000 over %d tree links: not one tree"
                       % (len(masks), edges))
        for g, desc in joiners:
            sw, sp = fab.links[(g, 1)]
            if sp not in masks.get(sw, set()):
                bad.append("member %s not delivered by %s[%d]" % (desc, fab.nodes[sw]["desc"], sp))
        args_chk = ["ibdmchk", "-s", "opensm-subnet.lst", "-f", "opensm.fdbs", "-m",
                    "opensm.mcfdbs"]
        p = subprocess.run(args_chk, cwd=dump, capture_output=True, text=True, timeout=600)
        out = p.stdout + p.stderr
        with open(os.path.join(dump, "ibdmchk-mcast.out"), "w") as f:
            f.write(out)
        m = re.search(r"Multicast Group:0xC000 has:(\d+) switches and:(\d+) HCAs", out)
        if not m or int(m.group(1)) != len(masks) or int(m.group(2)) != 3:
            bad.append("ibdmchk read %s from opensm.mcfdbs, want %d switches and 3 HCAs (see "
                       "%s/ibdmchk-mcast.out)" % (m.group(0) if m else "no group 0xC000",
                                                 len(masks), dump))
        if not re.search(r"^-I- no credit loops found", out, re.M):
            bad.append("ibdmchk with the multicast FDBs: no 'no credit loops' verdict (see "
                       "%s/ibdmchk-mcast.out)" % dump)
        if bad:
            fails.add(where, "daemon: MFTs of 0xc000 after 3 joins: " + "; ".join(bad[:5]))
        else:
            log("  daemon: multicast: 3 joins over the SA, ibroute -M shows one tree over %d "
                "switch(es) delivering every member; ibdmchk reads the same from the dump, no "
                "credit loops" % len(masks))
    finally:
        follow.close()


def check_grpc(env, fab, args, sock, where, fails):
    """What the daemon serves over gRPC (GetForwardingTable, TracePath, via
    subnetctl --json) against what ibroute / ibtracert read from the fabric."""
    bad = 0
    for sw in fab.switches():
        served, err = served_lft(env, args, sock, sw)
        if served is None:
            fails.add(where, "daemon: " + err)
            bad += 1
            continue
        real = ibroute_table(env, fab.lid_of[sw])
        if real != served:
            diff = sorted(set((real or {}).items()) ^ set(served.items()))[:4]
            fails.add(where, "daemon: GetForwardingTable of %s differs from ibroute: %s"
                      % (fab.nodes[sw]["desc"], diff))
            bad += 1
    if not bad:
        log("  daemon: GetForwardingTable == ibroute on all %d switches" % len(fab.switches()))
    cas = fab.ca_ports()
    pairs = [(s_, t) for s_ in cas for t in cas if s_ != t]
    pairs = random.Random(args.seed + 1).sample(pairs, min(len(pairs), 20))
    bad = 0
    for s_, t in pairs:
        sl, dl = fab.lid_of[s_], fab.lid_of[t]
        r, err = subnetctl(env, args, sock, ["trace", "lid:%d" % sl, "lid:%d" % dl])
        if r is None:
            fails.add(where, "daemon: " + err)
            bad += 1
            continue
        hops = r.get("hops", [])
        served = [(int(hops[i - 1].get("out_port", 0)), int(hops[i]["node_guid"]), int(hops[i].get("in_port", 0)))
                  for i in range(1, len(hops))]
        rc, out, e2 = env.run(["ibtracert", str(sl), str(dl)])
        real = parse_tracert(out) if rc == 0 else None
        # ibtracert names the last CA by its port GUID, TracePath by its node GUID.
        if real and served and fab.port_of_guid.get(real[-1][1], (None,))[0] == served[-1][1]:
            real[-1] = served[-1]
        if not r.get("complete") or real != served:
            fails.add(where, "daemon: TracePath %d -> %d %s, ibtracert %s" % (sl, dl, served, real))
            bad += 1
    if not bad:
        log("  daemon: TracePath == ibtracert for %d CA pairs" % len(pairs))
