#!/usr/bin/python3
"""A TLS terminator on loopback in front of a plain server, for the integration tests.

It accepts TLS connections (--cert, --key) and carries each one's bytes to and from a new
TCP connection to 127.0.0.1:--backend-port (a plain redis-server). redis-server says
nothing of TLS session resumption; this does: each TLS handshake is logged to --log as one
line, `resumed` when the client resumed a session, `full` when it made a full handshake,
`failed` when the handshake failed (the client refused the certificate, say). The line is
written before any byte is carried, so before the client's first reply.

The port (--port, else a free one) is written to --port-file once it listens. It stops on SIGTERM, or by
itself after --lifetime seconds.
"""

import argparse
import os
import select
import signal
import socket
import ssl
import sys
import threading


def carry(client, backend):
    try:
        while True:
            # Bytes already decrypted wait in the TLS socket, where select does not see them.
            ready = [client] if client.pending() else select.select([client, backend], [], [])[0]
            for source in ready:
                data = source.recv(65536)
                if not data:
                    return
                (backend if source is client else client).sendall(data)
    except (OSError, ssl.SSLError):
        pass
    finally:
        client.close()
        backend.close()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cert", required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--backend-port", type=int, required=True)
    parser.add_argument("--port", type=int, default=0, help="default: a free one")
    parser.add_argument("--port-file", required=True)
    parser.add_argument("--log", required=True)
    parser.add_argument("--lifetime", type=float, default=300.0)
    args = parser.parse_args()

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(args.cert, args.key)
    lock = threading.Lock()
    log = open(args.log, "a", buffering=1)

    def serve(connection):
        try:
            client = context.wrap_socket(connection, server_side=True)
        except (OSError, ssl.SSLError):
            with lock:
                log.write("failed\n")
            connection.close()
            return
        with lock:
            log.write("resumed\n" if client.session_reused else "full\n")
        try:
            backend = socket.create_connection(("127.0.0.1", args.backend_port))
        except OSError:
            client.close()
            return
        carry(client, backend)

    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", args.port))
    listener.listen(64)
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    signal.signal(signal.SIGALRM, lambda *_: os._exit(0))
    signal.alarm(int(args.lifetime))
    with open(args.port_file + ".tmp", "w") as out:
        out.write(f"{listener.getsockname()[1]}\n")
    os.rename(args.port_file + ".tmp", args.port_file)
    while True:
        connection, _ = listener.accept()
        threading.Thread(target=serve, args=(connection,), daemon=True).start()


if __name__ == "__main__":
    sys.exit(main())
