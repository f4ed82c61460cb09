"""Every prompt kbgraph sends to a chat model, one ``.txt`` file per prompt, and a tiny
loader.

Placeholders are ``{name}`` (a Python identifier in braces); anything else in braces, such
as a JSON example ``{"retrieve": true}``, is left alone, so prompts never need escaped
braces. Values are inserted once and never re-scanned, so retrieved text that happens to
contain ``{name}`` is not expanded.
"""

from __future__ import annotations

from kbgraph._layers import imported_as_kbgraph

# Loaded as the top-level 'retrieval' & co. (a second copy): refuse, loudly, and before
# any submodule loads, so that a refused import leaves no 'retrieval.*' module behind.
imported_as_kbgraph(__name__)

import re
from functools import cache
from importlib import resources

from kbgraph.errors import ConfigError

_NAME = re.compile(r"[a-z0-9][a-z0-9_.-]*")
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


@cache
def load_prompt(name: str) -> str:
    """The text of ``prompts/<name>.txt`` (UTF-8, newlines as in the file)."""
    if not _NAME.fullmatch(name):
        raise ConfigError(
            f"prompt name {name!r} is not valid; use the file name without '.txt' "
            "(lowercase letters, digits, '_', '-', '.')."
        )
    path = resources.files(__name__).joinpath(f"{name}.txt")
    if not path.is_file():
        raise ConfigError(f"no prompt named {name!r}: add prompts/{name}.txt to the package.")
    return path.read_text(encoding="utf-8")


def placeholders(name: str) -> frozenset[str]:
    """The ``{name}`` placeholders of a prompt."""
    return frozenset(_PLACEHOLDER.findall(load_prompt(name)))


def render_prompt(name: str, **values: object) -> str:
    """The prompt with every ``{placeholder}`` replaced by ``str(values[placeholder])``;
    a placeholder without a value is an error (extra values are ignored)."""
    text = load_prompt(name)
    missing = sorted(placeholders(name) - values.keys())
    if missing:
        raise ConfigError(
            f"prompt {name!r} needs values for {', '.join(missing)}; pass them to "
            "render_prompt as keyword arguments."
        )
    return _PLACEHOLDER.sub(lambda m: str(values[m.group(1)]), text)


__all__ = ["load_prompt", "placeholders", "render_prompt"]
