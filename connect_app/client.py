"""The one way to reach a Kafka Connect cluster's REST API: one method per operation, a timeout on
each call, and every failure turned into a sentence that carries Connect's own message.

Connect answers an error as `{"error_code": N, "message": "..."}`; its 409 means the worker group
is rebalancing (try again shortly) and its 5xx that the worker failed, not that the request was bad.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any
from urllib.parse import quote

import requests
from django.conf import settings

from connect_app.types import ConnectorState, ConnectorView, TaskState
from console.connect_config import ConnectConfig
from console.errors import ConsoleError


class ConnectError(ConsoleError):
    """A Connect call that failed; `http_status` is what the console answers with."""


class ConnectUnreachable(ConnectError):
    """No answer at all (refused, timed out, TLS failed): the worker may be down; a later call may work."""

    http_status = 503


class ConnectRefused(ConnectError):
    """Connect answered with an error about this request (bad config, unknown connector, rebalancing)."""

    def __init__(self, message: str, status: int, connect_status: int) -> None:
        super().__init__(message)
        self.http_status = status
        self.connect_status = connect_status


def _status_for(connect_status: int) -> int:
    """The console's answer for Connect's: the caller's mistakes stay 4xx; a rebalancing group (409: try
    again shortly) is unavailable for now; a failing worker is a bad gateway."""
    return {400: 400, 404: 404, 409: 503, 422: 400}.get(connect_status, 502)


def _q(part: str) -> str:
    return quote(part, safe="")


class ConnectClient:
    def __init__(self, config: ConnectConfig, timeout: float | None = None) -> None:
        self.config = config
        self.timeout = settings.CONNECT_REQUEST_TIMEOUT if timeout is None else timeout
        self.session = requests.Session()
        if config.username:
            self.session.auth = (config.username, config.password)
        self.session.verify = config.ca or True
        self.session.headers["Accept"] = "application/json"

    def close(self) -> None:
        self.session.close()

    # The chokepoint ------------------------------------------------------------------------------
    def request(self, method: str, path: str, *, params: dict[str, Any] | None = None, body: Any = None) -> Any:
        """One call; its JSON answer (None for an empty one), or a ConnectError with a sentence."""
        where = f"Connect cluster '{self.config.name}' at {self.config.url}"
        try:
            answer = self.session.request(method, self.config.url + path, params=params, json=body,
                                          timeout=(min(self.timeout, 3.0), self.timeout))
        except requests.Timeout:
            raise ConnectUnreachable(f"{where} did not answer within {self.timeout:g} s.") from None
        except requests.exceptions.SSLError as exc:
            raise ConnectUnreachable(f"{where} is unreachable: its TLS certificate was refused ({_reason(exc)}).") from None
        except requests.RequestException as exc:
            raise ConnectUnreachable(f"{where} is unreachable ({_reason(exc)}).") from None
        if answer.status_code in (401, 403):
            raise ConnectRefused(f"{where} refused the console's login (HTTP {answer.status_code}): "
                                 "check the Connect cluster's username and password.", 502, answer.status_code)
        try:
            data = answer.json() if answer.content else None
        except ValueError:
            data = None
        if answer.status_code >= 400:
            message = data.get("message") if isinstance(data, dict) else None
            text = (message or answer.text.strip() or answer.reason)[:600]
            if answer.status_code == 409:
                text = f"{text} (the Connect workers are rebalancing: try again in a few seconds)"
            raise ConnectRefused(f"{where} refused the request: {text}", _status_for(answer.status_code), answer.status_code)
        if data is None and answer.content:
            raise ConnectUnreachable(f"{where} answered with something that is not JSON: is that URL a Connect worker?")
        return data

    # Reads ------------------------------------------------------------------------------------------
    def server_info(self) -> dict[str, Any]:
        """GET /: the worker's version, commit and Kafka cluster id."""
        return dict(self.request("GET", "/") or {})

    def connectors(self) -> list[ConnectorView]:
        """Every connector with its status and config, in one call (Connect's expand=status&expand=info)."""
        data = self.request("GET", "/connectors", params={"expand": ["status", "info"]}) or {}
        return sorted((parse_expanded(name, entry) for name, entry in data.items()), key=lambda c: c.name)

    def connector(self, name: str) -> ConnectorView:
        info = self.request("GET", f"/connectors/{_q(name)}") or {}
        return ConnectorView(name=name, type=str(info.get("type", "")), config=dict(info.get("config") or {}),
                             state=self.status(name))

    def status(self, name: str) -> ConnectorState:
        return parse_status(self.request("GET", f"/connectors/{_q(name)}/status") or {})

    def plugins(self) -> list[dict[str, str]]:
        return list(self.request("GET", "/connector-plugins") or [])

    def plugin_config_definitions(self, plugin: str) -> list[dict[str, Any]]:
        """The plugin's config keys with their types (`PASSWORD` marks a secret)."""
        return list(self.request("GET", f"/connector-plugins/{_q(plugin)}/config") or [])

    def validate(self, plugin: str, config: dict[str, str]) -> dict[str, Any]:
        """Connect's own validation: {error_count, configs: [{definition, value: {name, errors, ...}}]}."""
        return dict(self.request("PUT", f"/connector-plugins/{_q(plugin)}/config/validate", body=config) or {})

    # Changes -----------------------------------------------------------------------------------------
    def create(self, name: str, config: dict[str, str]) -> None:
        self.request("POST", "/connectors", body={"name": name, "config": config})

    def put_config(self, name: str, config: dict[str, str]) -> None:
        self.request("PUT", f"/connectors/{_q(name)}/config", body=config)

    def pause(self, name: str) -> None:
        self.request("PUT", f"/connectors/{_q(name)}/pause")

    def resume(self, name: str) -> None:
        self.request("PUT", f"/connectors/{_q(name)}/resume")

    def stop(self, name: str) -> None:
        self.request("PUT", f"/connectors/{_q(name)}/stop")

    def restart(self, name: str, include_tasks: bool = False, only_failed: bool = False) -> None:
        params = {"includeTasks": str(include_tasks).lower(), "onlyFailed": str(only_failed).lower()}
        self.request("POST", f"/connectors/{_q(name)}/restart", params=params)

    def restart_task(self, name: str, task: int) -> None:
        self.request("POST", f"/connectors/{_q(name)}/tasks/{int(task)}/restart")

    def delete(self, name: str) -> None:
        self.request("DELETE", f"/connectors/{_q(name)}")

    # Offsets (KIP-875): Connect allows changing them only while the connector is STOPPED -------------
    def offsets(self, name: str) -> list[dict[str, Any]]:
        """GET /connectors/{name}/offsets: [{partition: {...}, offset: {...}}] (a sink's: kafka_topic,
        kafka_partition -> kafka_offset; a source's: whatever its plugin keeps)."""
        return list((self.request("GET", f"/connectors/{_q(name)}/offsets") or {}).get("offsets") or [])

    def alter_offsets(self, name: str, offsets: list[dict[str, Any]]) -> str:
        """PATCH: set these partitions' offsets (an offset of None removes the partition's); Connect's message."""
        return str((self.request("PATCH", f"/connectors/{_q(name)}/offsets", body={"offsets": offsets}) or {}).get("message", ""))

    def reset_offsets(self, name: str) -> str:
        """DELETE: forget every offset of the connector; Connect's message."""
        return str((self.request("DELETE", f"/connectors/{_q(name)}/offsets") or {}).get("message", ""))


def _reason(exc: Exception) -> str:
    """The innermost cause's words (urllib3 wraps 'Connection refused' several times)."""
    inner: BaseException = exc
    while inner.__context__ is not None and inner.__context__ is not inner:
        inner = inner.__context__
    text = str(inner) or type(inner).__name__
    for marker in ("Connection refused", "Name or service not known", "timed out", "No route to host", "Connection reset"):
        if marker in str(exc) or marker in text:
            return marker.lower()
    if "RemoteDisconnected" in str(exc) or "Connection aborted" in str(exc):
        return "it closed the connection"
    return text[:200]


def parse_status(data: dict[str, Any]) -> ConnectorState:
    connector = data.get("connector") or {}
    tasks = tuple(
        TaskState(id=int(t.get("id", 0)), state=str(t.get("state", "UNASSIGNED")), worker_id=str(t.get("worker_id", "")),
                  trace=str(t.get("trace") or ""))
        for t in sorted(data.get("tasks") or [], key=lambda t: int(t.get("id", 0)))
    )
    return ConnectorState(name=str(data.get("name", "")), type=str(data.get("type", "")),
                          state=str(connector.get("state", "UNASSIGNED")), worker_id=str(connector.get("worker_id", "")),
                          trace=str(connector.get("trace") or ""), tasks=tasks)


def parse_expanded(name: str, entry: dict[str, Any]) -> ConnectorView:
    info = entry.get("info") or {}
    status = dict(entry.get("status") or {"name": name})
    status.setdefault("name", name)
    status.setdefault("type", info.get("type", ""))
    config = dict(info.get("config") or {})
    state = replace(parse_status(status), plugin=str(config.get("connector.class", "")))
    return ConnectorView(name=name, type=str(info.get("type") or status.get("type") or ""), config=config, state=state)
