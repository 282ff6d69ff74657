"""JSON-RPC calls to a ctxd daemon over HTTP on its Unix socket, standard library only:
what the measuring scripts beside this file share."""

import http.client
import json
import socket


class Conn(http.client.HTTPConnection):
    def __init__(self, path):
        super().__init__("localhost", timeout=600)
        self.path_ = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.connect(self.path_)


def call(sock, method, **params):
    """The result of `method`; an error ends the script with it."""
    c = Conn(sock)
    c.request("POST", "/", json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}),
              {"Content-Type": "application/json"})
    reply = json.loads(c.getresponse().read())
    c.close()
    if "error" in reply:
        raise SystemExit(f"{method}: {reply['error']}")
    return reply["result"]
