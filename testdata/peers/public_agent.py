#!/usr/bin/env python3
"""An edge agent written from the public EvoClaw message format alone.

It contains no evoclaw code: MQTT 3.1.1 over a raw socket with the Python
standard library, and the JSON messages of the public agent
(evoclaw-wire-compat.md). Tests start it as an outside peer.

Every command it receives is printed to stdout as one line "CMD <json>",
so a test can count what the orchestrator sent.

Options:
  --broker HOST:PORT     the MQTT broker
  --id ID                agent id
  --caps TEXT            capabilities line (published retained)
  --status               also publish a retained online status with an
                         offline last will (the public agent does neither)
  --tools-list MODE      answer tools_list: "answer", "error" or "ignore"
  --action NAME=RESULT   an action it runs (repeatable); a tool call with
                         parameter "sleep_ms" waits that long first
  --elapsed MS           the elapsed_ms it reports for every tool (default 2)
  --heartbeat SECONDS    heartbeat interval; 0: none (default 0)
  --early-report         send a heartbeat at once after subscribing, before
                         its capabilities and status (a report overtaking
                         the online status, as after a reconnect)
"""

import argparse
import json
import socket
import struct
import sys
import threading
import time


def enc_str(s):
    b = s.encode()
    return struct.pack("!H", len(b)) + b


def enc_len(n):
    out = b""
    while True:
        d = n % 128
        n //= 128
        if n:
            d |= 0x80
        out += bytes([d])
        if not n:
            return out


class MQTT:
    def __init__(self, addr, client_id, will=None):
        host, port = addr.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)))
        self.lock = threading.Lock()
        self.pid = 0
        flags = 0x02  # clean session
        payload = enc_str(client_id)
        if will:
            topic, msg = will
            flags |= 0x04 | (1 << 3) | 0x20  # will, QoS 1, retained
            payload += enc_str(topic) + enc_str(msg)
        var = enc_str("MQTT") + bytes([4, flags]) + struct.pack("!H", 30)
        self.send(0x10, var + payload)
        typ, body = self.read()
        if typ >> 4 != 2 or body[1] != 0:
            raise SystemExit("connect refused: %r" % body)

    def send(self, first, body):
        with self.lock:
            self.sock.sendall(bytes([first]) + enc_len(len(body)) + body)

    def read_exact(self, n):
        buf = b""
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise EOFError("broker closed the connection")
            buf += chunk
        return buf

    def read(self):
        first = self.read_exact(1)[0]
        n, mult = 0, 1
        while True:
            d = self.read_exact(1)[0]
            n += (d & 0x7F) * mult
            mult *= 128
            if not d & 0x80:
                break
        return first, self.read_exact(n)

    def next_id(self):
        with self.lock:
            self.pid = self.pid % 65535 + 1
            return self.pid

    def publish(self, topic, payload, retain=False):
        first = 0x30 | (1 << 1) | (1 if retain else 0)  # QoS 1
        body = enc_str(topic) + struct.pack("!H", self.next_id()) + payload.encode()
        self.send(first, body)

    def subscribe(self, topic):
        self.send(0x82, struct.pack("!H", self.next_id()) + enc_str(topic) + bytes([1]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--broker", required=True)
    ap.add_argument("--id", required=True)
    ap.add_argument("--caps", default="public-format agent")
    ap.add_argument("--status", action="store_true")
    ap.add_argument("--tools-list", default="ignore", choices=["answer", "error", "ignore"])
    ap.add_argument("--action", action="append", default=[])
    ap.add_argument("--elapsed", type=int, default=2)
    ap.add_argument("--heartbeat", type=float, default=0)
    ap.add_argument("--early-report", action="store_true")
    a = ap.parse_args()

    actions = dict(x.split("=", 1) for x in a.action)
    base = "evoclaw/agents/%s/" % a.id
    will = None
    if a.status:
        will = (base + "status", json.dumps({"agent_id": a.id, "status": "offline"}))
    m = MQTT(a.broker, "evoclaw-" + a.id, will)
    m.subscribe(base + "commands")
    start = time.time()

    def report(kind, payload):
        env = {"agent_id": a.id, "agent_type": "monitor", "report_type": kind,
               "payload": payload, "timestamp": int(time.time())}
        m.publish(base + "reports", json.dumps(env))

    def heartbeat():
        report("heartbeat", {"uptime_sec": int(time.time() - start), "actions_total": 0,
                             "actions_success": 0, "actions_failed": 0, "memory_bytes": 0, "custom": {}})

    if a.early_report:
        heartbeat()
    m.publish(base + "capabilities", json.dumps({"agent_id": a.id, "capabilities": a.caps}), retain=True)
    if a.status:
        m.publish(base + "status", json.dumps({"agent_id": a.id, "status": "online"}), retain=True)

    def run_tool(req, p):
        name = p.get("tool", "")
        params = p.get("parameters") or {}
        if name not in actions:
            report("result", {"status": "error", "tool": name, "error": "unknown tool: " + name,
                              "elapsed_ms": 0, "request_id": req})
            return
        time.sleep(int(params.get("sleep_ms", 0)) / 1000.0)
        report("result", {"status": "success", "tool": name, "result": actions[name],
                          "elapsed_ms": a.elapsed, "request_id": req})

    def handle(cmd):
        print("CMD " + json.dumps(cmd), flush=True)
        req = cmd.get("request_id", "")
        kind = cmd.get("command")
        if kind == "ping":
            report("result", {"pong": True})
        elif kind == "tool":
            threading.Thread(target=run_tool, args=(req, cmd.get("payload") or {}), daemon=True).start()
        elif kind == "tools_list":
            if a.tools_list == "answer":
                tools = [{"name": n, "description": "returns " + r, "parameters": {"type": "object", "properties": {}},
                          "timeout_ms": 5000} for n, r in actions.items()]
                report("result", {"tools": tools, "request_id": req})
            elif a.tools_list == "error":
                report("error", {"error": "unknown command: tools_list", "request_id": req})
        else:
            report("error", {"error": "unknown command: %s" % kind, "request_id": req})

    def pinger():
        while True:
            time.sleep(10)
            m.send(0xC0, b"")

    def heartbeats():
        while True:
            time.sleep(a.heartbeat)
            heartbeat()

    threading.Thread(target=pinger, daemon=True).start()
    if a.heartbeat > 0:
        threading.Thread(target=heartbeats, daemon=True).start()
    print("READY", flush=True)
    while True:
        first, body = m.read()
        if first >> 4 != 3:
            continue  # acks, suback, pingresp
        qos = (first >> 1) & 3
        tlen = struct.unpack("!H", body[:2])[0]
        off = 2 + tlen
        if qos:
            pid = body[off:off + 2]
            off += 2
            m.send(0x40, pid)  # PUBACK
        try:
            cmd = json.loads(body[off:])
        except ValueError:
            continue
        handle(cmd)


if __name__ == "__main__":
    try:
        main()
    except (EOFError, KeyboardInterrupt):
        sys.exit(0)
