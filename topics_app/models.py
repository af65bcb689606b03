"""Masking policies: what parts of which topics' records some users see masked (topics_app/masking.py)."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.db import models

from console.errors import BadParameter
from topics_app import masking


class MaskingPolicy(models.Model):
    name = models.CharField(max_length=100, unique=True)
    cluster = models.CharField(max_length=64, default="*", help_text="'*' for every cluster, or a cluster's name.")
    topic_kind = models.CharField(max_length=8, default="literal", choices=[(k, k) for k in masking.TOPIC_KINDS])
    topic_pattern = models.CharField(max_length=masking.MAX_PATTERN_CHARS,
                                     help_text="A topic name, a prefix, or a regular expression matching the whole name.")
    applies_to = models.JSONField(default=list, blank=True,
                                  help_text='Roles or groups masked, e.g. ["viewer", "support"]; empty: everyone.')
    exempt = models.JSONField(default=list, blank=True, help_text='Roles or groups that see clear values, e.g. ["admin"].')
    targets = models.JSONField(help_text='e.g. [{"kind": "json_path", "path": "$.customer.email"}, {"kind": "header", '
                                         '"name": "authorization"}, {"kind": "key"}, {"kind": "value"}]')
    enabled = models.BooleanField(default=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        verbose_name_plural = "masking policies"

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        """The same checks as the API's, as form errors in Django admin."""
        checks: list[tuple[str, Any]] = [
            ("cluster", lambda: masking.check_cluster(self.cluster)),
            ("topic_pattern", lambda: masking.check_topic_pattern(self.topic_kind, self.topic_pattern)),
            ("applies_to", lambda: masking.check_names(self.applies_to, "applies_to")),
            ("exempt", lambda: masking.check_names(self.exempt, "exempt")),
            ("targets", lambda: masking.check_targets(self.targets)),
        ]
        errors = {}
        for name, check in checks:
            try:
                check()
            except BadParameter as exc:
                errors[name] = exc.message
        if errors:
            raise ValidationError(errors)

    def compiled(self) -> masking.CompiledPolicy:
        return masking.CompiledPolicy.compile(self.name, self.cluster, self.topic_kind, self.topic_pattern, self.applies_to,
                                              self.exempt, self.targets)


class MaskingGeneration(models.Model):
    """One row whose number changes with every change of a policy: each process compares it with the
    number its compiled policies were built at, one indexed read per request, and recompiles on a change."""

    value = models.BigIntegerField(default=0)


class TopicSchema(models.Model):
    """A schema an operator uploaded for one part (key or value) of one topic's records (topics_app/schemas.py).

    Records framed in Confluent's wire format are decoded with the schema their id is mapped to here;
    unframed records with the part's newest schema."""

    cluster = models.CharField(max_length=64)
    topic = models.CharField(max_length=249)
    part = models.CharField(max_length=5, choices=[("key", "key"), ("value", "value")])
    format = models.CharField(max_length=12, choices=[("avro", "Avro"), ("protobuf", "Protobuf"), ("json_schema", "JSON Schema")])
    name = models.CharField(max_length=200, help_text="The uploaded file's name.")
    text = models.TextField(help_text="The schema as uploaded.")
    message_type = models.CharField(max_length=500, blank=True, help_text="Protobuf: the full name of the message type.")
    compiled = models.BinaryField(blank=True, default=b"", help_text="Protobuf: the file compiled to a FileDescriptorSet.")
    schema_ids = models.JSONField(default=list, blank=True, help_text="Confluent schema ids mapped to this schema.")
    uploaded_by = models.CharField(max_length=150, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["cluster", "topic", "part", "-updated_at", "-id"]
        indexes = [models.Index(fields=["cluster", "topic"])]

    def __str__(self) -> str:
        return f"{self.cluster}/{self.topic} {self.part}: {self.name}"
