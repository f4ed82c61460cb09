"""The ``gguf:`` chat model spec: a GGUF file and its runtime options.

    gguf:models/SmolLM2-135M-Instruct.Q4_1.gguf
    gguf:~/models/llama-3.2-1b.Q8_0.gguf?threads=2&n_ctx=8192&max_tokens=256

The options ride on the spec as a query string so that every place a spec goes (``--chat-model``,
``RagSettings.chat_model``, ``--judge``, ``KBGRAPH_CHAT_MODEL``) can carry them unchanged. The
file is checked here (it exists, it is a GGUF file) so a bad spec fails before any work.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from pathlib import Path
from urllib.parse import parse_qsl

from kbgraph.errors import ConfigError

GGUF_MAGIC = b"GGUF"
# One thread: on a 2-core machine shared with other work, one generated 10-50x faster than two
# (llama.cpp's threads spin while they wait for each other).
DEFAULT_THREADS = 1
DEFAULT_N_CTX = 4096
DEFAULT_MAX_TOKENS = 512


@dataclass(frozen=True, slots=True)
class GGUFOptions:
    """A GGUF model and how to run it (a process loads one runtime per file, thread count
    and window).

    ``threads``: CPU threads for prompt processing and generation. ``n_ctx``: the context
    window in tokens, shared by the prompt and the reply. ``max_tokens``: the longest reply
    (the prompt may use ``n_ctx - max_tokens``)."""

    path: str
    threads: int = DEFAULT_THREADS
    n_ctx: int = DEFAULT_N_CTX
    max_tokens: int = DEFAULT_MAX_TOKENS

    def __post_init__(self) -> None:
        for name in ("threads", "n_ctx", "max_tokens"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"gguf option {name}={value!r}: it must be a whole number >= 1.")
        if self.max_tokens >= self.n_ctx:
            raise ConfigError(
                f"gguf option max_tokens={self.max_tokens} leaves no room for the prompt in "
                f"n_ctx={self.n_ctx}; give max_tokens below n_ctx (for example "
                f"max_tokens={min(DEFAULT_MAX_TOKENS, self.n_ctx // 4)})."
            )

    @property
    def max_input_tokens(self) -> int:
        return self.n_ctx - self.max_tokens


OPTION_NAMES = tuple(f.name for f in fields(GGUFOptions) if f.name != "path")


def parse_gguf_spec(rest: str) -> GGUFOptions:
    """``<path>[?threads=N&n_ctx=N&max_tokens=N]`` (what follows ``gguf:``) → options; the
    path is made absolute (``~`` expanded) and checked."""
    path, _, query = rest.strip().partition("?")
    if not path.strip():
        raise ConfigError(
            "gguf spec names no file; use gguf:<path to a .gguf file>[?threads=1&n_ctx=4096]."
        )
    try:
        pairs = parse_qsl(query, keep_blank_values=True, strict_parsing=bool(query))
    except ValueError:
        raise ConfigError(
            f"gguf options {query!r} are not key=value pairs joined by '&' "
            "(gguf:<path>?threads=1&n_ctx=4096&max_tokens=512)."
        ) from None
    values: dict[str, int] = {}
    for key, value in pairs:
        if key not in OPTION_NAMES:
            raise ConfigError(
                f"unknown gguf option {key!r}; allowed: {', '.join(OPTION_NAMES)} "
                "(gguf:<path>?threads=1&n_ctx=4096&max_tokens=512)."
            )
        try:
            values[key] = int(value)
        except ValueError:
            raise ConfigError(f"gguf option {key}={value!r}: it must be a whole number.") from None
    return GGUFOptions(path=str(check_gguf_file(path)), **values)


def check_gguf_file(path: str | Path) -> Path:
    """The absolute path of a readable GGUF file; anything else is a :class:`ConfigError`
    (llama.cpp would only say that it failed to load)."""
    resolved = Path(path).expanduser().resolve()
    try:
        with resolved.open("rb") as handle:
            magic = handle.read(len(GGUF_MAGIC))
    except FileNotFoundError:
        raise ConfigError(
            f"GGUF file {resolved} does not exist; give the path of a .gguf file."
        ) from None
    except OSError as exc:
        raise ConfigError(f"GGUF file {resolved} cannot be read: {exc}.") from exc
    if magic != GGUF_MAGIC:
        raise ConfigError(
            f"{resolved} is not a GGUF file (it does not start with 'GGUF'); convert the model "
            "to GGUF or pick another file."
        )
    return resolved


__all__ = [
    "DEFAULT_MAX_TOKENS",
    "DEFAULT_N_CTX",
    "DEFAULT_THREADS",
    "OPTION_NAMES",
    "GGUFOptions",
    "check_gguf_file",
    "parse_gguf_spec",
]
