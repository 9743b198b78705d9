"""Subcommands of the ``pdesharp`` CLI (see ``pdesharp.cli``)."""
