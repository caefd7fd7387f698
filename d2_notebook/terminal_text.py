"""Text that cannot drive a terminal: the one filter for everything d2 prints.

Board text and data values may carry terminal control sequences: a value that clears
the screen, retitles the window, hides a hyperlink (OSC 8) or writes the clipboard
(OSC 52). :func:`terminal_safe` takes them out before anything is printed, whether the
output goes to a terminal or a pipe (a pipe is often read later by ``less -R`` or
pasted into a terminal). A leaf module: it imports nothing of d2_notebook, so every
layer may use it.
"""

from __future__ import annotations

import re

_ESCAPE_SEQUENCE = re.compile(
    r"""
    (?:\x1b\[|\x9b)[\x30-\x3f]*[\x20-\x2f]*[\x40-\x7e]?       # CSI: cursor, colour, clear
  | (?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])                  # OSC, DCS, SOS, PM, APC ...
    [^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)                       # ... up to BEL or ST
  | \x1b[\x20-\x2f]*[\x30-\x7e]?                               # any other ESC sequence
    """,
    re.VERBOSE,
)
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def terminal_safe(text: str, *, keep_newlines: bool = True) -> str:
    """``text`` without terminal control: escape sequences (CSI, OSC — hyperlinks,
    clipboard, window title —, DCS, SOS, PM, APC, and their 8-bit forms) removed whole
    (an unterminated string loses only its introducer: the rest stays visible), and
    every other C0 or C1 control character and bidirectional override shown as
    ``U+FFFD``. Tabs stay; newlines (``\\n`` or ``\\r\\n``) stay as ``\\n`` unless
    ``keep_newlines`` is False (then they become spaces, for one-line output).
    """
    cleaned = _ESCAPE_SEQUENCE.sub("", text).replace("\r\n", "\n")
    if not keep_newlines:
        cleaned = cleaned.replace("\n", " ")
    return _CONTROL.sub("\ufffd", cleaned)


def json_terminal_safe(document: str) -> str:
    """A JSON document with the control characters JSON leaves raw (DEL, C1, bidi
    overrides; C0 are always escaped) written as ``\\uXXXX``: the same JSON value,
    safe to print. Those characters can only occur inside JSON strings, where the
    escape means the same."""
    return _CONTROL.sub(lambda m: f"\\u{ord(m[0]):04x}", document)
