#!/usr/bin/env python
"""Django's command-line utility for the Kafka console."""

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "console.settings")
    if sys.argv[1:2] == ["watch"]:
        os.environ["CONSOLE_PROCESS"] = "watcher"  # (it serves no page: no web server loaded, see settings)
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
