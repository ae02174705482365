"""ibsim for the scripts that run subnetd on it (stdlib only).

Shared by tests/interop/interop.py (ctest), tests/opensm/opensm_runner.py
(OpenSM on ibsim), tests/bench/opensm_side_by_side.py and
tests/bench/reroute_ibsim.py. Each of them is run as a file, from ctest's
working directory or any other, and finds this module through its own path:

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    import ibsim_helpers

What is here and why (tests/opensm/README.md has the background):
  - Ibsim: one `ibsim -s` with its own socket name and its console on a pipe
    held open (stdin at /dev/null makes ibsim spin); start() and console()
    return once ibsim's console loop has answered (sockets bound, command
    carried out), stop() sends `quit` and waits for the exit;
  - preload_env: the environment under which any libibumad program talks to
    that ibsim instead of /dev/infiniband (umad2sim preload);
  - client_cwd: a fresh working directory for each such program (umad2sim
    keeps per-pid files there that must never meet another client's);
  - netfile: a generator spec or an existing net file, as a net file plus the
    ibsim size options that fit it (interop_netfile computes them);
  - read_net / ibsim_sizing / pick_link: a net file read without our
    tools (nodes, links, the size options), and the switch-to-switch cable a
    benchmark pulls, chosen the same way for every SM that is compared;
  - write_subnetd_config: the YAML for subnetd on the umad transport;
  - track: every process a script starts is killed when the script exits, so
    no ibsim or daemon outlives a failed run.
"""
import atexit
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from proc_helpers import Tap, stop  # noqa: E402

UMAD2SIM_CANDIDATES = [
    "/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so",
    "/usr/lib/aarch64-linux-gnu/umad2sim/libumad2sim.so",
    "/usr/lib64/umad2sim/libumad2sim.so",
    "/usr/lib/umad2sim/libumad2sim.so",
]

_CHILDREN = []


def track(proc):
    """Registers a child process to be killed at exit if still running."""
    _CHILDREN.append(proc)
    return proc


def _kill_children():
    for p in _CHILDREN:
        if p.poll() is None:
            p.kill()
            p.wait()


atexit.register(_kill_children)


def find_umad2sim():
    """Path of libumad2sim.so, or None when umad2sim is not installed."""
    return next((p for p in UMAD2SIM_CANDIDATES if os.path.exists(p)), None)


def client_cwd(base):
    """A new, empty directory under `base` for one umad2sim client to run in;
    remove it (shutil.rmtree) once the client has exited.

    umad2sim writes its fake sysfs to ./sys-<pid> in the client's working
    directory and removes it in an atexit handler, so a client that is killed
    leaves it behind. Clients that share a directory (every interop test runs
    in ctest's build/tests/interop) then meet a leftover whenever a pid comes
    round again (pid_max is 32768; a run spawns thousands of processes): the
    new client rewrites its own files but sees the old ones too. After a
    client that sat on a switch (ibsim's example nets start with one), an HCA
    client finds ports/0 beside its ports/1, libibumad picks port 0, finds
    no umad device for it and fails with "can't open UMAD port ((null):0)"
    right after "sim_connect: attached as client 0"."""
    return tempfile.mkdtemp(prefix="umad2sim-", dir=base)


def preload_env(sock, umad2sim=None):
    """os.environ plus what routes libibumad to the ibsim listening on `sock`."""
    lib = umad2sim or find_umad2sim()
    if lib is None:
        raise RuntimeError("libumad2sim.so not found (package libumad2sim0)")
    return dict(os.environ, IBSIM_SOCKNAME=sock, LD_PRELOAD=lib)


class Ibsim:
    """One ibsim process with its console on a pipe we hold open.

    `sizing` is the list of size options (-N/-S/-P/-L) for the net file;
    ibsim's output goes to WORKDIR/`out` (ibsim.out). `sock` must be unique per
    run (IBSIM_SOCKNAME), so parallel runs never share a simulator.

    Ready means the console loop runs: ibsim prints its banner and prompt
    *before* it binds its sockets (sim_init_console, then sim_run ->
    sim_init_conn), and reads the console only in the select loop after
    them. So start() writes a comment line to the console and waits for ibsim
    to print it back; console() does the same after each command, so when it
    returns the command has been applied (and a client that connects now is
    answered by the state it left)."""

    def __init__(self, netfile, sizing, workdir, sock, out="ibsim.out"):
        self.netfile, self.sizing, self.workdir, self.sock = netfile, sizing, workdir, sock
        self.out = os.path.join(workdir, out)
        self.proc = None
        self.tap = None
        self._marks = 0
        self._synced = 0  # output before this was returned by sync()

    def start(self, timeout=60):
        env = dict(os.environ, IBSIM_SOCKNAME=self.sock)
        env.pop("LD_PRELOAD", None)  # ibsim itself must not go through umad2sim
        self.proc = track(subprocess.Popen(
            ["ibsim", "-s"] + list(self.sizing) + [os.path.abspath(self.netfile)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env,
            cwd=self.workdir))
        self.tap = Tap(self.proc.stdout, self.out)
        if self.sync(timeout) is None:
            if self.proc.poll() is not None:
                raise RuntimeError("ibsim exited (rc %s), see %s" % (self.proc.returncode, self.out))
            raise RuntimeError("ibsim not ready after %s s, see %s" % (timeout, self.out))

    def sync(self, timeout=30):
        """Writes a comment line and waits until ibsim prints it back: every
        console line written before has been processed. Returns what ibsim
        printed since the previous sync (answers, warnings), None if it
        exited or did not answer in time."""
        self._marks += 1
        mark = "#ibsim_helpers-sync-%d." % self._marks
        start = self._synced
        try:
            self.proc.stdin.write((mark + "\n").encode())
            self.proc.stdin.flush()
        except OSError:
            return None
        at = self.tap.wait_for(mark, start, timeout)
        if at is None:
            return None
        self._synced = at + len(mark)
        return self.tap.text[start:at]

    def console(self, line, timeout=30):
        """One console command, e.g. 'Unlink "sw-1"[3]' (sends trap 128);
        returns once ibsim has carried it out, with what it printed (its
        errors start with "#", e.g. '# nodeid "x" (x) not found'). RuntimeError
        when ibsim does not get there."""
        try:
            self.proc.stdin.write((line + "\n").encode())
            self.proc.stdin.flush()
        except OSError as e:
            raise RuntimeError("ibsim console: %s: %s" % (line, e))
        out = self.sync(timeout)
        if out is None:
            raise RuntimeError("ibsim did not carry out %r within %s s, see %s" % (line, timeout, self.out))
        return out

    def stop(self, timeout=10):
        if self.proc is not None and self.proc.poll() is None:
            try:
                self.proc.stdin.write(b"quit\n")
                self.proc.stdin.close()
            except OSError:
                pass
            stop(self.proc, timeout)
        if self.tap is not None:
            self.tap.close()
            self.tap = None


def netfile(netfile_tool, spec, out):
    """(net file, ibsim size options, one-line summary) for `spec`: an
    existing net file is used as it is; anything else is a generator spec,
    written to `out` by interop_netfile. RuntimeError with the tool's message
    on failure."""
    if os.path.exists(spec):
        path = os.path.abspath(spec)
        cmd = [netfile_tool, "--sizing", path]
    else:
        path = os.path.abspath(out)
        cmd = [netfile_tool, spec, path]
    p = subprocess.run(cmd, capture_output=True, text=True)
    lines = p.stdout.splitlines()
    if p.returncode != 0 or len(lines) < 2:
        raise RuntimeError("net file for %s: %s" % (spec, (p.stderr or p.stdout).strip()))
    return path, lines[0].split(), lines[1]


# A record header ("Switch 36 "id"", "Hca 1 "id"", "Ca"/"Rt" alike) and a
# port line ("[3] "id"[5]", "[3](portguid) "id"[5](guid) ..." as
# ibnetdiscover writes it); everything else (GUID lines, comments) is skipped.
_NET_HEADER = re.compile(r'^(Switch|Hca|Ca|Rt)\s+(\d+)\s+"([^"]+)"')
_NET_PORT = re.compile(r'^\[(\d+)\](?:\([0-9a-fA-Fx]+\))?\s*"([^"]+)"\[(\d+)\]')


class Net:
    """A net file's nodes and links, read without our tools.

    `nodes` maps a node id to {"switch": bool, "ports": N, "links": {port:
    (peer id, peer port)}}; `order` is the order of the records in the file.
    Links listed on one side only (ibsim's examples) are filled in on the
    other; a link to a node the file never declares is left out."""

    def __init__(self, path):
        self.path, self.nodes, self.order = path, {}, []
        cur = None
        with open(path) as f:
            for line in f:
                m = _NET_HEADER.match(line)
                if m:
                    cur = m.group(3)
                    self.nodes[cur] = {"switch": m.group(1) == "Switch", "ports": int(m.group(2)),
                                       "links": {}}
                    self.order.append(cur)
                    continue
                m = _NET_PORT.match(line)
                if m and cur is not None:
                    self.nodes[cur]["links"][int(m.group(1))] = (m.group(2), int(m.group(3)))
                elif not line.strip():
                    cur = None  # a blank line ends the record
        for nid in self.order:
            for port, (peer, pport) in list(self.nodes[nid]["links"].items()):
                if peer not in self.nodes:
                    del self.nodes[nid]["links"][port]
                else:
                    self.nodes[peer]["links"].setdefault(pport, (nid, port))

    def switches(self):
        return [n for n in self.order if self.nodes[n]["switch"]]

    def cas(self):
        return [n for n in self.order if not self.nodes[n]["switch"]]

    def switch_links(self):
        """Every switch-to-switch link once, as (a, port, b, port) named from
        the end whose (id, port) sorts first, in file order of that end."""
        out = []
        for a in self.switches():
            for pa, (b, pb) in sorted(self.nodes[a]["links"].items()):
                if self.nodes[b]["switch"] and (a, pa) < (b, pb):
                    out.append((a, pa, b, pb))
        return out

    def sm_switch(self):
        """The switch the SM sits on or next to: ibsim attaches its clients
        (the SM too) to the first node of the file."""
        first = self.order[0] if self.order else None
        if first is None or self.nodes[first]["switch"]:
            return first
        peers = [p for _, (p, _) in sorted(self.nodes[first]["links"].items())]
        return peers[0] if peers else None


def read_net(path):
    return Net(path)


def ibsim_sizing(net):
    """ibsim's size options for a Net, the rule discovery/topo/netfile.cpp
    applies (interop_netfile --sizing): -N nodes, -S switches, -P ports (a
    switch counts port 0), and -L 49152 once the LIDs reach 0x7800."""
    ports = sum(n["ports"] + (1 if n["switch"] else 0) for n in net.nodes.values())
    lids = sum(1 if n["switch"] else n["ports"] for n in net.nodes.values())
    args = ["-N", str(len(net.nodes)), "-S", str(len(net.switches())), "-P", str(ports)]
    if lids >= 0x7800:
        args += ["-L", str(0xC000)]
    return args


def pick_link(net):
    """The switch-to-switch cable a benchmark pulls: the middle one of
    Net.switch_links() once the links of the SM's own switch are left out (so
    the SM keeps its way into the fabric). (a, port, b, port), or None when
    the fabric has no switch-to-switch link."""
    links = net.switch_links()
    away = [l for l in links if net.sm_switch() not in (l[0], l[2])] or links
    return away[len(away) // 2] if away else None


# The partitions the interop daemon runs with: the default (every port full)
# and INTEROP_PKEY with every port a limited member (the SM's port is a full
# member of every partition), so that what ibsim's ports hold after
# programming differs from what they power up with (0xffff alone).
INTEROP_PKEY = 0x0123
INTEROP_PARTITIONS = ("partitions:\n"
                      "  - {name: default, pkey: 0x7fff, ipoib: true, members: all}\n"
                      "  - {name: interop, pkey: 0x%04x, members: [{all: true, membership: limited}]}\n"
                      % INTEROP_PKEY)


def write_subnetd_config(path, engine, store, api_socket, threads=None, log_level=None,
                         partitions=None, perfmgr_interval=None):
    """subnetd's YAML for the umad transport with periodic sweeps off (only
    traps drive it). The API socket path must stay under 108 bytes (unix
    socket limit): put it in a short /tmp directory, not a build tree."""
    routing = "routing:\n  engine: %s\n" % engine
    if threads is not None:
        routing += "  threads: %d\n" % threads
    sweep = "sweep:\n  interval: 0\n"
    if os.environ.get("TSAN_OPTIONS"):
        # Under ThreadSanitizer subnetd drains its umad socket 5-15x slower;
        # with 64 SMPs in flight ibsim's answers then outrun it and some are
        # lost, and 4 tries of 100 ms were seen to run out. Fewer in flight
        # and more time per SMP: the checks are about what is programmed.
        sweep += "  smp_window: 16\n  timeout: 1s\n"
    text = ("fabric:\n  transport: umad\n" + routing + sweep +
            "store:\n  path: %s\napi:\n  socket: %s\n" % (store, api_socket))
    if log_level is not None:
        text += "log:\n  level: %s\n" % log_level
    if partitions is not None:
        text += partitions
    if perfmgr_interval is not None:
        text += "perfmgr:\n  interval: %s\n" % perfmgr_interval
    with open(path, "w") as f:
        f.write(text)
