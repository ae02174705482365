#!/usr/bin/python3
"""Two SMs on one ibsim fabric (issue 17): the SMInfo election, handover and
takeover, with a second subnetd or with OpenSM as the peer (stdlib only).

  interop_election.py --fabric NAME=SPEC --peer subnetd|opensm --subnetd BIN
                      --subnetctl BIN --netfile-tool BIN --workdir DIR
                      [--scenario takeover|split-brain|bogus-set]

Each SM sits on its own simulated CA (umad2sim attaches a client to the
node its SIM_HOST names); the diagnostics run from ibsim's first node.

--peer subnetd: subnetd L (priority 5) comes up master; then subnetd H
(priority 10) starts: it finds L master, stands by and tells L (trap 144);
L's sweep finds H higher and hands over; H takes over keeping every LID.
Then, by --scenario:
  takeover (default):
  1. Checked: sminfo names H, `sminfo L-LID` says STANDBY, L's status says
     STANDBY naming H, a TriggerSweep on L is refused naming H, every port's
     LID in H's dump equals L's, and the LFT blocks H rewrote are counted.
  2. kill -9 H: L takes over within poll_period x poll_retries plus a
     sweep; every LID unchanged again; ibdmchk on L's tables.
  split-brain (L and H on CAs under different leaves; needs a fabric whose
  first node is under another leaf than H, e.g. ft2):
  1. Every uplink of H's leaf unlinked (ibsim Unlink): L misses its polls,
     takes over its side within the bound; H sweeps its leaf alone and stays
     master. Both MASTER by their status and by plain sminfo run on each
     side (SIM_HOST); no LID changed on either side.
  2. The uplinks relinked (ReLink, trap 128 to both): their sweeps meet,
     the election leaves H master (higher priority) and L STANDBY naming H,
     by status and sminfo; H never left MASTER; every port's LID as before
     the split; ibdmchk on H's tables. Prints the time from the ReLinks to
     L's STANDBY and the LFT blocks each SM rewrote.
  bogus-set (SMInfo Sets from ibsim's first node, no SM: `sminfo -s STATE
  -p 15 LID MODIFIER`, SMInfo GUID 0 and SM_Key 0):
  1. Both SMs at sm.key 0 (every SM a peer, so only the state rules
     decide): DISABLE and DISCOVER to H and HANDOVER and DISABLE to L, each
     from a sender in STANDBY, are refused: MAD status 0x1c back, an
     SM_STATE event naming the refused Set, no state change; H MASTER and L
     STANDBY by status and sminfo. Control: DISCOVER to L from a sender in
     MASTER is obeyed (L discovers and follows H again).
  2. Both reloaded (SIGHUP) to another sm.key: DISCOVER, DISABLE and
     HANDOVER to L from a sender in MASTER, which the state rules allow, are
     refused for the key alike.
--peer opensm:
  1. OpenSM (priority 15) master, subnetd (priority 5) starts: standby
     (its status names OpenSM's port GUID); OpenSM kill -9'd: subnetd takes
     over with OpenSM's LIDs (read with smpquery before and from subnetd's
     dump after).
  2. subnetd (priority 12) master, OpenSM (priority 3) starts: `sminfo
     OPENSM-LID` says STANDBY; subnetd's status lists it.

Prints the takeover times; exit 0 when every check passed, 77 when a tool is
missing.
"""
import argparse
import datetime
import os
import re
import shutil
import signal
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from ibsim_helpers import (Ibsim, find_umad2sim, netfile as make_netfile, read_net,  # noqa: E402
                           write_subnetd_config)
from interop_lib import (Child, Env, Failures, Fabric, follow_events, fresh_dir,  # noqa: E402
                         log, missing_tools, parse_sminfo, subnetctl)
from interop import check_ibdmchk  # noqa: E402
from proc_helpers import NotifySocket  # noqa: E402

TOOLS = ["ibsim", "sminfo", "smpquery", "ibdmchk"]
POLL = "500ms"
RETRIES = 3
# Detection plus a sweep of a small fabric, with room; a sanitizer build
# runs the sweep several times slower.
BOUND_S = (0.5 * RETRIES + 1.5) * (
    4 if os.environ.get("TSAN_OPTIONS") or os.environ.get("ASAN_OPTIONS") else 1)
# SMInfo Set attribute modifiers (IBA 14.2.5.13), as sminfo's MODIFIER.
CONTROLS = {1: "HANDOVER", 2: "ACKNOWLEDGE", 3: "DISABLE", 4: "STANDBY", 5: "DISCOVER"}
# The MAD status of a refused Set ("invalid field": 7 << 2).
INVALID_FIELD = 0x1c
# The SMs' sm.key for the wrong-key Sets (sminfo always sends SM_Key 0).
WRONG_KEY = 0x5eed


class Sm:
    """One subnetd on simulated node `host` with its own API socket, store,
    dump directory and notify socket; `key`: its sm.key (None: the default,
    1)."""

    def __init__(self, name, host, prio, args, env, workdir, sockdir, poll=POLL, retries=RETRIES,
                 key=None):
        self.name, self.host, self.prio = name, host, prio
        self.poll, self.retries = poll, retries
        self.api = os.path.join(sockdir, name + ".sock")
        self.dump = os.path.join(workdir, name + "-dump")
        self.notify = NotifySocket(os.path.join(sockdir, name + ".notify"))
        cfg = os.path.join(workdir, name + ".yaml")
        write_subnetd_config(cfg, "updn", os.path.join(workdir, name + ".db"), self.api)
        with open(cfg) as f:
            self.base_cfg = f.read()
        self.cfg = cfg
        self.write_sm(key)
        self.child = Child([args.subnetd, "--config", cfg, "--dump-dir", self.dump], env,
                           os.path.join(workdir, name + ".log"),
                           extra_env=dict(self.notify.env, SIM_HOST=host))

    def write_sm(self, key=None):
        """The config with its sm: section (priority, polling, `key` unless
        None), as at the start or for a SIGHUP."""
        with open(self.cfg, "w") as f:
            f.write(self.base_cfg + "sm:\n  priority: %d\n  poll_period: %s\n  poll_retries: %d\n"
                    % (self.prio, self.poll, self.retries))
            if key is not None:
                f.write("  key: %d\n" % key)

    def ready(self, timeout=60):
        return self.notify.wait_for("READY=1", self.child.proc, timeout) is not None

    def log_text(self):
        with open(self.child.log.name) as f:
            return f.read()

    def kill(self):
        self.child.proc.send_signal(signal.SIGKILL)
        self.child.finish(timeout=10)
        self.notify.close()

    def stop(self):
        if self.child.proc.poll() is None:
            self.child.finish(timeout=10, sig=signal.SIGTERM)
        self.notify.close()


def lids_of(dump):
    """Port GUID -> LID from a dump directory (opensm.fdbs / subnet.lst)."""
    return dict(Fabric(dump).lid_of)


def status(env, args, sm, where, fails):
    st, err = subnetctl(env, args, sm.api, ["status"])
    if st is None:
        fails.add(where, "%s: %s" % (sm.name, err))
    return st or {}


def lid_changes(before, after):
    return sorted(g for g in before if g in after and before[g] != after[g])


def blocks_sent(text, since=0):
    """LFT blocks the SM's sweeps sent, from offset `since` of its log on."""
    return sum(int(b) for b in re.findall(r"subnet up: .*?(\d+) LFT blocks sent", text[since:]))


def wait_master(env, args, sm, follower, after_id, timeout):
    """The SM_STATE event after `after_id` that says -> MASTER ... then the
    sweep event that follows it (the subnet programmed), or None."""
    def is_master(e):
        return (int(e.get("id", 0)) > after_id and e.get("kind") == "EVENT_KIND_SM_STATE"
                and "-> MASTER" in e.get("message", ""))
    m = follower.wait(is_master, timeout)
    if m is None:
        return None
    mid = int(m["id"])
    return follower.wait(lambda e: int(e.get("id", 0)) > mid and e.get("kind") == "EVENT_KIND_SWEEP",
                         timeout)


def kill_and_wait_master(victim, env, args, sm, follower, after_id, timeout=60):
    """kill -9 `victim` (the master); (the event of `sm` taking over, as
    wait_master, or None; seconds from the kill)."""
    t0 = time.time()
    victim.kill()
    ev = wait_master(env, args, sm, follower, after_id, timeout) if follower else None
    return ev, time.time() - t0


class Pair:
    """The two subnetd of --peer subnetd: L ("low", priority 5) on `lo_host`
    comes up master, then H ("high", priority 10) on `hi_host` stands by,
    tells L (trap 144) and takes L's handover. start() returns once H is
    master, with both event streams followed (logged to WORKDIR/*-events.log);
    close() stops them and both daemons. `key`: both SMs' sm.key."""

    def __init__(self, env, args, work, sockdir, key=None):
        self.env, self.args, self.work, self.sockdir, self.key = env, args, work, sockdir, key
        self.lo = self.hi = self.follow_lo = self.follow_hi = None
        self.lo_lids = {}  # port GUID -> LID as L assigned them

    def start(self, lo_host, hi_host, where, fails):
        env, args, work = self.env, self.args, self.work
        self.lo = Sm("low", lo_host, 5, args, env, work, self.sockdir, key=self.key)
        if not self.lo.ready():
            fails.add(where, "low: not READY, see %s" % self.lo.child.log.name)
            return False
        self.lo_lids = lids_of(self.lo.dump)
        self.follow_lo = follow_events(env, args, self.lo.api, work, "low-events.log", where, fails)
        t0 = time.time()
        self.hi = Sm("high", hi_host, 10, args, env, work, self.sockdir, key=self.key)
        if not self.hi.ready():
            fails.add(where, "high: not READY, see %s" % self.hi.child.log.name)
            return False
        self.follow_hi = follow_events(env, args, self.hi.api, work, "high-events.log", where,
                                       fails, from_start=True)
        if self.follow_hi is None or wait_master(env, args, self.hi, self.follow_hi, 0, 60) is None:
            fails.add(where, "high: no handover to it, see %s and %s"
                      % (self.hi.child.log.name, self.lo.child.log.name))
            return False
        log("  handover low -> high: high master %.2f s after its start" % (time.time() - t0))
        return True

    def close(self):
        for f in (self.follow_hi, self.follow_lo):
            if f is not None:
                f.close()
        for sm in (self.hi, self.lo):
            if sm is not None:
                sm.stop()


def subnetd_pair(env, ib, net, args, work, sockdir, fails):
    where = "subnetd-pair"
    cas = net.cas()
    pair = Pair(env, args, work, sockdir)
    try:
        if not pair.start(cas[1], cas[-1], where, fails):
            return
        lo, hi, lo_lids, follow_lo = pair.lo, pair.hi, pair.lo_lids, pair.follow_lo
        hi_st = status(env, args, hi, where, fails)
        lo_st = status(env, args, lo, where, fails)
        hi_lid = int(hi_st.get("sm_lid", 0))
        rc, out, _ = env.run(["sminfo"])
        s = parse_sminfo(out)
        if not s or s["state"] != 3 or s["lid"] != hi_lid:
            fails.add(where, "sminfo after the handover: %s (want master at LID %d)"
                      % (out.strip(), hi_lid))
        lo_lid = lo_lids.get(int(lo_st.get("sm_port_guid", "0")), 0) if lo_st else 0
        if lo_st.get("state") != "SM_STATE_STANDBY":
            fails.add(where, "low after the handover: state %s" % lo_st.get("state"))
        if int(lo_st.get("master_guid", "0")) != int(hi_st.get("sm_port_guid", "-1")):
            fails.add(where, "low's master_guid %s is not high's port %s"
                      % (lo_st.get("master_guid"), hi_st.get("sm_port_guid")))
        if lo_lid:
            rc, out, _ = env.run(["sminfo", str(lo_lid)])
            s = parse_sminfo(out)
            if not s or s["state"] != 2 or s["prio"] != 5:
                fails.add(where, "sminfo %d (low): %s (want STANDBY, priority 5)"
                          % (lo_lid, out.strip()))
        rc, out, err = env.run([args.subnetctl, "--socket", lo.api, "sm"])
        hi_guid = "%016x" % int(hi_st.get("sm_port_guid", "0"))
        rows = [l.split() for l in out.splitlines()]
        if rc != 0 or not any(r and r[0] == "master" and hi_guid in r[1].replace(":", "").lower()
                              for r in rows):
            fails.add(where, "subnetctl sm on low names no master %s:\n%s" % (hi_guid, out))
        else:
            log("  subnetctl sm on the standby:\n    " + "\n    ".join(out.splitlines()))
        rc, out, err = env.run([args.subnetctl, "--socket", lo.api, "sweep"])
        if rc == 0 or "STANDBY" not in err or "master" not in err:
            fails.add(where, "a sweep asked of the standby: rc %d %s" % (rc, err.strip()[-200:]))
        hi_lids = lids_of(hi.dump)
        changed = lid_changes(lo_lids, hi_lids)
        if changed:
            fails.add(where, "handover changed %d LIDs, e.g. port %#x" % (len(changed), changed[0]))
        sent = blocks_sent(hi.log_text())
        log("  handover: %d ports, %d LIDs changed, %d LFT blocks rewritten by high"
            % (len(hi_lids), len(changed), sent))
        if sent != 0:
            # Both route with updn on the same LIDs: high reads what the
            # switches hold and finds nothing to change.
            fails.add(where, "high rewrote %d LFT blocks after a clean handover" % sent)

        # Kill the master; the standby takes over.
        last = int(status(env, args, lo, where, fails).get("last_event_id", "0"))
        lo_log_at = len(lo.log_text())
        ev, took = kill_and_wait_master(hi, env, args, lo, follow_lo, last)
        if ev is None:
            fails.add(where, "low did not take over within 60 s, see %s" % lo.child.log.name)
            return
        log("  takeover after kill -9 of the master: %.2f s (poll %s x %d); %s"
            % (took, POLL, RETRIES, ev.get("message", "")[:160]))
        if took > BOUND_S:
            fails.add(where, "takeover took %.2f s, over the %.1f s bound" % (took, BOUND_S))
        after = lids_of(lo.dump)
        changed = lid_changes(hi_lids, after)
        if changed:
            fails.add(where, "takeover changed %d LIDs, e.g. port %#x" % (len(changed), changed[0]))
        sent = blocks_sent(lo.log_text(), lo_log_at)
        log("  takeover: %d LIDs changed, %d LFT blocks rewritten by low" % (len(changed), sent))
        if sent != 0:
            fails.add(where, "low rewrote %d LFT blocks taking over tables it routes alike" % sent)
        check_ibdmchk(lo.dump, Fabric(lo.dump), where, fails)
    finally:
        pair.close()


def leaf_of(net, ca):
    """The switch port 1 of CA `ca` is cabled to."""
    return net.nodes[ca]["links"][1][0]


def uplinks(net, switch):
    """The ports of `switch` cabled to another switch."""
    return [p for p, (peer, _) in sorted(net.nodes[switch]["links"].items())
            if net.nodes[peer]["switch"]]


def last_event(env, args, sm, where, fails):
    return int(status(env, args, sm, where, fails).get("last_event_id", "0"))


def event_after(follower, after_id, kind, text, timeout):
    """The first event of `kind` after `after_id` whose message holds `text`,
    or None at the deadline."""
    if follower is None:
        return None
    return follower.wait(lambda e: int(e.get("id", 0)) > after_id and e.get("kind") == kind
                         and text in e.get("message", ""), timeout)


def event_age(ev, since):
    """Seconds from the wall-clock time `since` to the event's time stamp
    (RFC 3339 in UTC, 0 to 9 decimals)."""
    m = re.match(r"(\d+-\d+-\d+T\d+:\d+:\d+)(?:\.(\d+))?Z$", ev.get("time", ""))
    if not m:
        return float("nan")
    t = datetime.datetime.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S")
    frac = float("0." + (m.group(2) or "0"))
    return t.replace(tzinfo=datetime.timezone.utc).timestamp() + frac - since


def sminfo(env, argv=(), host=None):
    """`sminfo ARGV` from the node `host` (ibsim's first node when None):
    (exit status, the parsed answer or None, what it printed)."""
    rc, out, err = env.run(["sminfo"] + list(argv), timeout=30,
                           extra_env={"SIM_HOST": host} if host else None)
    return rc, parse_sminfo(out), (out + err).strip()


def sweep_counts(ev):
    """(switches, CAs) a sweep event's summary names, or None."""
    m = re.search(r"(\d+) switches, (\d+) CAs", (ev or {}).get("message", ""))
    return (int(m.group(1)), int(m.group(2))) if m else None


def check_roles(env, args, master, standby, diag_hosts, where, fails):
    """`master` MASTER and `standby` STANDBY following it, by their status
    and by sminfo: plain sminfo from each of `diag_hosts` (None: ibsim's
    first node) names the master, and `sminfo LID` of each SM gives its
    state. (master's status, standby's status)."""
    m_st = status(env, args, master, where, fails)
    s_st = status(env, args, standby, where, fails)
    m_guid = int(m_st.get("sm_port_guid", "0"))
    m_lid = int(m_st.get("sm_lid", 0))
    if m_st.get("state") != "SM_STATE_MASTER":
        fails.add(where, "%s: state %s, want MASTER" % (master.name, m_st.get("state")))
    if s_st.get("state") != "SM_STATE_STANDBY" or int(s_st.get("master_guid", "0")) != m_guid:
        fails.add(where, "%s: state %s following %s, want STANDBY following %s's port %#x"
                  % (standby.name, s_st.get("state"), s_st.get("master_guid"), master.name,
                     m_guid))
    for host in diag_hosts:
        rc, s, out = sminfo(env, [], host)
        if not s or s["state"] != 3 or s["guid"] != m_guid or s["lid"] != m_lid:
            fails.add(where, "sminfo from %s: %s (want %s master at LID %d)"
                      % (host or "ibsim's first node", out, master.name, m_lid))
    s_lid = int(s_st.get("sm_lid", 0))
    for sm, lid, want in ((master, m_lid, 3), (standby, s_lid, 2)):
        rc, s, out = sminfo(env, [str(lid)])
        if not s or s["state"] != want or s["prio"] != sm.prio:
            fails.add(where, "sminfo %d (%s): %s (want state %d, priority %d)"
                      % (lid, sm.name, out, want, sm.prio))
    return m_st, s_st


def split_brain(env, ib, net, args, work, sockdir, fails):
    """H's leaf cut off from the spines: L takes over the rest, H keeps its
    leaf; the cables back, the election must leave H master, L standing by
    for it, and every LID as before."""
    where = "split-brain"
    cas = net.cas()
    hi_host = cas[-1]
    hi_leaf = leaf_of(net, hi_host)
    lo_host = next((c for c in cas[1:] if leaf_of(net, c) != hi_leaf), None)
    cut = uplinks(net, hi_leaf)
    hi_side = [c for c in cas if leaf_of(net, c) == hi_leaf]
    hi_diag = next((c for c in hi_side if c != hi_host), None)
    if lo_host is None or not cut or hi_diag is None or leaf_of(net, cas[0]) == hi_leaf:
        fails.add(where, "the fabric has no two leaves with CAs and uplinks to split")
        return
    pair = Pair(env, args, work, sockdir)
    try:
        if not pair.start(lo_host, hi_host, where, fails):
            return
        lo, hi = pair.lo, pair.hi
        before = lids_of(hi.dump)
        lo_last = last_event(env, args, lo, where, fails)
        hi_last = hi_first = last_event(env, args, hi, where, fails)
        lo_at = len(lo.log_text())

        # 1. Partition: every uplink of H's leaf unlinked.
        t0 = time.time()
        for port in cut:
            ib.console('Unlink "%s"[%d]' % (hi_leaf, port))
        ev = wait_master(env, args, lo, pair.follow_lo, lo_last, 60)
        if ev is None:
            fails.add(where, "low did not take over its side within 60 s of the cut, see %s"
                      % lo.child.log.name)
            return
        took = event_age(ev, t0)
        log("  %s[%s] unlinked: low master of its side after %.2f s; %s"
            % (hi_leaf, ",".join(map(str, cut)), took, ev.get("message", "")[:120]))
        if not took <= BOUND_S:
            fails.add(where, "low took %.2f s to take its side over, over the %.1f s bound"
                      % (took, BOUND_S))
        n_sw, n_ca = len(net.switches()), len(cas)
        if sweep_counts(ev) != (n_sw - 1, n_ca - len(hi_side)):
            fails.add(where, "low's sweep of its side: %s (want %d switches, %d CAs)"
                      % (ev.get("message"), n_sw - 1, n_ca - len(hi_side)))
        # H's own sweep after the traps of its leaf: just that leaf.
        want = (1, len(hi_side))
        ev = pair.follow_hi.wait(
            lambda e: int(e.get("id", 0)) > hi_last and e.get("kind") == "EVENT_KIND_SWEEP"
            and sweep_counts(e) == want, 60)
        if ev is None:
            fails.add(where, "high: no sweep of its leaf alone within 60 s of the cut, see %s"
                      % hi.child.log.name)
            return
        split = {}
        for sm, host in ((lo, None), (hi, hi_diag)):
            st = status(env, args, sm, where, fails)
            split[sm.name] = st
            rc, s, out = sminfo(env, [], host)
            if st.get("state") != "SM_STATE_MASTER":
                fails.add(where, "%s during the split: state %s, want MASTER"
                          % (sm.name, st.get("state")))
            if not s or s["state"] != 3 or s["guid"] != int(st.get("sm_port_guid", "-1")):
                fails.add(where, "sminfo from %s during the split: %s (want %s master)"
                          % (host or "ibsim's first node", out, sm.name))
        for sm in (lo, hi):
            changed = lid_changes(before, lids_of(sm.dump))
            if changed:
                fails.add(where, "%s's side: %d LIDs changed by the split, e.g. port %#x"
                          % (sm.name, len(changed), changed[0]))
        log("  split: both MASTER (low at LID %s, high at LID %s), each named by sminfo on "
            "its side; %d LFT blocks rewritten by low"
            % (split["low"].get("sm_lid"), split["high"].get("sm_lid"),
               blocks_sent(lo.log_text(), lo_at)))

        # 2. Healed: the uplinks back; one master must remain, H.
        lo_last = last_event(env, args, lo, where, fails)
        hi_last = last_event(env, args, hi, where, fails)
        lo_at, hi_at = len(lo.log_text()), len(hi.log_text())
        t0 = time.time()
        for port in cut:
            ib.console('ReLink "%s"[%d]' % (hi_leaf, port))
        ev = event_after(pair.follow_lo, lo_last, "EVENT_KIND_SM_STATE", "-> STANDBY", 60)
        if ev is None:
            fails.add(where, "split brain not resolved: low not STANDBY 60 s after the ReLinks "
                      "(low %s, high %s), see %s and %s"
                      % (status(env, args, lo, where, fails).get("state"),
                         status(env, args, hi, where, fails).get("state"),
                         lo.child.log.name, hi.child.log.name))
            check_quiet(pair.follow_hi, hi_first, hi, where, fails)
            return
        resolved = event_age(ev, t0)
        # High sweeps the fabric it was handed (that sweep's event may name
        # another reason when requests coalesce): one asked for now returns
        # once a sweep begun after the handover has ended.
        rc, _, err = env.run([args.subnetctl, "--socket", hi.api, "sweep"], timeout=120)
        if rc != 0:
            fails.add(where, "sweep on high after the handover: rc %d %s"
                      % (rc, err.strip()[-200:]))
        log("  healed: low STANDBY %.2f s after the ReLinks; %s"
            % (resolved, ev.get("message", "")[:120]))
        for e in pair.follow_hi.seen():
            if int(e.get("id", 0)) > hi_last and e.get("kind") in ("EVENT_KIND_SM_STATE",
                                                                  "EVENT_KIND_SWEEP"):
                log("    high: %s" % e.get("message", "")[:160])
        check_roles(env, args, hi, lo, (None, hi_diag), where, fails)
        check_quiet(pair.follow_hi, hi_first, hi, where, fails)  # master all along
        after = lids_of(hi.dump)
        changed = lid_changes(before, after)
        if changed or set(after) != set(before):
            fails.add(where, "after the split: %d LIDs changed (e.g. port %#x), %d ports of %d"
                      % (len(changed), changed[0] if changed else 0, len(after), len(before)))
        hi_sent, lo_sent = blocks_sent(hi.log_text(), hi_at), blocks_sent(lo.log_text(), lo_at)
        log("  split brain resolved in %.2f s: %d LIDs changed, %d LFT blocks rewritten by high, "
            "%d by low" % (resolved, len(changed), hi_sent, lo_sent))
        if not resolved <= BOUND_S:
            fails.add(where, "the split brain took %.2f s to resolve, over the %.1f s bound"
                      % (resolved, BOUND_S))
        check_ibdmchk(hi.dump, Fabric(hi.dump), where, fails)
        # H's reroutes in its cut-off leaf find the spines' changed blocks
        # unreachable: a push that sent nothing once said "rewritten in
        # -77358224117 us" (minus the uptime).
        for sm in (lo, hi):
            bad = re.findall(r"rewritten in -\d+ us", sm.log_text())
            if bad:
                fails.add(where, "%s logged a negative reroute latency: %s" % (sm.name, bad[0]))
    finally:
        pair.close()


def check_quiet(follower, after_id, sm, where, fails):
    """No state change of `sm` since event `after_id`."""
    moved = [e.get("message", "") for e in follower.seen() if int(e.get("id", 0)) > after_id
             and e.get("kind") == "EVENT_KIND_SM_STATE" and " -> " in e.get("message", "")]
    if moved:
        fails.add(where, "%s changed state: %s" % (sm.name, "; ".join(moved)))


def send_refused(env, args, sm, follower, argv, what, where, fails):
    """`sminfo ARGV` (an SMInfo Set) from ibsim's first node, which `sm`
    must refuse: status "invalid field" (0x1c) back, and its SM_STATE event
    naming the refused Set."""
    ctl = CONTROLS[int(argv[-1])]
    last = last_event(env, args, sm, where, fails)
    rc, _, out = sminfo(env, ["-e"] + argv)  # -e: the MAD status on stderr
    if rc == 0:
        fails.add(where, "%s: %s obeyed `sminfo %s`: %s" % (what, sm.name, " ".join(argv), out))
        return
    m = re.search(r"error status (0x[0-9a-f]+)", out)
    if not m or int(m.group(1), 16) != INVALID_FIELD:
        fails.add(where, "%s: sminfo %s: %s (want MAD status %#x)"
                  % (what, " ".join(argv), out[-300:], INVALID_FIELD))
    ev = event_after(follower, last, "EVENT_KIND_SM_STATE", "SMInfo Set %s from" % ctl, 30)
    if ev is None or "refused" not in ev.get("message", ""):
        fails.add(where, "%s: no refusal event from %s within 30 s (got %s)" % (what, sm.name, ev))
    else:
        log("  %s: status %s; %s" % (what, m.group(1) if m else "?", ev["message"][:160]))


def reload_key(env, args, sm, follower, key, where, fails):
    """sm.key = `key` in `sm`'s config, SIGHUP, and the reload event."""
    last = last_event(env, args, sm, where, fails)
    sm.write_sm(key)
    sm.child.proc.send_signal(signal.SIGHUP)
    ev = event_after(follower, last, "EVENT_KIND_CONFIG_RELOAD", "sm.key", 30)
    if ev is None:
        fails.add(where, "%s: no reload applying sm.key within 30 s of SIGHUP, see %s"
                  % (sm.name, sm.child.log.name))
    return ev is not None


def bogus_set(env, ib, net, args, work, sockdir, fails):
    """SMInfo Sets from a port that is no SM: sminfo on ibsim's first node
    (SMInfo GUID 0 and SM_Key 0) claiming a state, a priority, and the
    modifier to apply. Refused by the state rules while both SMs run with
    sm.key 0 (every SM a peer), then by the key once both run with another."""
    where = "bogus-set"
    cas = net.cas()
    pair = Pair(env, args, work, sockdir, key=0)
    try:
        if not pair.start(cas[1], cas[-1], where, fails):
            return
        lo, hi, follow_lo, follow_hi = pair.lo, pair.hi, pair.follow_lo, pair.follow_hi
        hi_st, lo_st = check_roles(env, args, hi, lo, (None,), where, fails)
        hi_lid, lo_lid = str(hi_st.get("sm_lid", 0)), str(lo_st.get("sm_lid", 0))
        lo_last = last_event(env, args, lo, where, fails)
        hi_last = last_event(env, args, hi, where, fails)

        # 1. The state rules: a Set from a sender in STANDBY (priority 15).
        for sm, follower, lid, ctl in ((hi, follow_hi, hi_lid, 3), (hi, follow_hi, hi_lid, 5),
                                       (lo, follow_lo, lo_lid, 1), (lo, follow_lo, lo_lid, 3)):
            send_refused(env, args, sm, follower, ["-s", "2", "-p", "15", lid, str(ctl)],
                         "sm.key 0, %s from a STANDBY sender to %s" % (CONTROLS[ctl], sm.name),
                         where, fails)
        check_quiet(follow_hi, hi_last, hi, where, fails)
        check_quiet(follow_lo, lo_last, lo, where, fails)
        check_roles(env, args, hi, lo, (None,), where, fails)

        # The control: DISCOVER from a sender in MASTER is valid at sm.key
        # 0: low discovers again and follows high once more.
        rc, _, out = sminfo(env, ["-s", "3", "-p", "15", lo_lid, "5"])
        ev = event_after(follow_lo, lo_last, "EVENT_KIND_SM_STATE", "-> DISCOVERING", 30)
        ev2 = ev and event_after(follow_lo, int(ev["id"]), "EVENT_KIND_SM_STATE", "-> STANDBY",
                                 60)
        if rc != 0 or ev is None or ev2 is None:
            fails.add(where, "control: DISCOVER from a MASTER sender to low: sminfo rc %d %s; "
                      "events %s, %s" % (rc, out[-200:], ev, ev2))
            return
        log("  control, sm.key 0: DISCOVER from a MASTER sender obeyed by low: %s; %s"
            % (ev["message"][:100], ev2["message"][:100]))
        check_roles(env, args, hi, lo, (None,), where, fails)

        # 2. The key: both at another key, Sets that the state rules allow
        # (from a sender in MASTER) but with SM_Key 0 are refused.
        if not (reload_key(env, args, hi, follow_hi, WRONG_KEY, where, fails)
                and reload_key(env, args, lo, follow_lo, WRONG_KEY, where, fails)):
            return
        lo_last = last_event(env, args, lo, where, fails)
        hi_last = last_event(env, args, hi, where, fails)
        for ctl in (5, 3, 1):
            send_refused(env, args, lo, follow_lo, ["-s", "3", "-p", "15", lo_lid, str(ctl)],
                         "sm.key %#x, %s with SM_Key 0 from a MASTER sender to low"
                         % (WRONG_KEY, CONTROLS[ctl]), where, fails)
        check_quiet(follow_hi, hi_last, hi, where, fails)
        check_quiet(follow_lo, lo_last, lo, where, fails)
        check_roles(env, args, hi, lo, (None,), where, fails)
    finally:
        pair.close()


class OpenSm:
    """OpenSM on simulated node `host` with priority `prio`, its files under
    WORKDIR/TAG (no system opensm.conf, no cache of an earlier run), its
    log on stdout (read as it comes)."""

    def __init__(self, tag, host, prio, env, workdir, conf_lines=()):
        d = os.path.join(workdir, tag)
        os.makedirs(os.path.join(d, "cache"), exist_ok=True)
        os.makedirs(os.path.join(d, "tmp"), exist_ok=True)
        self.dir = d
        conf = os.path.join(d, "opensm.conf")
        with open(conf, "w") as f:
            f.write("\n".join([
                "log_file stdout", "force_log_flush TRUE", "console off",
                "sm_priority %d" % prio,
                "partition_config_file %s" % os.path.join(d, "partitions.conf"),
                "qos_policy_file %s" % os.path.join(d, "qos-policy.conf"),
                "prefix_routes_file %s" % os.path.join(d, "prefix-routes.conf")] +
                list(conf_lines)) + "\n")
        opensm = shutil.which("opensm", path=os.environ.get("PATH", "") + ":/usr/sbin")
        self.child = Child([opensm, "-F", conf, "-f", "stdout", "-p", str(prio)], env,
                           os.path.join(d, "opensm.log"),
                           extra_env={"SIM_HOST": host, "OSM_TMP_DIR": os.path.join(d, "tmp"),
                                      "OSM_CACHE_DIR": os.path.join(d, "cache")})

    def wait(self, rx, timeout=60):
        return self.child.wait_line(rx, timeout)

    def guid2lid(self):
        """Port GUID -> LID from OpenSM's guid2lid cache."""
        out = {}
        try:
            with open(os.path.join(self.dir, "cache", "guid2lid")) as f:
                for line in f:
                    parts = line.split()
                    if len(parts) >= 2:
                        out[int(parts[0], 16)] = int(parts[1], 16)
        except OSError:
            pass
        return out

    def kill(self):
        self.child.proc.send_signal(signal.SIGKILL)
        self.child.finish(timeout=10)

    def stop(self):
        if self.child.proc.poll() is None:
            self.child.finish(timeout=20, sig=signal.SIGTERM)


def opensm_pair(env, ib, net, args, work, sockdir, fails):
    cas = net.cas()
    where = "opensm-master"
    osm = OpenSm("opensm-high", cas[1], 15, env, work)
    sm = None
    osm2 = None
    try:
        # 1. OpenSM master, subnetd standby; OpenSM killed: subnetd takes over.
        if osm.wait(r"SUBNET UP") is None:
            fails.add(where, "OpenSM: no SUBNET UP, see %s" % osm.child.log.name)
            return
        rc, out, _ = env.run(["sminfo"])
        osm_info = parse_sminfo(out)
        if not osm_info or osm_info["state"] != 3:
            fails.add(where, "sminfo with OpenSM up: %s" % out.strip())
            return
        osm_lids = osm.guid2lid()
        sm = Sm("subnetd", cas[-1], 5, args, env, work, sockdir)
        if not sm.ready():
            fails.add(where, "subnetd: not READY as standby, see %s" % sm.child.log.name)
            return
        st = status(env, args, sm, where, fails)
        if st.get("state") != "SM_STATE_STANDBY" or int(st.get("master_guid", "0")) != osm_info["guid"]:
            fails.add(where, "subnetd next to a higher OpenSM: state %s, master %s (OpenSM's port "
                      "%#x)" % (st.get("state"), st.get("master_guid"), osm_info["guid"]))
        rc, out, _ = env.run(["sminfo"])
        s = parse_sminfo(out)
        if not s or s["guid"] != osm_info["guid"] or s["state"] != 3:
            fails.add(where, "sminfo with subnetd standing by: %s" % out.strip())
        log("  subnetd (priority 5) stands by for OpenSM (priority 15) at LID %d" % osm_info["lid"])
        follow = follow_events(env, args, sm.api, work, "subnetd-events.log", where, fails)
        ev, took = kill_and_wait_master(osm, env, args, sm, follow,
                                        int(st.get("last_event_id", "0")))
        if ev is None:
            fails.add(where, "subnetd did not take over from OpenSM, see %s" % sm.child.log.name)
            return
        log("  takeover from OpenSM (kill -9): %.2f s; %s" % (took, ev.get("message", "")[:160]))
        after = lids_of(sm.dump)
        changed = lid_changes(osm_lids, after)
        if not osm_lids:
            fails.add(where, "OpenSM's guid2lid was not written")
        if changed:
            fails.add(where, "takeover from OpenSM changed %d LIDs, e.g. port %#x"
                      % (len(changed), changed[0]))
        log("  takeover from OpenSM: %d of %d LIDs kept, %d LFT blocks written"
            % (len(osm_lids) - len(changed), len(osm_lids), blocks_sent(sm.log_text())))
        check_ibdmchk(sm.dump, Fabric(sm.dump), where, fails)

        # 2. subnetd master, a lower OpenSM starts: it stands by.
        where = "opensm-standby"
        last = int(status(env, args, sm, where, fails).get("last_event_id", "0"))
        osm2 = OpenSm("opensm-low", cas[1], 3, env, work)
        if osm2.wait(r"[Ee]ntering STANDBY state") is None:
            fails.add(where, "OpenSM (priority 3) did not stand by, see %s" % osm2.child.log.name)
            return
        sm_lid = int(status(env, args, sm, where, fails).get("sm_lid", 0))
        osm2_lid = osm_info["lid"]  # the same CA, the LID subnetd kept
        rc, out, _ = env.run(["sminfo", str(osm2_lid)])
        s = parse_sminfo(out)
        if not s or s["state"] != 2 or s["prio"] != 3:
            fails.add(where, "sminfo %d (OpenSM): %s (want STANDBY, priority 3)" % (osm2_lid, out.strip()))
        rc, out, _ = env.run(["sminfo"])
        s = parse_sminfo(out)
        if not s or s["lid"] != sm_lid or s["state"] != 3:
            fails.add(where, "sminfo: %s (want subnetd master at LID %d)" % (out.strip(), sm_lid))
        # subnetd meets it at each sweep (trap 144 from the port that became
        # an SM asked for one while OpenSM was still discovering): the next
        # one finds it standing by.
        rc, _, err = env.run([args.subnetctl, "--socket", sm.api, "sweep"])
        st = status(env, args, sm, where, fails)
        peers = {int(p.get("guid", "0")): p for p in st.get("sm_peers", [])}
        if rc != 0 or peers.get(osm_info["guid"], {}).get("state") != "SM_STATE_STANDBY":
            fails.add(where, "subnetd's peers: %s (want OpenSM %#x standing by)"
                      % (st.get("sm_peers"), osm_info["guid"]))
        else:
            log("  OpenSM (priority 3) stands by for subnetd; subnetd lists it")

        # 3. subnetd's priority lowered below OpenSM's (SIGHUP): handover.
        where = "opensm-handover"
        last = int(st.get("last_event_id", "0"))
        with open(sm.cfg) as f:
            text = f.read()
        with open(sm.cfg, "w") as f:
            f.write(text.replace("priority: 5", "priority: 1"))
        sm.child.proc.send_signal(signal.SIGHUP)
        standby = follow.wait(lambda e: int(e.get("id", 0)) > last and
                              e.get("kind") == "EVENT_KIND_SM_STATE" and
                              "-> STANDBY" in e.get("message", ""), 60)
        if standby is None:
            fails.add(where, "subnetd at priority 1 did not hand over to OpenSM, see %s"
                      % sm.child.log.name)
            return
        if osm2.wait(r"SUBNET UP") is None:
            fails.add(where, "OpenSM did not take the handover, see %s" % osm2.child.log.name)
        rc, out, _ = env.run(["sminfo"])
        s = parse_sminfo(out)
        if not s or s["guid"] != osm_info["guid"] or s["state"] != 3:
            fails.add(where, "sminfo after the handover to OpenSM: %s" % out.strip())
        else:
            log("  subnetd lowered to priority 1 by SIGHUP hands over to OpenSM: %s"
                % standby.get("message", "")[:120])
        follow.close()
    finally:
        for x in (sm, osm, osm2):
            if x is not None:
                x.stop()


SCENARIOS = {"takeover": subnetd_pair, "split-brain": split_brain, "bogus-set": bogus_set}


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fabric", required=True, help="NAME=SPEC_OR_NETFILE")
    ap.add_argument("--peer", choices=["subnetd", "opensm"], required=True)
    ap.add_argument("--scenario", choices=sorted(SCENARIOS), default="takeover",
                    help="with --peer subnetd (default: takeover)")
    ap.add_argument("--subnetd", required=True)
    ap.add_argument("--subnetctl", required=True)
    ap.add_argument("--netfile-tool", required=True)
    ap.add_argument("--workdir", required=True)
    args = ap.parse_args()
    if args.peer != "subnetd" and args.scenario != "takeover":
        ap.error("--scenario %s needs --peer subnetd" % args.scenario)
    for k in ("subnetd", "subnetctl", "netfile_tool"):
        setattr(args, k, os.path.abspath(getattr(args, k)))
    umad2sim = find_umad2sim()
    skip = missing_tools(TOOLS + (["opensm"] if args.peer == "opensm" else []), umad2sim)
    if skip:
        print(skip)
        return 77
    name, _, spec = args.fabric.partition("=")
    work = fresh_dir(args.workdir)
    path, sizing, summary = make_netfile(args.netfile_tool, spec, os.path.join(work, name + ".net"))
    net = read_net(path)
    log("%s: %s (%s)" % (name, spec, summary))
    sockdir = tempfile.mkdtemp(prefix="subnetd-elect-")
    sock = "sne%d%s" % (os.getpid(), args.peer[:3])
    ib = Ibsim(path, sizing, work, sock)
    env = Env(sock, umad2sim, work)
    fails = Failures()
    try:
        ib.start()
        if args.peer == "subnetd":
            SCENARIOS[args.scenario](env, ib, net, args, work, sockdir, fails)
        else:
            opensm_pair(env, ib, net, args, work, sockdir, fails)
    except RuntimeError as e:
        fails.add(name, str(e))
    finally:
        ib.stop()
        shutil.rmtree(sockdir, ignore_errors=True)
    what = "%s/%s" % (name, args.peer)
    if args.peer == "subnetd":
        what += "/" + args.scenario
    if fails.items:
        print("%s: %d failure(s)" % (what, len(fails.items)))
        return 1
    print("%s: all checks passed" % what)
    return 0


if __name__ == "__main__":
    sys.exit(main())
