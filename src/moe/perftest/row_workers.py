"""One side of table rows measured in worker processes, so that a call that loses its CUDA context costs only
its own cell (side_by_side.py: TileKernels' get_fused_mapping faults at some shapes, docs/moe.md).

A worker is any command that reads `row I` lines on stdin and answers each with one JSON line on stdout:
{"i": I, "res": [...]} or {"i": I, "error": "...", "fatal": true|false}; after a fatal error it exits (its
context is lost). The pool keeps one worker measuring and one started in advance (it imports while the other
measures), so a fault costs the next row no start-up time. No torch here: CI tests this module without one.
"""
import json
import os
import select
import subprocess
import time


def context_lost(message):
    """True when an exception's text means the process's CUDA context is gone."""
    return 'illegal memory access' in message or 'CUDA error' in message


def fault_cell(message):
    """The table cell of a row whose call failed: 'TK faults (illegal memory access)' and the like."""
    if 'illegal memory access' in message:
        return 'faults (illegal memory access)'
    if 'CUDA error' in message:
        return 'faults (' + message.split('CUDA error:')[-1].strip()[:60] + ')'
    return 'fails (' + message[:60] + ')'


class WorkerPool:
    def __init__(self, argv, row_timeout_s=90.0, env=None):
        self.argv = argv
        self.row_timeout_s = row_timeout_s
        self.env = env
        self.active = None
        self.standby = self._spawn()
        self.spawned = 1

    def _spawn(self):
        return subprocess.Popen(self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=self.env)

    def run(self, i):
        """Row i's reply: {'res': [...]} or {'error': message, 'fatal': bool}."""
        if self.active is None:
            self.active, self.standby = self.standby, None
        if self.standby is None:
            self.standby = self._spawn()  # imports while the active one measures
            self.spawned += 1
        w = self.active
        try:
            w.stdin.write(f'row {i}\n'.encode())
            w.stdin.flush()
        except OSError:
            pass  # it died: the read below says how
        line = _read_line(w.stdout.fileno(), time.time() + self.row_timeout_s)
        if line is None or line is EOF:
            try:  # at EOF the worker is exiting: its status may not be there yet
                w.wait(timeout=0 if line is None else 20)
                why = f'worker exited with status {w.returncode} without a result'
            except subprocess.TimeoutExpired:
                w.kill()
                w.wait()
                why = f'worker gave no result in {self.row_timeout_s:.0f} s'
            self.active = None
            return {'i': i, 'error': why, 'fatal': True}
        try:
            reply = json.loads(line)
        except ValueError:
            reply = {'i': i, 'error': f'worker said {line[:80]!r}', 'fatal': False}
        if reply.get('fatal'):
            try:
                w.wait(timeout=20)
            except subprocess.TimeoutExpired:
                w.kill()
                w.wait()
            self.active = None
        return reply

    def close(self):
        for w in (self.active, self.standby):
            if w is None:
                continue
            try:
                w.stdin.close()
                w.wait(timeout=20)
            except (OSError, subprocess.TimeoutExpired):
                w.kill()
                w.wait()
        self.active = self.standby = None


EOF = object()  # _read_line: the worker closed its end


def _read_line(fd, deadline):
    """One line from fd (no buffering beyond it: one request, one reply); EOF, or None at the deadline."""
    buf = b''
    while not buf.endswith(b'\n'):
        left = deadline - time.time()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            return None
        chunk = os.read(fd, 1)
        if not chunk:
            return EOF
        buf += chunk
    return buf.decode(errors='replace').strip()


def serve(handle, stdin, proto):
    """The worker's loop: handle(i) -> reply dict; returns the exit status (3 after a fatal error)."""
    for line in stdin:
        cmd = line.split()
        if len(cmd) != 2 or cmd[0] != 'row':
            continue
        reply = handle(int(cmd[1]))
        proto.write(json.dumps(reply) + '\n')
        proto.flush()
        if reply.get('fatal'):
            return 3
    return 0
