"""A stand-in for a Kafka Connect worker's REST API, for the web layer (no Kafka, no Java) and the
connectors bench: it answers from what it holds, in Connect's own shapes (recorded from the real
worker of tests/connect_worker.py), and keeps the requests it was sent.

Only what the console asks is answered: GET /, GET /connectors?expand=status&expand=info, one
connector and its status, the plugins and their config definitions, validate, and the changes
(recorded, answered as Connect does)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import unquote, urlsplit

SINK = "org.apache.kafka.connect.file.FileStreamSinkConnector"
SOURCE = "org.apache.kafka.connect.file.FileStreamSourceConnector"


@dataclass
class ConnectDouble:
    url: str = ""
    connectors: dict[str, dict[str, Any]] = field(default_factory=dict)  # name -> {"config", "status"}
    password_keys: dict[str, list[str]] = field(default_factory=dict)  # plugin -> its PASSWORD-type keys
    validation_errors: dict[str, list[str]] = field(default_factory=dict)  # key -> messages validate reports
    requests: list[tuple[str, str, Any]] = field(default_factory=list)  # (method, path, body)
    expanded_body: bytes | None = None  # a recorded answer to replay for the expanded list (the bench)
    offsets: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # name -> [{partition, offset}] (KIP-875)

    def add(self, name: str, plugin: str = SINK, state: str = "RUNNING", tasks: list[str] | None = None,
            config: dict[str, str] | None = None, trace: str = "") -> None:
        kind = "sink" if "Sink" in plugin else "source"
        task_states = tasks if tasks is not None else ["RUNNING"]
        self.connectors[name] = {
            "config": {"connector.class": plugin, "name": name, **(config or {})},
            "status": {"name": name, "type": kind,
                       "connector": {"state": state, "worker_id": "127.0.0.1:8083", "version": "4.3.1"},
                       "tasks": [{"id": i, "state": s, "worker_id": "127.0.0.1:8083", "version": "4.3.1",
                                  **({"trace": trace} if s == "FAILED" and trace else {})} for i, s in enumerate(task_states)]},
        }

    def expanded(self) -> dict[str, Any]:
        return {n: {"status": c["status"], "info": {"name": n, "config": c["config"], "type": c["status"]["type"],
                                                    "tasks": [{"connector": n, "task": t["id"]} for t in c["status"]["tasks"]]}}
                for n, c in self.connectors.items()}

    def answer(self, method: str, path: str, body: Any) -> tuple[int, Any]:
        self.requests.append((method, path, body))
        parts = [unquote(p) for p in urlsplit(path).path.strip("/").split("/") if p]
        if method == "GET" and not parts:
            return 200, {"version": "4.3.1", "commit": "double", "kafka_cluster_id": "double"}
        if parts[:1] == ["connector-plugins"]:
            return self._plugins(method, parts[1:], body)
        if parts == ["connectors"] and method == "GET":
            return 200, self.expanded()
        if parts == ["connectors"] and method == "POST":
            self.add(body["name"], body["config"]["connector.class"], config=body["config"])
            return 201, {"name": body["name"], "config": body["config"], "tasks": [], "type": "sink"}
        name = parts[1] if len(parts) > 1 else ""
        if name not in self.connectors:
            return 404, {"error_code": 404, "message": f"Connector {name} not found"}
        c = self.connectors[name]
        rest = parts[2:]
        if method == "GET" and not rest:
            return 200, {"name": name, "config": c["config"], "tasks": [], "type": c["status"]["type"]}
        if method == "GET" and rest == ["status"]:
            return 200, c["status"]
        if method == "PUT" and rest == ["config"]:
            c["config"] = dict(body)
            return 200, {"name": name, "config": body, "tasks": [], "type": c["status"]["type"]}
        if method == "PUT" and rest and rest[0] in ("pause", "resume", "stop"):
            c["status"]["connector"]["state"] = {"pause": "PAUSED", "resume": "RUNNING", "stop": "STOPPED"}[rest[0]]
            return 202, None
        if method == "POST" and "restart" in rest:
            return 202 if rest[:1] != ["tasks"] else 204, None
        if method == "DELETE" and not rest:
            del self.connectors[name]
            return 204, None
        if rest == ["offsets"]:
            return self._offsets(method, name, body)
        return 405, {"error_code": 405, "message": "HTTP 405 Method Not Allowed"}

    def _offsets(self, method: str, name: str, body: Any) -> tuple[int, Any]:
        """KIP-875 as Connect answers it: changes only while the connector is STOPPED."""
        held = self.offsets.setdefault(name, [])
        if method == "GET":
            return 200, {"offsets": held}
        if self.connectors[name]["status"]["connector"]["state"] != "STOPPED":
            return 400, {"error_code": 400, "message": "Connectors must be in the STOPPED state before their offsets can be modified."}
        if method == "DELETE":
            held.clear()
            return 200, {"message": "The offsets for this connector have been reset successfully"}
        for o in body["offsets"]:
            held[:] = [h for h in held if h["partition"] != o["partition"]] + ([o] if o["offset"] is not None else [])
        return 200, {"message": "The offsets for this connector have been altered successfully"}

    def _plugins(self, method: str, rest: list[str], body: Any) -> tuple[int, Any]:
        if not rest:
            return 200, [{"class": p, "type": "sink" if "Sink" in p else "source", "version": "4.3.1"} for p in (SINK, SOURCE)]
        plugin = rest[0]
        if rest[1:] == ["config"]:
            return 200, [{"name": k, "type": "PASSWORD", "required": False, "default_value": None, "importance": "HIGH",
                          "documentation": "a secret", "group": None, "order": -1} for k in self.password_keys.get(plugin, [])]
        if rest[1:] == ["config", "validate"] and method == "PUT":
            keys = sorted({"name", "connector.class", "tasks.max", *body, *self.validation_errors})
            configs = [{"definition": {"name": k, "type": "STRING", "required": k in self.validation_errors, "default_value": None,
                                       "importance": "HIGH", "documentation": f"{k}'s documentation", "group": None,
                                       "order": i},
                        "value": {"name": k, "value": body.get(k), "recommended_values": [], "errors": self.validation_errors.get(k, []),
                                  "visible": True}} for i, k in enumerate(keys)]
            return 200, {"name": plugin, "error_count": sum(len(v) for v in self.validation_errors.values()), "groups": ["Common"],
                         "configs": configs}
        return 404, {"error_code": 404, "message": f"Plugin {plugin} not found"}


@contextmanager
def running_double(double: ConnectDouble | None = None) -> Iterator[ConnectDouble]:
    found = double or ConnectDouble()

    class Handler(BaseHTTPRequestHandler):
        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            body = json.loads(raw) if raw else None
            if self.command == "GET" and self.path.startswith("/connectors?") and found.expanded_body is not None:
                status, data = 200, found.expanded_body
            else:
                status, answer = found.answer(self.command, self.path, body)
                data = b"" if answer is None else json.dumps(answer).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_PUT = do_POST = do_DELETE = do_PATCH = _serve

        def log_message(self, *args: Any) -> None:
            return None

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    found.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield found
    finally:
        server.shutdown()
        server.server_close()
