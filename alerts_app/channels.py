"""The channels: one renderer and one sender per kind. The check of a channel's fields is
channel_fields.validate_channel, named here too for the API and pages."""

from __future__ import annotations

from alerts_app.channel_fields import validate_channel, validate_url

__all__ = ["validate_channel", "validate_url"]
