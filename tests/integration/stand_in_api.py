#!/usr/bin/python3
"""A stand-in for a strict third-party HTTP API, on loopback, for the integration tests.

It accepts at most --limit requests in any --period seconds, counting the requests it
accepted by their arrival, and answers 429 to the others. With --retry-after it sends
`Retry-After: S` with each 429 and, as strict APIs do, answers 429 to everything that
arrives within S seconds of it.

Every request is logged to --log as one line `ARRIVAL_SECONDS STATUS PATH` (wall clock),
so that a test can check what reached the server and when. The chosen port is written to
--port-file once the server listens. It stops on SIGTERM, or by itself after --lifetime.
"""

import argparse
import collections
import http.server
import os
import signal
import sys
import threading
import time


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port-file", required=True)
    parser.add_argument("--log", required=True)
    parser.add_argument("--limit", type=int, default=5)
    parser.add_argument("--period", type=float, default=1.0)
    parser.add_argument("--retry-after", type=int, default=0)
    parser.add_argument("--lifetime", type=float, default=300.0)
    args = parser.parse_args()

    lock = threading.Lock()
    accepted = collections.deque()  # arrival times (monotonic) of accepted requests
    penalty_until = [0.0]
    log = open(args.log, "a", buffering=1)

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            with lock:
                now = time.monotonic()
                while accepted and accepted[0] <= now - args.period:
                    accepted.popleft()
                if now < penalty_until[0] or len(accepted) >= args.limit:
                    status = 429
                    if args.retry_after:
                        penalty_until[0] = max(penalty_until[0], now + args.retry_after)
                else:
                    status = 200
                    accepted.append(now)
                log.write(f"{time.time():.6f} {status} {self.path}\n")
            self.send_response(status)
            if status == 429 and args.retry_after:
                self.send_header("Retry-After", str(args.retry_after))
            body = b"ok\n" if status == 200 else b"too many requests\n"
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *unused):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    signal.signal(signal.SIGTERM, lambda *unused: threading.Thread(target=server.shutdown).start())
    stopper = threading.Timer(args.lifetime, server.shutdown)
    stopper.daemon = True
    stopper.start()
    with open(args.port_file + ".tmp", "w") as port_file:
        port_file.write(f"{server.server_address[1]}\n")
    os.rename(args.port_file + ".tmp", args.port_file)
    server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
