"""Waiting for child processes without sleeping (stdlib only).

Shared by the scripts that start ibsim, subnetd, OpenSM or subnetctl and must
know when something has happened in them (issue 13.5: no test sleeps to wait
for something). Found like ibsim_helpers, through the script's own path:

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    import proc_helpers

Every wait here blocks on the event itself and has a deadline that only a
failing run reaches:
  - Tap: a child's output pipe, read on a thread, copied to a file and kept
    for waits on what it prints (a ready line, a console answer, a line that
    matches). A child that exits closes the pipe, which ends a wait too;
  - wait_exit: a child's exit, on a pidfd (select wakes when it exits);
  - NotifySocket: the datagram socket a daemon's sd_notify() writes to
    (NOTIFY_SOCKET): READY=1 once subnetd has published its first MASTER
    state, with its API socket already listening;
  - EventFollower: `subnetctl --json events --follow --from ID`, one JSON
    document per event as the daemon's WatchEvents stream delivers it.
"""
import codecs
import json
import os
import select
import signal
import socket
import subprocess
import threading
import time


def wait_exit(proc, timeout):
    """proc's exit status once it has exited, None if it is still running
    after `timeout` s. Blocks on a pidfd, so it returns as soon as the
    process exits (Popen.wait(timeout) polls in growing steps)."""
    if proc.poll() is not None:
        return proc.returncode
    try:
        fd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):  # Python < 3.9 or Linux < 5.3
        try:
            return proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None
    try:
        ready, _, _ = select.select([fd], [], [], max(0.0, timeout))
    finally:
        os.close(fd)
    return proc.wait() if ready else None


def stop(proc, timeout=10, sig=None):
    """Ends a child: `sig` (if given), then its exit within `timeout` s, else
    SIGKILL. Returns the exit status."""
    if proc.poll() is None and sig is not None:
        try:
            proc.send_signal(sig)
        except OSError:
            pass
    rc = wait_exit(proc, timeout)
    if rc is None:
        proc.kill()
        rc = proc.wait()
    return rc


class Tap:
    """A child's output pipe read on a thread: every byte goes to `path` (as it
    comes, or per line with `prefix`), and the text and lines are kept for
    wait / wait_for (keep=False: only passed to on_line, for long logs). The
    thread ends at EOF (the child closed its output, normally because it
    exited). on_line(line) runs on the thread, under the lock wait() holds."""

    def __init__(self, pipe, path, prefix=None, keep=True, on_line=None):
        """path: a file name, or an open file the tap shares (e.g. with the
        child's stderr) and leaves open."""
        self.text = ""
        self.lines = []
        self.eof = False
        self._cond = threading.Condition()
        self._own = not hasattr(path, "write")
        self._out = open(path, "w") if self._own else path
        self._prefix = prefix
        self._keep = keep
        self._on_line = on_line
        self._pending = ""
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._fd = pipe.fileno()
        self._pipe = pipe
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        while True:
            try:
                data = os.read(self._fd, 65536)
            except OSError:
                data = b""
            with self._cond:
                if not data:
                    if self._pending:
                        self._line(self._pending)
                        self._pending = ""
                    self.eof = True
                    self._out.flush()
                    self._cond.notify_all()
                    return
                chunk = self._decoder.decode(data)
                if self._keep:
                    self.text += chunk
                if self._prefix is None:
                    self._out.write(chunk)
                *done, self._pending = (self._pending + chunk).split("\n")
                for line in done:
                    self._line(line)
                self._out.flush()
                self._cond.notify_all()

    def _line(self, line):
        if self._keep:
            self.lines.append(line)
        if self._on_line is not None:
            self._on_line(line)
        if self._prefix is not None:
            self._out.write("%s%s\n" % (self._prefix, line))

    def wait(self, pred, timeout):
        """Waits until pred() (called under the lock, on each new output) is
        true; returns its value, or None at EOF or the deadline."""
        end = time.monotonic() + timeout
        with self._cond:
            while True:
                v = pred()
                if v:
                    return v
                left = end - time.monotonic()
                if self.eof or left <= 0:
                    return None
                self._cond.wait(left)

    def wait_for(self, text, start, timeout):
        """Position of `text` in the output at or after `start`, or None."""
        def found():
            at = self.text.find(text, start)
            return at + 1 if at >= 0 else None
        at = self.wait(found, timeout)
        return None if at is None else at - 1

    def close(self, timeout=10):
        """Waits for EOF (the child has exited or will be killed by the caller)
        and closes the copy."""
        self._thread.join(timeout)
        with self._cond:
            if self._own and not self._out.closed:
                self._out.close()


class NotifySocket:
    """A datagram socket bound at `path` for a daemon's sd_notify(): start the
    daemon with env NOTIFY_SOCKET=path (self.env) and wait_for("READY=1").
    `path` must be under 108 bytes (a unix socket path).

    A thread reads every message as it comes, as systemd does: a unix
    datagram queue holds only net.unix.max_dgram_qlen (10) messages, and a
    daemon whose STATUS= notifications are not read blocks in sendmsg."""

    def __init__(self, path):
        self.path = path
        self.env = {"NOTIFY_SOCKET": path}
        self.received = []
        self._seen = 0
        self._cond = threading.Condition()
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(path)
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self):
        while True:
            try:
                msg = self.sock.recv(65536)
            except OSError:
                return  # closed
            if not msg:
                return
            with self._cond:
                self.received.append(msg.decode(errors="replace"))
                self._cond.notify_all()

    def wait_for(self, key, proc, timeout):
        """The first message (after those already returned) with the line
        `key` (e.g. "READY=1"), or None: the deadline passed, or `proc`
        exited first (a watcher thread wakes the wait when it does)."""
        end = time.monotonic() + timeout
        exited = threading.Event()

        def watch():
            proc.wait()
            exited.set()
            with self._cond:
                self._cond.notify_all()

        threading.Thread(target=watch, daemon=True).start()
        with self._cond:
            while True:
                while self._seen < len(self.received):
                    msg = self.received[self._seen]
                    self._seen += 1
                    if key in msg.split("\n"):
                        return msg
                if exited.is_set():
                    return None  # what it sent before exiting was read above
                left = end - time.monotonic()
                if left <= 0:
                    return None
                self._cond.wait(left)

    def close(self):
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()
        try:
            os.unlink(self.path)
        except OSError:
            pass


class EventFollower:
    """`subnetctl [--socket S] --json events --follow --from ID`: the daemon's
    events from ID on, one JSON document a line, as they are appended (the
    replay of what is already logged comes first, so nothing between reading
    the last id and starting the follower is missed)."""

    def __init__(self, subnetctl, from_id, env, logpath):
        """subnetctl: the command up to the subcommand, e.g. [BIN, "--socket",
        PATH]; from_id: the first event id wanted."""
        self.proc = subprocess.Popen(subnetctl + ["--json", "events", "--follow",
                                                  "--from", str(max(1, int(from_id)))],
                                     env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT)
        self.tap = Tap(self.proc.stdout, logpath, prefix="")
        self.events = []
        self._parsed = 0

    def _parse(self):
        while self._parsed < len(self.tap.lines):
            line = self.tap.lines[self._parsed].strip()
            self._parsed += 1
            if line.startswith("{"):
                try:
                    self.events.append(json.loads(line))
                except ValueError:
                    pass

    def wait(self, pred, timeout):
        """The first event e (from the start of the stream) with pred(e), or
        None at the deadline or when the stream ended."""
        def found():
            self._parse()
            return next((e for e in self.events if pred(e)), None)
        return self.tap.wait(found, timeout)

    def seen(self):
        """The events received so far."""
        with self.tap._cond:
            self._parse()
            return list(self.events)

    def close(self):
        stop(self.proc, timeout=10, sig=signal.SIGTERM)
        self.tap.close()
