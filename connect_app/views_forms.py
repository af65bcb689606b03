"""The connector forms: create and edit with Connect's own validation shown beside each field, and
delete with the connector's name typed to confirm.

The fields are Connect's: its validation of the config so far (PUT .../config/validate) lists every
key the plugin and the worker take, with its group, default and documentation. The plugin's own keys
come first; the worker's common ones (transforms, error handling, topic creation...) are folded
unless one is set or refused. Keys Connect does not list go in a free `key=value` box.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse

from connect_app import masking, services
from connect_app.views import page_base
from console import error_responses
from console.auth import allow
from console.errors import BadParameter, ConsoleError

FIELD = "cfg:"  # the prefix of a field's input name
# Connect's own groups of the settings every connector takes (ConnectorConfig, SourceConnectorConfig,
# SinkConnectorConfig); the plugin's settings are in no group or groups of its own. Of the common
# ones, those nearly every connector sets stay in view.
COMMON_GROUPS = ("Common", "Transforms", "Predicates", "Error Handling", "Topic Creation", "Exactly Once Support",
                 "offsets.topic")
SHOWN_COMMON = {"tasks.max", "topics", "topics.regex"}


def parse_extra(text: str) -> dict[str, str]:
    """`key=value` lines (blank lines and # comments skipped) into a config."""
    found: dict[str, str] = {}
    for n, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.partition("=")
        if not sep or not key.strip():
            raise BadParameter(f"Line {n} of the other settings is not key=value: '{line[:60]}'.")
        found[key.strip()] = value.strip()
    return found


def posted_config(post: Mapping[str, str], plugin: str) -> dict[str, str]:
    """The config a form sent: its fields that hold a value other than Connect's default, then the free box."""
    config = {"connector.class": plugin}
    for key, value in post.items():
        if key.startswith(FIELD) and key != FIELD + "name":
            name, default = key[len(FIELD):], post.get("default:" + key[len(FIELD):])
            if value != "" and (default is None or value != default or name == "connector.class"):
                config[name] = value
    config.update(parse_extra(post.get("extra", "")))
    config["connector.class"] = plugin
    return config


def _fields(cluster: str, connect: str, name: str, config: dict[str, str],
            password: frozenset[str]) -> tuple[list[dict[str, Any]], list[dict[str, Any]], str, int]:
    """Connect's fields for this config (the plugin's, the common ones), the keys it does not list, and its error count."""
    result = services.validate(cluster, connect, name or "unnamed", config)
    listed = {f["name"] for f in result.fields}
    plugin_fields: list[dict[str, Any]] = []
    common: list[dict[str, Any]] = []
    for f in result.fields:
        if f["name"] in ("name", "connector.class"):
            continue
        value = config.get(f["name"], "")
        secret = masking.is_secret(f["name"], password) or f["type"] == "PASSWORD"
        shown = {**f, "input": value, "secret": secret, "reference": masking.is_reference(value),
                 "default_text": "" if f["default"] is None else str(f["default"])}
        folded = str(f["group"]).startswith(COMMON_GROUPS) and f["name"] not in SHOWN_COMMON
        (common if folded else plugin_fields).append(shown)
    extra = "\n".join(f"{k}={v}" for k, v in config.items() if k not in listed)
    return plugin_fields, common, extra, result.error_count


def _form(request: HttpRequest, cluster: str, connect: str, name: str, plugin: str, config: dict[str, str], *,
          editing: bool, error: str | None = None, show_errors: bool = False, status: int = 200) -> HttpResponse:
    context = page_base(request, cluster, "connector_form")
    target = services.connect_config(cluster, connect)
    password = services.password_keys(target, plugin)
    shown = {k: (masking.MASK if masking.is_secret(k, password) and v and not masking.is_reference(v) else v)
             for k, v in config.items()}
    plugin_fields, common, extra, errors = _fields(cluster, target.name, name, config, password)
    for f in plugin_fields + common:
        f["input"] = shown.get(f["name"], "")
        if not show_errors:
            f["errors"] = []
    context.update({"connect": target.name, "name": name, "plugin": plugin, "editing": editing, "plugin_fields": plugin_fields,
                    "common_fields": common, "common_open": any(f["errors"] or f["input"] for f in common),
                    "extra": "\n".join(f"{k}={shown.get(k, v)}" for k, v in (parse_extra(extra)).items()),
                    "error": error, "error_count": errors if show_errors else 0})
    return render(request, "connect_app/connector_form.html", context, status=status)


@allow(GET="connect.manage", POST="connect.manage")
def connector_new(request: HttpRequest, cluster: str) -> HttpResponse:
    source = request.POST if request.method == "POST" else request.GET
    connect_names = [c.name for c in services.connect_clusters(cluster)]
    connect = services.connect_config(cluster, source.get("connect") or None).name
    plugin, name = source.get("plugin", "").strip(), source.get("name", "").strip()
    if not plugin:  # first step: which Connect cluster, plugin and name
        context = page_base(request, cluster, "connector_form")
        try:
            context["plugins"] = services.plugins(cluster, connect)[1]
        except ConsoleError as exc:
            context["error"] = error_responses.message(exc)
        context.update({"connect": connect, "connect_names": connect_names, "name": name, "choose": True})
        return render(request, "connect_app/connector_form.html", context)
    config: dict[str, str] = {"connector.class": plugin}
    if request.method != "POST":
        return _guarded_form(request, cluster, connect, name, plugin, config, editing=False)
    try:
        config = posted_config(request.POST, plugin)
        outcome = services.create(request.user, cluster, connect, name, config)
    except services.InvalidConfig as exc:
        return _guarded_form(request, cluster, connect, name, plugin, config, editing=False, error=exc.message,
                             show_errors=True, status=400)
    except ConsoleError as exc:
        error, status = error_responses.form_error(exc)
        return _guarded_form(request, cluster, connect, name, plugin, config, editing=False, error=error, status=status)
    messages.success(request, outcome.message)
    return redirect(reverse("connector", args=[cluster, connect, name]))


@allow(GET="connect.manage", POST="connect.manage")
def connector_edit(request: HttpRequest, cluster: str, connect: str, connector: str) -> HttpResponse:
    detail = services.detail(cluster, connector, connect)
    current = {k: v for k, v in detail.view.config.items() if k != "name"}
    plugin = detail.view.plugin
    if request.method != "POST":
        return _guarded_form(request, cluster, connect, connector, plugin, current, editing=True)
    config = current
    try:
        config = posted_config(request.POST, plugin)
        outcome = services.update(request.user, cluster, connect, connector, config)
    except services.InvalidConfig as exc:
        return _guarded_form(request, cluster, connect, connector, plugin, masking.unmasked(config, current), editing=True,
                             error=exc.message, show_errors=True, status=400)
    except ConsoleError as exc:
        error, status = error_responses.form_error(exc)
        return _guarded_form(request, cluster, connect, connector, plugin, masking.unmasked(config, current), editing=True,
                             error=error, status=status)
    messages.success(request, outcome.message)
    return redirect(reverse("connector", args=[cluster, connect, connector]))


def _guarded_form(request: HttpRequest, cluster: str, connect: str, name: str, plugin: str, config: dict[str, str],
                  **kwargs: Any) -> HttpResponse:
    """The form; when Connect cannot even validate (unreachable, unknown plugin), its sentence on a page of its own."""
    try:
        return _form(request, cluster, connect, name, plugin, config, **kwargs)
    except ConsoleError as exc:
        message, status = error_responses.form_error(exc)
        context = {**page_base(request, cluster, "connector_form"), "connect": connect, "name": name, "plugin": plugin,
                   "fatal": message, "editing": kwargs.get("editing", False)}
        return render(request, "connect_app/connector_form.html", context, status=status)


@allow(GET="connect.manage", POST="connect.manage")
def connector_delete(request: HttpRequest, cluster: str, connect: str, connector: str) -> HttpResponse:
    services.connect_config(cluster, connect)
    context = {**page_base(request, cluster, "connector_delete"), "connect": connect, "name": connector}
    if request.method == "POST":
        try:
            outcome = services.delete(request.user, cluster, connect, connector, request.POST.get("confirm", ""))
            messages.success(request, outcome.message)
            return redirect(reverse("connectors", args=[cluster]))
        except ConsoleError as exc:
            context["error"], status = error_responses.form_error(exc)
            return render(request, "connect_app/delete.html", context, status=status)
    return render(request, "connect_app/delete.html", context)
