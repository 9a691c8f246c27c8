#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Host side of the lab's control line, and a one-shot QMP client.

  lab-relay.py relay CTL_SOCK QMP_SOCK
      Connect to a VM's second serial port (a QEMU unix socket chardev,
      ttyS1 in the guest) and to one of its QMP monitors; for every line
      "lab-link NONCE IFNAME on|off" from the guest run QMP set_link on the
      netdev IFNAME and answer "lab-link NONCE ok" (after QEMU returned)
      or "lab-link NONCE error MESSAGE"; for "lab-virtq NONCE IFNAME"
      answer "lab-virtq NONCE ok TEXT" with the QEMU side of the virtio
      NIC nicN behind IFNAME ethN (device status, and per queue the avail
      index QEMU has seen and taken, the used index and requests in use),
      for a stalled link's diagnosis. Other lines are ignored. Exits when
      the VM goes away.
  lab-relay.py qmp QMP_SOCK set_link IFNAME on|off
      The same from the host (lab.sh link).
"""

import json
import socket
import sys
import time


def connect_unix(path, seconds=30):
    """Connect to a QEMU server socket, waiting for QEMU to create it."""
    deadline = time.monotonic() + seconds
    while True:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(path)
            return sock
        except OSError:
            sock.close()
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


class Qmp:
    """Minimal QMP client: greeting, capabilities, synchronous commands."""

    def __init__(self, path):
        self.sock = connect_unix(path)
        self.file = self.sock.makefile("rb")
        self.next_id = 0
        self.read_message()				# the greeting
        self.execute("qmp_capabilities")

    def read_message(self):
        line = self.file.readline()
        if not line:
            raise ConnectionError("QMP closed")
        return json.loads(line)

    def execute(self, command, **arguments):
        """Run a command; return (True, result) or (False, error text)."""
        self.next_id += 1
        msg = {"execute": command, "id": self.next_id}
        if arguments:
            msg["arguments"] = arguments
        self.sock.sendall(json.dumps(msg).encode() + b"\n")
        while True:
            reply = self.read_message()
            if reply.get("id") != self.next_id:
                continue			# an asynchronous event
            if "error" in reply:
                return False, reply["error"].get("desc", "QMP error")
            return True, reply.get("return")

    def virtq(self, ifname):
        """One line on the virtio NIC behind netdev IFNAME (ethN: nicN)."""
        if not ifname.startswith("eth") or not ifname[3:].isdigit():
            return False, "no such interface: %s" % ifname
        path = "/machine/peripheral/nic%s/virtio-backend" % ifname[3:]
        ok, st = self.execute("x-query-virtio-status", path=path)
        if not ok:
            return False, st
        status = [s.split(":")[0].replace("VIRTIO_CONFIG_S_", "")
                  for s in st["status"].get("statuses", [])]
        words = ["status=%s" % ",".join(status),
                 "broken=%s" % st.get("broken"),
                 "vm-running=%s" % st.get("vm-running")]
        for index, role in ((0, "rx"), (1, "tx")):
            ok, q = self.execute("x-query-virtio-queue-status",
                                 path=path, queue=index)
            if not ok:
                return False, q
            words.append("%s: avail %d taken %d used %d signalled %d inuse %d"
                         % (role, q["shadow-avail-idx"], q["last-avail-idx"],
                            q["used-idx"], q["signalled-used"], q["inuse"]))
        return True, " ".join(words)

    def set_link(self, name, state):
        if state not in ("on", "off"):
            return False, "state must be on or off"
        return self.execute("set_link", name=name, up=state == "on")


def relay(ctl_path, qmp_path):
    qmp = Qmp(qmp_path)
    ctl = connect_unix(ctl_path)
    for raw in ctl.makefile("rb"):
        words = raw.decode(errors="replace").split()
        if len(words) == 4 and words[0] == "lab-link":
            nonce, name, state = words[1:]
            ok, result = qmp.set_link(name, state)
            result = "" if ok else " " + result
        elif len(words) == 3 and words[0] == "lab-virtq":
            nonce, name = words[1:]
            ok, result = qmp.virtq(name)
            result = " " + result
        else:
            continue
        answer = "%s %s %s%s" % (words[0], nonce, "ok" if ok else "error",
                                  result)
        ctl.sendall(answer.encode() + b"\n")
    return 0


def one_shot(qmp_path, command, name, state):
    if command != "set_link":
        print("lab-relay: only set_link is supported", file=sys.stderr)
        return 2
    ok, result = Qmp(qmp_path).set_link(name, state)
    if not ok:
        print("lab-relay: set_link %s %s: %s" % (name, state, result), file=sys.stderr)
        return 1
    return 0


def main(argv):
    try:
        if len(argv) == 3 and argv[0] == "relay":
            return relay(argv[1], argv[2])
        if len(argv) == 5 and argv[0] == "qmp":
            return one_shot(*argv[1:])
    except (OSError, ConnectionError):
        return 0 if argv[0] == "relay" else 1	# the VM is gone: done
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
