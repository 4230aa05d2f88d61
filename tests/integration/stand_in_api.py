#!/usr/bin/python3
"""A stand-in for a strict third-party HTTP API, on loopback, for the integration tests.

It accepts at most --limit requests in any --period seconds (--window sliding, the default,
counting the requests it accepted by their arrival) or in each window of --period seconds
from the epoch on (--window fixed, as GitHub counts), and answers 429 to the others.

With --retry-after S it sends `Retry-After: S` with each 429 and, as strict APIs do, answers
429 to everything that arrives within S seconds of it. With --retry-after auto it sends the
whole seconds until the quota has room again, and holds no penalty.

--fields says which quota fields each answer carries (a comma-separated list; none by
default):
  github  X-RateLimit-Limit, -Remaining, -Reset (epoch seconds), -Used, -Resource
  ietf    RateLimit-Policy: "default";q=LIMIT;w=PERIOD and RateLimit: "default";r=R;t=T
  draft   RateLimit-Limit, -Remaining, -Reset (delta-seconds), as the older drafts
The remaining count is what the quota has left after this request; the reset is when it next
has more (the window's end, or when the oldest accepted request leaves a sliding window).
--secret sends none of them, only 429 and Retry-After (auto unless given): a limit a client
must find by itself.

--other-rate R spends the same quota at R requests per second from "another client of the
same account", inside the server. --then AFTER:N/PERIOD (repeatable) changes the limit to N
per PERIOD seconds AFTER seconds after the start.

Every request is logged to --log as one line `ARRIVAL_SECONDS STATUS PATH` (wall clock); the
other client's as `ARRIVAL_SECONDS STATUS (other)`. The chosen port is written to --port-file
once the server listens. It stops on SIGTERM, or by itself after --lifetime.
"""

import argparse
import collections
import http.server
import math
import os
import signal
import sys
import threading
import time


class Quota:
    """The quota of one account: at most `limit` accepted requests per `period` seconds."""

    def __init__(self, limit, period, fixed):
        self.limit = limit
        self.period = period
        self.fixed = fixed
        self.accepted = collections.deque()  # arrival times of accepted requests
        self.window_start = None

    def _forget(self, now):
        if self.fixed:
            start = math.floor(now / self.period) * self.period
            if start != self.window_start:
                self.window_start = start
                self.accepted.clear()
        else:
            while self.accepted and self.accepted[0] <= now - self.period:
                self.accepted.popleft()

    def admit(self, now, refuse=False):
        """Counts a request arriving at `now`; returns (accepted, remaining, reset)."""
        self._forget(now)
        accepted = not refuse and len(self.accepted) < self.limit
        if accepted:
            self.accepted.append(now)
        remaining = max(0, self.limit - len(self.accepted))
        if self.fixed:
            reset = self.window_start + self.period
        elif self.accepted:
            reset = self.accepted[0] + self.period
        else:
            reset = now + self.period
        return accepted, remaining, reset


def parse_change(text):
    after, _, rate = text.partition(":")
    limit, _, period = rate.partition("/")
    return float(after), int(limit), float(period or 1)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port-file", required=True)
    parser.add_argument("--log", required=True)
    parser.add_argument("--limit", type=int, default=5)
    parser.add_argument("--period", type=float, default=1.0)
    parser.add_argument("--window", choices=["sliding", "fixed"], default="sliding")
    parser.add_argument("--retry-after", default="0")
    parser.add_argument("--fields", default="")
    parser.add_argument("--secret", action="store_true")
    parser.add_argument("--other-rate", type=float, default=0.0)
    parser.add_argument("--then", action="append", type=parse_change, default=[])
    parser.add_argument("--lifetime", type=float, default=300.0)
    args = parser.parse_args()
    fields = set(filter(None, args.fields.split(",")))
    unknown = fields - {"github", "ietf", "draft"}
    if unknown:
        parser.error(f"unknown --fields {','.join(sorted(unknown))}: expected github, ietf, draft")
    retry_after = args.retry_after
    if args.secret:
        fields = set()
        if retry_after == "0":
            retry_after = "auto"
    penalty = 0 if retry_after == "auto" else int(retry_after)

    lock = threading.Lock()
    quota = Quota(args.limit, args.period, args.window == "fixed")
    changes = sorted(args.then)
    started = time.time()
    penalty_until = [0.0]
    log = open(args.log, "a", buffering=1)

    def decide(now, path):
        """Decides a request at `now` under the lock, logs it; returns status and headers."""
        while changes and now >= started + changes[0][0]:
            _, quota.limit, quota.period = changes.pop(0)
        accepted, remaining, reset = quota.admit(now, refuse=now < penalty_until[0])
        status = 200 if accepted else 429
        headers = []
        if status == 429 and penalty:
            penalty_until[0] = max(penalty_until[0], now + penalty)
            headers.append(("Retry-After", str(penalty)))
        elif status == 429 and retry_after == "auto":
            headers.append(("Retry-After", str(max(1, math.ceil(reset - now)))))
        delta = max(0, math.ceil(reset - now))
        if "github" in fields:
            headers += [("X-RateLimit-Limit", str(quota.limit)),
                        ("X-RateLimit-Remaining", str(remaining)),
                        ("X-RateLimit-Reset", str(math.ceil(reset))),
                        ("X-RateLimit-Used", str(quota.limit - remaining)),
                        ("X-RateLimit-Resource", "core")]
        if "ietf" in fields:
            headers += [("RateLimit-Policy", f'"default";q={quota.limit};w={math.ceil(quota.period)}'),
                        ("RateLimit", f'"default";r={remaining};t={delta}')]
        if "draft" in fields:
            headers += [("RateLimit-Limit", str(quota.limit)),
                        ("RateLimit-Remaining", str(remaining)),
                        ("RateLimit-Reset", str(delta))]
        log.write(f"{now:.6f} {status} {path}\n")
        return status, headers

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            with lock:
                status, headers = decide(time.time(), self.path)
            self.send_response(status)
            for name, value in headers:
                self.send_header(name, value)
            body = b"ok\n" if status == 200 else b"too many requests\n"
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *unused):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    stopping = threading.Event()

    def other_client():
        """Another client of the same account, spending the quota at --other-rate."""
        interval = 1.0 / args.other_rate
        next_time = time.time()
        while not stopping.wait(max(0.0, next_time - time.time())):
            with lock:
                decide(time.time(), "(other)")
            next_time += interval

    if args.other_rate > 0:
        threading.Thread(target=other_client, daemon=True).start()

    def stop(*unused):
        stopping.set()
        threading.Thread(target=server.shutdown).start()

    signal.signal(signal.SIGTERM, stop)
    stopper = threading.Timer(args.lifetime, stop)
    stopper.daemon = True
    stopper.start()
    with open(args.port_file + ".tmp", "w") as port_file:
        port_file.write(f"{server.server_address[1]}\n")
    os.rename(args.port_file + ".tmp", args.port_file)
    server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
