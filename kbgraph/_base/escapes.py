"""Text on one line, or with only its line breaks: a file name, an error, a document's text
shown with its control characters as escapes (``\\n``, ``\\x1b``), for a terminal
(:mod:`kbgraph._exit_codes`) and for the source headers a model reads
(:mod:`kbgraph.retrieval._context`)."""

from __future__ import annotations

# Line breaks and other control characters, as escapes: a failure is one line on stderr
# and a listed file one line on stdout, whatever a file name or a server's message holds;
# and a document's text cannot act on the terminal it is printed on (ESC starts a window
# title or a hidden hyperlink (OSC 0, OSC 8) or clears the screen (ESC [2J); C1's 0x9b is
# that CSI in one character). The same escapes keep a source header one line whatever its
# file's name holds (a name with line breaks forged a second header after the first).
_ESCAPES = {
    **{code: f"\\x{code:02x}" for code in [*range(0x20), 0x7F, *range(0x80, 0xA0)] if code != 0x09},
    0x0A: "\\n",
    0x0D: "\\r",
    0x2028: "\\u2028",
    0x2029: "\\u2029",
}
_TEXT_ESCAPES = {code: escape for code, escape in _ESCAPES.items() if code != 0x0A}


def printable(text: str, *, lines: bool = False) -> str:
    """``text`` on one line: a newline in a file name is shown as ``\\n``, not printed.
    ``lines``: text of many lines (a document's, an answer): its line breaks are kept,
    every other control character is shown as an escape. ``--json`` prints text as it is."""
    if lines:
        return text.replace("\r\n", "\n").translate(_TEXT_ESCAPES)
    return text.translate(_ESCAPES)


__all__ = ["printable"]
