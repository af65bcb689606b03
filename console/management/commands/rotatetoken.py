"""`manage.py rotatetoken NAME`: replace a user's API token (the old one stops working) and print the new one."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction
from rest_framework.authtoken.models import Token

from console.audit import record


class Command(BaseCommand):
    help = "Replace a user's API token with a new one and print it (Authorization: Token <key>)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")

    def handle(self, *args: Any, **opts: Any) -> None:
        name = opts["username"]
        try:
            user = get_user_model().objects.get_by_natural_key(name)
        except get_user_model().DoesNotExist:
            raise CommandError(f"There is no user '{name}' (manage.py ensureuser {name} --role viewer makes one).") from None
        with transaction.atomic():
            replaced = Token.objects.filter(user=user).delete()[0] > 0
            token = Token.objects.create(user=user)
            record(None, "rotate_token", username=user.get_username(), target=user.get_username(),
                   details={"replaced": replaced})
        self.stdout.write(token.key)
