"""`manage.py ensureuser NAME --role viewer|operator|admin|none [--password P]`: create or update a user.
`none`: no role group, so the user holds only what role bindings give them (the access page)."""

from __future__ import annotations

import secrets
from typing import Any

from django.contrib.auth.models import Group, User
from django.core.management.base import BaseCommand, CommandParser

from console.auth import ROLES


class Command(BaseCommand):
    help = "Create or update a user with a role; prints the login."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("--role", choices=(*ROLES, "none"), default="viewer")
        parser.add_argument("--password", help="default: keep the existing one, or generate one for a new user")
        parser.add_argument("--password-file", help="read the password from this file, writing a new one if absent")

    def handle(self, *args: Any, **opts: Any) -> None:
        user, created = User.objects.get_or_create(username=opts["username"])
        password = opts["password"]
        if opts["password_file"]:
            from pathlib import Path

            path = Path(opts["password_file"])
            if not path.exists():
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(secrets.token_urlsafe(12))
                path.chmod(0o600)
            password = path.read_text().strip()
        if password is None and created:
            password = secrets.token_urlsafe(12)
        if password is not None:
            user.set_password(password)
        role = opts["role"]
        user.is_staff = user.is_superuser = role == "admin"
        user.save()
        user.groups.set([Group.objects.get(name=role)] if role != "none" else [])
        shown = password if password is not None else "(unchanged)"
        self.stdout.write(f"user {user.username} ({role}) password: {shown}")
