#!/usr/bin/env python
"""Django's command-line utility for the Kafka console."""

import os
import sys


def main() -> None:
    from console.private import restrict_umask

    restrict_umask()  # before anything is written: the console's files are its user's only
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "console.settings")
    if sys.argv[1:2] == ["watch"]:
        os.environ["CONSOLE_PROCESS"] = "watcher"  # (it serves no page: no web server loaded, see settings)
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
