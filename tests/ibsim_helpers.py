"""ibsim for the scripts that run subnetd on it (stdlib only).

Shared by tests/interop/interop.py (ctest), tests/bench/opensm_side_by_side.py
and tests/bench/reroute_ibsim.py. Each of them is run as a file, from ctest's
working directory or any other, and finds this module through its own path:

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    import ibsim_helpers

What is here and why (TESTING.md has the background):
  - Ibsim: one `ibsim -s` with its own socket name and its console on a pipe
    held open (stdin at /dev/null makes ibsim spin), started once its control
    socket is listening, stopped with `quit`;
  - preload_env: the environment under which any libibumad program talks to
    that ibsim instead of /dev/infiniband (umad2sim preload);
  - netfile: a generator spec or an existing net file, as a net file plus the
    ibsim size options that fit it (interop_netfile computes them);
  - write_subnetd_config: the YAML for subnetd on the umad transport;
  - track: every process a script starts is killed when the script exits, so
    no ibsim or daemon outlives a failed run.
"""
import atexit
import os
import subprocess
import time

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


def preload_env(sock, umad2sim=None):
    """os.environ plus what routes libibumad to the ibsim listening on `sock`."""
    lib = umad2sim or find_umad2sim()
    if lib is None:
        raise RuntimeError("libumad2sim.so not found (package libumad2sim0)")
    return dict(os.environ, IBSIM_SOCKNAME=sock, LD_PRELOAD=lib)


def sock_ready(name):
    """True once ibsim listens on its control socket (abstract "@NAME:ctl")."""
    try:
        with open("/proc/net/unix") as f:
            return ("@%s:ctl" % name) in f.read()
    except OSError:
        return False


class Ibsim:
    """One ibsim process with its console on a pipe we hold open.

    `sizing` is the list of size options (-N/-S/-P/-L) for the net file;
    ibsim's output goes to WORKDIR/ibsim.out. `sock` must be unique per run
    (IBSIM_SOCKNAME), so parallel runs never share a simulator."""

    def __init__(self, netfile, sizing, workdir, sock):
        self.netfile, self.sizing, self.workdir, self.sock = netfile, sizing, workdir, sock
        self.proc = None
        self._out = None

    def start(self, timeout=60):
        env = dict(os.environ, IBSIM_SOCKNAME=self.sock)
        env.pop("LD_PRELOAD", None)  # ibsim itself must not go through umad2sim
        self._out = open(os.path.join(self.workdir, "ibsim.out"), "w")
        self.proc = track(subprocess.Popen(
            ["ibsim", "-s"] + list(self.sizing) + [os.path.abspath(self.netfile)],
            stdin=subprocess.PIPE, stdout=self._out, stderr=subprocess.STDOUT, env=env,
            cwd=self.workdir))
        t0 = time.time()
        while not sock_ready(self.sock):
            if self.proc.poll() is not None:
                raise RuntimeError("ibsim exited (rc %s), see %s/ibsim.out"
                                   % (self.proc.returncode, self.workdir))
            if time.time() - t0 > timeout:
                raise RuntimeError("ibsim not ready after %s s" % timeout)
            time.sleep(0.02)

    def console(self, line):
        """One console command, e.g. 'Unlink "sw-1"[3]' (sends trap 128)."""
        self.proc.stdin.write((line + "\n").encode())
        self.proc.stdin.flush()

    def stop(self, timeout=10):
        if self.proc is not None and self.proc.poll() is None:
            try:
                self.console("quit")
                self.proc.stdin.close()
                self.proc.wait(timeout=timeout)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()
        if self._out is not None:
            self._out.close()
            self._out = None


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


def write_subnetd_config(path, engine, store, api_socket, threads=None, log_level=None):
    """subnetd's YAML for the umad transport with periodic sweeps off (only
    traps drive it). The API socket path must stay under 108 bytes (unix
    socket limit): put it in a short /tmp directory, not a build tree."""
    routing = "routing:\n  engine: %s\n" % engine
    if threads is not None:
        routing += "  threads: %d\n" % threads
    text = ("fabric:\n  transport: umad\n" + routing +
            "sweep:\n  interval: 0\nstore:\n  path: %s\napi:\n  socket: %s\n" % (store, api_socket))
    if log_level is not None:
        text += "log:\n  level: %s\n" % log_level
    with open(path, "w") as f:
        f.write(text)
