"""A per-request round-robin HTTP/1.1 proxy, for tests: each request goes to the next backend.

    python tests/interop/round_robin.py HOST:PORT [HOST:PORT ...]

It listens on a free loopback port and prints ``listening PORT``; then, for every request
it has answered, one line ``METHOD BACKEND-INDEX MCP-METHOD``. Requests and responses are
buffered whole (a stateless MCP request's response ends with its answer), so it is no
load balancer for streams that stay open: it is the smallest thing that sends two
requests of one client, on one kept-alive connection, to two different servers.
"""

from __future__ import annotations

import http.client
import http.server
import itertools
import sys
import threading

# Hop-by-hop fields (RFC 9110 7.6.1) and the ones the proxy writes itself.
_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "host",
        "content-length",
    }
)


def main(arguments: list[str]) -> None:
    backends = []
    for address in arguments:
        host, _, port = address.rpartition(":")
        backends.append((host, int(port)))
    turns = itertools.count()
    lock = threading.Lock()

    class Forward(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            self._forward()

        def do_GET(self) -> None:
            self._forward()

        def do_DELETE(self) -> None:
            self._forward()

        def _forward(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length") or 0))
            with lock:
                index = next(turns) % len(backends)
            host, port = backends[index]
            headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP}
            headers["host"] = f"{host}:{port}"
            upstream = http.client.HTTPConnection(host, port, timeout=30)
            try:
                upstream.request(self.command, self.path, body, headers)
                response = upstream.getresponse()
                data = response.read()
                fields = [(k, v) for k, v in response.getheaders() if k.lower() not in _HOP]
            finally:
                upstream.close()
            self.send_response(response.status)
            for name, value in fields:
                self.send_header(name, value)
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            print(f"{self.command} {index} {self.headers.get('mcp-method', '-')}", flush=True)

        def log_message(self, message_format: str, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Forward)
    print(f"listening {server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main(sys.argv[1:])
