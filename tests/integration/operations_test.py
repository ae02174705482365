#!/usr/bin/python3
"""Operations against a live subnetd: /metrics scraped and parsed by the
Prometheus client library's parser, bring-up screening (subnetctl check
cabling with a plan, the configured plan, its events at sweeps), the
performance manager's counters, and the fault policy isolating a flapping
link and returning it after its hold-down (ports --unhealthy).

usage: operations_test.py --subnetctl BIN --socket PATH --metrics HOST:PORT
                          --config FILE --pid PID --workdir DIR

Run by run_with_subnetd.py --metrics on fat-tree:levels=2,radix=8. Uses the
Python client package (clients/python) on PYTHONPATH. Exits 0 when every
check passes.
"""

import argparse
import json
import os
import signal
import subprocess
import sys

from subnetd_client import Client, pb

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from metrics_helpers import scrape, value  # noqa: E402
from proc_helpers import EventFollower  # noqa: E402

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print(f"FAIL: {what}")
    return cond


def yaml_plan(client):
    """The fabric as a YAML cabling plan: every node by name and GUID, every
    link with its width."""
    widths = {1: "1x", 2: "2x", 4: "4x", 8: "8x", 12: "12x"}
    lines = ["nodes:"]
    for n in client.nodes():
        kind = "switch" if n.type == pb.NODE_TYPE_SWITCH else "ca"
        lines.append(f'  - {{name: "{n.name}", guid: {n.guid:#x}, type: {kind}, '
                     f"ports: {n.num_ports}}}")
    lines.append("cables:")
    for link in client.links():
        lines.append(f'  - {{a: "{link.a.node_name}/{link.a.port}", '
                     f'b: "{link.b.node_name}/{link.b.port}", '
                     f"width: {widths[link.width_lanes]}}}")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--subnetctl", required=True)
    ap.add_argument("--socket", required=True)
    ap.add_argument("--metrics", required=True)
    ap.add_argument("--config", required=True)
    ap.add_argument("--pid", type=int, required=True)
    ap.add_argument("--workdir", required=True)
    args = ap.parse_args()
    ctl = [args.subnetctl, "--socket", args.socket]

    def run(*argv):
        p = subprocess.run(ctl + list(argv), capture_output=True, text=True, timeout=60)
        return p.returncode, p.stdout, p.stderr

    with Client(args.socket, timeout=30) as client:
        st = client.status()
        # --- /metrics -----------------------------------------------------
        m = scrape(args.metrics)
        check(value(m, "subnetd_sm_state", state="MASTER") == 1.0, "sm_state MASTER is 1")
        check(value(m, "subnetd_nodes", type="switch") == st.switches,
              f"metrics switches {value(m, 'subnetd_nodes', type='switch')} = {st.switches}")
        check(value(m, "subnetd_nodes", type="ca") == st.cas, "metrics CAs = GetStatus")
        check(value(m, "subnetd_lids") == st.lids, "metrics LIDs = GetStatus")
        active = value(m, "subnetd_links", state="active")
        check(active == st.links, f"metrics active links {active} = GetStatus links {st.links}")
        check(value(m, "subnetd_sweeps_total") == st.sweeps, "sweeps counter = GetStatus")
        check((value(m, "subnetd_mads_sent_total") or 0) > 0, "MADs were sent")
        check(value(m, "subnetd_mad_timeouts_total") == 0, "no MAD timeouts on the simulator")
        check(value(m, "subnetd_bringup_phase_duration_seconds_count", phase="route") ==
              st.sweeps, "one route observation per heavy sweep")

        # --- check cabling on demand ----------------------------------------
        rc, out, err = run("check", "cabling")
        check(rc == 3 and "no cabling plan" in err,
              f"no plan configured: exit 3 naming it, got {rc}: {err.strip()}")
        plan = yaml_plan(client)
        plan_path = os.path.join(args.workdir, "plan.yaml")
        with open(plan_path, "w") as f:
            f.write(plan)
        rc, out, err = run("check", "cabling", "--plan", plan_path)
        check(rc == 0 and "0 finding(s)" in out, f"own plan: no findings, got {rc}: {out}{err}")
        # Two uplinks of leaf0 exchanged at the leaf in the plan.
        swapped = plan.replace('"leaf0/5"', '"leaf0/X"').replace('"leaf0/6"', '"leaf0/5"') \
                      .replace('"leaf0/X"', '"leaf0/6"')
        bad_path = os.path.join(args.workdir, "swapped.yaml")
        with open(bad_path, "w") as f:
            f.write(swapped)
        rc, out, err = run("--json", "check", "cabling", "--plan", bad_path)
        doc = json.loads(out) if out.startswith("{") else {}
        kinds = [f.get("kind") for f in doc.get("findings", [])]
        check(rc == 1 and kinds == ["CABLING_FINDING_KIND_SWAPPED"],
              f"swapped plan: one SWAPPED finding, exit 1; got {rc} {kinds}")
        broken = os.path.join(args.workdir, "broken.yaml")
        with open(broken, "w") as f:
            f.write("nodes:\n  - {name: leaf0}\ncables:\n  - [leaf0/1, nowhere/1]\n")
        rc, out, err = run("check", "cabling", "--plan", broken)
        check(rc == 2 and "broken.yaml:4:5" in err and "nowhere" in err,
              f"bad plan: exit 2 naming file:line, got {rc}: {err.strip()}")

        # --- the performance manager: injected errors, seen ----------------
        follower = EventFollower(ctl, client.status().last_event_id + 1, os.environ,
                                 os.path.join(args.workdir, "counter-events.log"))
        rc, out, err = run("sim", "errors", "leaf3", "6", "--symbol", "12", "--rcv", "2")
        check(rc == 0, f"sim errors: {rc} {err}")
        ev = follower.wait(lambda e: e.get("kind") == "EVENT_KIND_COUNTERS" and
                           e.get("port") == 6 and "12 symbol errors" in e.get("message", ""), 30)
        check(ev is not None, "a counters event for leaf3 port 6 with its 12 symbol errors")
        follower.proc.terminate()
        rc, out, err = run("--json", "counters", "leaf3", "6")
        doc = json.loads(out) if out.startswith("{") else {}
        total = doc.get("ports", [{}])[0].get("total", {})
        check(rc == 0 and int(total.get("symbol_errors", 0)) == 12 and
              int(total.get("rcv_errors", 0)) == 2,
              f"counters leaf3 6: 12 symbol and 2 receive errors in total, got {rc} {total}")
        rc, out, err = run("errors", "--since-start")
        check(rc == 0 and "leaf3/6" in out, f"errors --since-start lists leaf3/6: {out}{err}")
        rc, out, err = run("top", "-n", "3")
        check(rc == 0 and "busiest ports" in out, f"top: {rc} {out}{err}")
        m = scrape(args.metrics)
        check((value(m, "subnetd_fabric_port_errors_total") or 0) >= 14,
              "the fabric's error total in /metrics")
        lg = value(m, "subnetd_port_errors_total", node_guid=f"{client.node('leaf3').node.guid:#018x}",
                   port="6")
        check(lg == 14, f"leaf3 port 6 among the top erring ports in /metrics: {lg}")

        # --- the configured plan: SIGHUP, events at sweeps -------------------
        follower = EventFollower(ctl, client.status().last_event_id + 1, os.environ,
                                 os.path.join(args.workdir, "events.log"))
        with open(args.config, "a") as f:
            f.write(f'screening:\n  cabling_plan: "{plan_path}"\n')
        os.kill(args.pid, signal.SIGHUP)
        # The reload wakes the screener at the next publish: ask for a sweep.
        client.sweep()
        ok = follower.wait(lambda e: e.get("kind") == "EVENT_KIND_CABLING" and
                           "the fabric matches" in e.get("message", ""), 30)
        check(ok is not None, "a configured plan: 'the fabric matches' event")
        rc, out, err = run("check", "cabling")
        check(rc == 0, f"the configured plan is used by check cabling, got {rc}: {err}")
        # Pull leaf1's uplink on port 6: the repaired topology lacks it.
        client.sim_set_link_state("leaf1", 6, up=False)
        gone = follower.wait(lambda e: e.get("kind") == "EVENT_KIND_CABLING" and
                             "port 6 has no link" in e.get("message", ""), 30)
        check(gone is not None, "an unplugged planned cable: a cabling event naming the port")
        if gone:
            check(gone.get("port") == 6, f"the event names port 6: {gone}")
        m = scrape(args.metrics)
        check((value(m, "subnetd_reroute_duration_seconds_count") or 0) >= 1,
              "the repair is in the reroute histogram")
        follower.proc.terminate()

        # --- the fault policy: a flapping uplink isolated, then returned ------
        follower = EventFollower(ctl, client.status().last_event_id + 1, os.environ,
                                 os.path.join(args.workdir, "health-events.log"))
        with open(args.config, "a") as f:
            f.write("health:\n  flap_count: 2\n  flap_window: 10m\n  hold_down: 2s\n")
        os.kill(args.pid, signal.SIGHUP)
        follower.wait(lambda e: e.get("kind") == "EVENT_KIND_CONFIG_RELOAD", 30)

        def kind(k):
            return lambda e: e.get("kind") == k

        client.sim_set_link_state("leaf2", 7, up=False)
        check(follower.wait(kind("EVENT_KIND_LINK_DOWN"), 30) is not None, "flap 1: link down")
        client.sim_set_link_state("leaf2", 7, up=True)
        check(follower.wait(kind("EVENT_KIND_LINK_UP"), 30) is not None, "flap 1: link up")
        client.sim_set_link_state("leaf2", 7, up=False)
        iso = follower.wait(lambda e: e.get("kind") == "EVENT_KIND_PORT_HEALTH" and
                            "isolated" in e.get("message", ""), 30)
        check(iso is not None and "2 link downs" in iso.get("message", ""),
              f"flap 2: the link is isolated with its evidence: {iso}")
        client.sim_set_link_state("leaf2", 7, up=True)  # the cable is back; the port is disabled
        rc, out, err = run("--json", "ports", "--unhealthy")
        doc = json.loads(out) if out.startswith("{") else {}
        ports = doc.get("ports", [])
        check(rc == 0 and len(ports) == 1 and ports[0].get("status") == "HEALTH_STATUS_ISOLATED"
              and len(ports[0].get("link_downs", [])) == 2,
              f"ports --unhealthy: the isolated link with its two downs, got {rc} {doc}")
        rc, out, err = run("ports", "--unhealthy")
        check(rc == 0 and "ISOLATED (flapping)" in out and "leaf2" in out + err,
              f"ports --unhealthy for people: {out}{err}")
        m = scrape(args.metrics)
        check(value(m, "subnetd_unhealthy_links", status="isolated") == 1,
              "one isolated link in /metrics")
        back = follower.wait(lambda e: e.get("kind") == "EVENT_KIND_PORT_HEALTH" and
                             "hold-down over" in e.get("message", ""), 30)
        check(back is not None, "after the 2 s hold-down the link is returned to service")
        up = follower.wait(kind("EVENT_KIND_LINK_UP"), 30)
        check(up is not None, "and swept in again")
        rc, out, err = run("--json", "ports", "--unhealthy")
        doc = json.loads(out) if out.startswith("{") else {}
        check(rc == 0 and not doc.get("ports") and doc.get("restored_total") == "1",
              f"no unhealthy link left, one restored: {doc}")
        follower.proc.terminate()

    if failures:
        print(f"{len(failures)} check(s) failed")
        return 1
    print("operations: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
