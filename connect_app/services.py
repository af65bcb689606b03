"""Kafka Connect for the pages and the API alike: which Connect cluster, its connectors (from the
watcher's reads, connect_app/state.py), one connector's detail with its secrets masked, Connect's own
validation per field, and the changes (create, edit, pause, resume, stop, restart, delete), each
checked here before Connect is asked, and audited. Views and the API only parse and render."""

from __future__ import annotations

import threading
import time
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings

from connect_app import masking, state
from connect_app.client import ConnectClient, ConnectRefused
from connect_app.types import ConnectClusterState, ConnectorState, ConnectorView
from console import gateway
from console.audit import audited
from console.connect_config import ConnectConfig
from console.errors import BadParameter, ConsoleError

ACTIONS = ("pause", "resume", "stop", "restart")
MAX_NAME_LENGTH = 249
DEFINITIONS_TTL = 300.0  # seconds a plugin's config definitions are kept (they change with a plugin upgrade only)


class NotFound(ConsoleError):
    http_status = 404


class InvalidConfig(BadParameter):
    """Connect's own validation refused the config: `errors` holds its messages per key."""

    def __init__(self, message: str, errors: dict[str, list[str]]) -> None:
        super().__init__(message)
        self.errors = errors


@dataclass
class Outcome:
    message: str
    details: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Detail:
    connect: ConnectConfig
    view: ConnectorView
    config: list[masking.ConfigEntry]


@dataclass(frozen=True)
class Validation:
    """Connect's validation of a config: each key's definition, value and errors, in Connect's groups."""

    error_count: int
    fields: list[dict[str, Any]]  # {name, group, type, required, default, documentation, value, errors}
    errors: dict[str, list[str]]


# Which Connect cluster ---------------------------------------------------------------------------------

def connect_clusters(cluster: str) -> tuple[ConnectConfig, ...]:
    gateway.cluster_config(cluster)  # (404 for an unknown Kafka cluster)
    return tuple(settings.KAFKA_CONNECT.get(cluster, ()))


def connect_config(cluster: str, connect: str | None) -> ConnectConfig:
    found = connect_clusters(cluster)
    if not found:
        raise NotFound(f"Cluster '{cluster}' has no Kafka Connect cluster configured (a \"connect\" list in "
                       "KAFKA_CLUSTERS_FILE, or KAFKA_CONNECT_URL).")
    if not connect:
        return found[0]
    for c in found:
        if c.name == connect:
            return c
    raise NotFound(f"Cluster '{cluster}' has no Connect cluster '{connect}'; its Connect clusters: "
                   f"{', '.join(c.name for c in found)}.")


_clients: dict[ConnectConfig, ConnectClient] = {}
_clients_lock = threading.Lock()


def client(config: ConnectConfig) -> ConnectClient:
    """One client (and its kept-alive connections) per Connect cluster and process."""
    with _clients_lock:
        found = _clients.get(config)
        if found is None:
            found = _clients[config] = ConnectClient(config)
        return found


# Reads ---------------------------------------------------------------------------------------------------

def overview(cluster: str, connect: str | None = None) -> list[ConnectClusterState]:
    """Each Connect cluster's connectors as the watcher last read them; one it has not read yet (the
    watcher just started, or is not running) is read now."""
    configs = [connect_config(cluster, connect)] if connect else list(connect_clusters(cluster))
    found = []
    for config in configs:
        kept = state.stored(cluster, config.name)
        found.append(kept if kept is not None else state.refresh(cluster, config, client(config), broadcast=False))
    return found


def locate(cluster: str, name: str, connect: str | None) -> ConnectConfig:
    """The Connect cluster a connector is on: the one named, else the first whose last read lists it."""
    if connect:
        return connect_config(cluster, connect)
    configs = connect_clusters(cluster)
    for config in configs:
        kept = state.stored(cluster, config.name)
        if kept is not None and any(c.name == name for c in kept.connectors):
            return config
    return connect_config(cluster, None)


def known_state(cluster: str, connect: str, name: str) -> tuple[ConnectClusterState | None, ConnectorState | None]:
    kept = state.stored(cluster, connect)
    return kept, next((c for c in kept.connectors if c.name == name), None) if kept is not None else None


_definitions: dict[tuple[str, str], tuple[float, list[dict[str, Any]]]] = {}


def plugin_definitions(config: ConnectConfig, plugin: str) -> list[dict[str, Any]]:
    """The plugin's own config keys with their types (kept a while per Connect cluster and plugin)."""
    if not plugin:
        return []
    held = _definitions.get((config.url, plugin))
    if held is not None and time.monotonic() - held[0] < DEFINITIONS_TTL:
        return held[1]
    found = client(config).plugin_config_definitions(plugin)
    _definitions[(config.url, plugin)] = (time.monotonic(), found)
    return found


def password_keys(config: ConnectConfig, plugin: str) -> frozenset[str]:
    """The plugin's PASSWORD-type keys."""
    return frozenset(str(d.get("name")) for d in plugin_definitions(config, plugin) if str(d.get("type", "")).upper() == "PASSWORD")


def detail(cluster: str, name: str, connect: str | None = None) -> Detail:
    config = locate(cluster, name, connect)
    view = _refused_as_missing(cluster, config, name, lambda: client(config).connector(name))
    return Detail(connect=config, view=view, config=masking.masked(view.config, password_keys(config, view.plugin)))


def plugins(cluster: str, connect: str | None = None) -> tuple[ConnectConfig, list[dict[str, str]]]:
    config = connect_config(cluster, connect)
    return config, sorted(client(config).plugins(), key=lambda p: (p.get("type", ""), p.get("class", "")))


def validate(cluster: str, connect: str | None, name: str, config: Mapping[str, str]) -> Validation:
    """Connect's own validation of a config (PUT /connector-plugins/{plugin}/config/validate)."""
    target = connect_config(cluster, connect)
    plugin = check_config(config).get("connector.class", "")
    try:
        answer = client(target).validate(plugin, {**config, "name": name})
    except ConnectRefused:
        known = [p.get("class", "") for p in client(target).plugins()]
        if not any(plugin in (k, k.rsplit(".", 1)[-1]) for k in known):
            raise BadParameter(f"Connect cluster '{target.name}' has no connector plugin '{plugin[:200]}'; its plugins: "
                               f"{', '.join(known)}.") from None
        raise
    fields, errors = [], {}
    groups = answer.get("groups") or []
    for item in answer.get("configs") or []:
        definition, value = item.get("definition") or {}, item.get("value") or {}
        key = str(value.get("name") or definition.get("name"))
        messages = [str(m) for m in value.get("errors") or []]
        if messages:
            errors[key] = messages
        fields.append({"name": key, "group": definition.get("group") or "", "type": definition.get("type", ""),
                       "required": bool(definition.get("required")), "default": definition.get("default_value"),
                       "documentation": definition.get("documentation") or "", "importance": definition.get("importance", ""),
                       "value": value.get("value"), "errors": messages,
                       "order": (groups.index(definition.get("group")) if definition.get("group") in groups else len(groups),
                                 int(definition.get("order") or 0))})
    fields.sort(key=lambda f: f["order"])
    return Validation(error_count=int(answer.get("error_count") or 0), fields=fields, errors=errors)


# Checks ----------------------------------------------------------------------------------------------------

def check_name(name: str) -> str:
    if not name or not name.strip():
        raise BadParameter("The connector name is empty.")
    if len(name) > MAX_NAME_LENGTH:
        raise BadParameter(f"The connector name is {len(name)} characters long; the console allows at most {MAX_NAME_LENGTH}.")
    if any(unicodedata.category(c).startswith("C") for c in name):
        raise BadParameter("The connector name contains a control character.")
    if name != name.strip():
        raise BadParameter("The connector name starts or ends with a space.")
    return name


def check_config(config: Mapping[str, Any]) -> dict[str, str]:
    if not isinstance(config, Mapping) or not config:
        raise BadParameter("The connector config is empty: it needs at least connector.class.")
    if not all(isinstance(k, str) and k.strip() for k in config):
        raise BadParameter("Every config key must be a non-empty string.")
    if not str(config.get("connector.class") or "").strip():
        raise BadParameter("'config.connector.class' is missing: name the connector's plugin (see the plugins list).")
    return {k.strip(): str(v) for k, v in config.items()}


def _validated(cluster: str, connect: ConnectConfig, name: str, config: dict[str, str]) -> None:
    result = validate(cluster, connect.name, name, config)
    if result.error_count:
        key, messages = next(iter(result.errors.items()), ("config", ["is not valid"]))
        more = result.error_count - 1
        raise InvalidConfig(f"Connect refused the config: '{key}': {messages[0]}" + (f" (and {more} more)" if more > 0 else ""),
                            result.errors)


def _refused_as_missing(cluster: str, config: ConnectConfig, name: str, call: Any) -> Any:
    try:
        return call()
    except ConnectRefused as exc:
        if exc.connect_status == 404:
            raise NotFound(f"Connect cluster '{config.name}' of cluster '{cluster}' has no connector '{name}'.") from None
        raise


def _shown(config: Mapping[str, str], password: frozenset[str] = frozenset()) -> dict[str, str]:
    """A config as the audit log keeps it: secrets masked."""
    return {e.key: e.value for e in masking.masked(config, password)}


def _secrets_of(target: ConnectConfig, values: Mapping[str, str]) -> frozenset[str]:
    """The plugin's PASSWORD-type keys, so the audit log masks them too (by name alone when Connect is not answering)."""
    try:
        return password_keys(target, values.get("connector.class", ""))
    except ConsoleError:
        return frozenset()


def _after_change(cluster: str, config: ConnectConfig) -> None:
    """Read the Connect cluster again at once, so the lists show the change without waiting for the next poll."""
    state.refresh(cluster, config, client(config))


# Changes -------------------------------------------------------------------------------------------------

def create(user: Any, cluster: str, connect: str | None, name: str, config: Mapping[str, Any]) -> Outcome:
    name, values = check_name(name), check_config(config)
    target = connect_config(cluster, connect)
    with audited(user, "connector_create", cluster=cluster, target=name,
                 details={"connect": target.name, "config": _shown(values, _secrets_of(target, values))}):
        _validated(cluster, target, name, values)
        client(target).create(name, {**values, "name": name})
    _after_change(cluster, target)
    return Outcome(f"Created connector '{name}' on Connect cluster '{target.name}'.", {"connect": target.name})


def update(user: Any, cluster: str, connect: str | None, name: str, config: Mapping[str, Any]) -> Outcome:
    """Replace a connector's config; a secret sent back as the mask keeps its current value (masking.unmasked)."""
    name, values = check_name(name), check_config(config)
    target = locate(cluster, name, connect)
    current = _refused_as_missing(cluster, target, name, lambda: client(target).connector(name)).config
    values = masking.unmasked(values, current)
    with audited(user, "connector_update", cluster=cluster, target=name,
                 details={"connect": target.name, "config": _shown(values, _secrets_of(target, values))}):
        _validated(cluster, target, name, values)
        client(target).put_config(name, {**values, "name": name})
    _after_change(cluster, target)
    return Outcome(f"Saved the config of connector '{name}'.", {"connect": target.name})


def check_action(action: str, include_tasks: bool, only_failed: bool, task: int | None) -> None:
    if action not in ACTIONS:
        raise BadParameter(f"Unknown action '{str(action)[:40]}'; the actions are {', '.join(ACTIONS)}.")
    if task is not None:
        if action != "restart":
            raise BadParameter("'task' goes with the restart action only: Connect pauses, resumes and stops whole connectors.")
        if task < 0:
            raise BadParameter("'task' must be a task number (0 or more).")
        if include_tasks or only_failed:
            raise BadParameter("'include_tasks' and 'only_failed' restart a connector's tasks; they do not go with 'task'.")
    elif (include_tasks or only_failed) and action != "restart":
        raise BadParameter("'include_tasks' and 'only_failed' go with the restart action only.")


def act(user: Any, cluster: str, connect: str | None, name: str, action: str, include_tasks: bool = False,
        only_failed: bool = False, task: int | None = None) -> Outcome:
    check_action(action, include_tasks, only_failed, task)
    check_name(name)
    target = locate(cluster, name, connect)
    c = client(target)
    details: dict[str, Any] = {"connect": target.name}
    if action == "restart":
        details.update({"task": task} if task is not None else {"include_tasks": include_tasks, "only_failed": only_failed})
    with audited(user, f"connector_{action}" + ("_task" if task is not None else ""), cluster=cluster, target=name, details=details):
        if action == "restart" and task is not None:
            _refused_as_missing(cluster, target, name, lambda: c.restart_task(name, task))
        elif action == "restart":
            _refused_as_missing(cluster, target, name, lambda: c.restart(name, include_tasks, only_failed))
        else:
            _refused_as_missing(cluster, target, name, lambda: getattr(c, action)(name))
    _after_change(cluster, target)
    what = {"pause": "Paused", "resume": "Resumed", "stop": "Stopped", "restart": "Restarted"}[action]
    if task is not None:
        return Outcome(f"Restarted task {task} of connector '{name}'.", details)
    scope = " and its failed tasks" if only_failed and include_tasks else " and its tasks" if include_tasks else ""
    return Outcome(f"{what} connector '{name}'{scope}.", details)


def delete(user: Any, cluster: str, connect: str | None, name: str, confirm: str | None) -> Outcome:
    """Delete a connector; `confirm` must repeat its name (None: the API, whose DELETE names it already)."""
    check_name(name)
    if confirm is not None and confirm != name:
        raise BadParameter(f"Type the connector's name, '{name}', to confirm.")
    target = locate(cluster, name, connect)
    with audited(user, "connector_delete", cluster=cluster, target=name, details={"connect": target.name}):
        _refused_as_missing(cluster, target, name, lambda: client(target).delete(name))
    _after_change(cluster, target)
    return Outcome(f"Deleted connector '{name}' from Connect cluster '{target.name}'.", {"connect": target.name})
