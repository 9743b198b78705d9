"""The one check for a name read from input pdesharp did not write (a case folder's name, a
benchmark record's id) before it becomes part of a path under the suite's output folder.

Everything in :mod:`pdesharp.suite` goes through :func:`check_name`; a project-wide name check
can replace its body without touching the callers.
"""

from __future__ import annotations

from pdesharp.untrusted import one_line, path_component


class BadName(ValueError):
    """A name cannot be used as one path component; the message says why."""


def check_name(text: object, *, what: str) -> str:
    """``text`` itself if it is a safe single path component, else :class:`BadName`.

    Refused: anything but a string, empty or over 80 characters, characters outside
    ``[A-Za-z0-9._-]`` (so no ``/``, ``\\``, NUL, spaces, control or look-alike characters),
    a leading dot or dash, and ``..`` anywhere (``a..b`` is harmless as a component but is
    refused so that no name ever looks like a parent reference).
    """
    if not isinstance(text, str):
        raise BadName(f"{what} must be text, got {type(text).__name__}")
    try:
        if len(text) > 80:
            raise ValueError(text)
        return path_component(text, what)
    except ValueError:
        raise BadName(f"{what} {one_line(text, 100)!r} is not a usable name: use 1-80 "
                      "letters, digits, '.', '_' or '-', starting with a letter or digit, "
                      "without '..'") from None
