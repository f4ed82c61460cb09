"""The base of every settings model: frozen, unknown keys refused, and an invalid value
raised as one :class:`~kbgraph.errors.ConfigError` line instead of pydantic's multi-line
``ValidationError`` (the engine's configs, search filters, the subgraph's ``RagSettings``).
"""

from __future__ import annotations

import difflib
import functools
import types
from collections.abc import Iterable, Mapping, Sequence
from typing import Annotated, Any, Literal, Self, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, ValidationError, ValidationInfo, field_validator
from pydantic_core import ErrorDetails

from kbgraph.errors import ConfigError, InvalidSettingError

_BOUNDS = {"ge": "at least {}", "gt": "more than {}", "le": "at most {}", "lt": "less than {}"}


class Settings(BaseModel):
    """Frozen, ``extra="forbid"``; building one from bad values raises ``ConfigError``
    (``InvalidSettingError`` for a bad value, with the field's dotted path). A bool is
    refused where a number is expected (pydantic's lax mode takes ``True`` as 1), also
    inside a dict or list of numbers."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    @field_validator("*", mode="before")
    @classmethod
    def _no_bool_for_a_number(cls, value: Any, info: ValidationInfo) -> Any:
        if info.field_name and _holds_bool(value) and _numbers_only(cls, info.field_name):
            raise ValueError("a number, not True or False")
        return value

    def __init__(self, /, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as exc:
            raise invalid_setting(exc, type(self)) from None

    @classmethod
    def model_validate(cls, obj: Any, **kwargs: Any) -> Self:
        try:
            return super().model_validate(obj, **kwargs)
        except ValidationError as exc:
            raise invalid_setting(exc, cls) from None

    @classmethod
    def model_validate_json(cls, json_data: str | bytes | bytearray, **kwargs: Any) -> Self:
        try:
            return super().model_validate_json(json_data, **kwargs)
        except ValidationError as exc:
            raise invalid_setting(exc, cls) from None


def _holds_bool(value: object) -> bool:
    if isinstance(value, bool):
        return True
    if isinstance(value, Mapping):
        return any(_holds_bool(v) for v in value.values())
    if isinstance(value, list | tuple | set | frozenset):
        return any(_holds_bool(v) for v in value)
    return False


_CONTAINERS = (dict, list, tuple, set, frozenset, Union, types.UnionType)
# What a numeric setting may be made of besides numbers: None, a dict's str keys, `...`.
_NUMERIC_COMPANIONS = {int, float, str, type(None), type(Ellipsis)}


@functools.cache
def _numbers_only(model: type[BaseModel], name: str) -> bool:
    """Whether the field holds numbers and no bool anywhere (``int``, ``float | None``,
    ``dict[str, float]``); a nested model, ``Any`` or a TypedDict validates its own."""
    field = model.model_fields.get(name)
    if field is None:
        return False
    leaves = _leaves(field.annotation)
    return bool(leaves & {int, float}) and leaves <= _NUMERIC_COMPANIONS


def _leaves(annotation: object) -> set[object]:
    """The plain types an annotation is made of (a Literal's by its values' types). A
    container (``dict[str, float]``, ``tuple[int, ...]``) or union counts by its items; any
    other generic by itself too."""
    origin = get_origin(annotation)
    if origin is Literal:
        return {type(arg) for arg in get_args(annotation)}
    if origin is Annotated:
        return _leaves(get_args(annotation)[0])
    args = get_args(annotation)
    if not args:
        return {type(Ellipsis) if annotation is Ellipsis else annotation}
    leaves = set().union(*(_leaves(arg) for arg in args))
    if origin in _CONTAINERS:
        return leaves
    return leaves | {origin}


def invalid_setting(exc: ValidationError, model: type[BaseModel]) -> ConfigError:
    """One line for the first error: which setting, what it got, what is allowed, and what
    to pass instead."""
    error = exc.errors()[0]
    loc = [str(part) for part in error["loc"] if not isinstance(part, int)]
    inner = (error.get("ctx") or {}).get("error")
    if isinstance(inner, ConfigError):
        # A nested settings model already refused it (pydantic calls its __init__).
        return _nested(inner, model, loc)
    setting = ".".join(loc) or model.__name__
    if error["type"] == "extra_forbidden":
        return ConfigError(_unknown_key(model, loc))
    rule = _rule(error)
    default = _default(model, loc)
    value = error.get("input")
    example = f"; pass an allowed value, e.g. {setting}={default!r} (the default)"
    return InvalidSettingError(
        f"{model.__name__} {setting}={value!r} is not allowed ({rule})"
        + (example if default is not None else "; pass an allowed value"),
        setting=setting,
        value=value,
        rule=rule,
        default=default,
    )


def _nested(inner: ConfigError, model: type[BaseModel], loc: list[str]) -> ConfigError:
    where = ".".join(loc)
    if not isinstance(inner, InvalidSettingError):
        # Of its own class (a GlobLimitError stays one), when a message is all it takes.
        kind = type(inner) if type(inner).__init__ is ConfigError.__init__ else ConfigError
        return kind(f"{model.__name__} {where}: {inner}" if where else str(inner))
    setting = f"{where}.{inner.setting}" if where else inner.setting
    example = f"; pass an allowed value, e.g. {setting}={inner.default!r} (the default)"
    return InvalidSettingError(
        f"{model.__name__} {setting}={inner.value!r} is not allowed ({inner.rule})"
        + (example if inner.default is not None else "; pass an allowed value"),
        setting=setting,
        value=inner.value,
        rule=inner.rule,
        default=inner.default,
    )


def _rule(error: ErrorDetails) -> str:
    ctx = error.get("ctx") or {}
    allowed = [text.format(ctx[key]) for key, text in _BOUNDS.items() if key in ctx]
    if "expected" in ctx:
        allowed.append(str(ctx["expected"]))
    if not allowed:
        # A validator's own ValueError carries the whole sentence after pydantic's prefix.
        allowed.append(str(error["msg"]).removeprefix("Value error, "))
    return " and ".join(allowed)


def _default(model: type[BaseModel], loc: list[str]) -> object:
    """The default of the field at ``loc`` (nested settings models followed), if plain."""
    fields = model.model_fields
    for i, name in enumerate(loc):
        field = fields.get(name)
        if field is None:
            return None
        if i == len(loc) - 1:
            default = field.default
            return default if isinstance(default, int | float | str | bool) else None
        inner = _model_in(field.annotation)
        if inner is None:
            return None
        fields = inner.model_fields
    return None


def _model_in(annotation: object) -> type[BaseModel] | None:
    """The settings model an annotation holds (``SearchConfig`` or ``ChunkConfig | None``)."""
    for candidate in (annotation, *get_args(annotation)):
        if isinstance(candidate, type) and issubclass(candidate, BaseModel):
            return candidate
    return None


def _unknown_key(model: type[BaseModel], loc: list[str]) -> str:
    owner: type[BaseModel] = model
    for name in loc[:-1]:
        field = owner.model_fields.get(name)
        inner = _model_in(field.annotation) if field is not None else None
        if inner is not None:
            owner = inner
    inner_fields = {
        name: list(inner.model_fields)
        for name, field in owner.model_fields.items()
        if (inner := _model_in(field.annotation)) is not None
    }
    key = loc[-1] if loc else "?"
    return unknown_setting(model.__name__, key, owner.model_fields, inner_fields, loc[:-1])


def unknown_setting(
    owner: str,
    key: str,
    allowed: Iterable[str],
    inner: Mapping[str, Iterable[str]] | None = None,
    where: Sequence[str] = (),
) -> str:
    """The one-line refusal of setting ``key``: the settings it may be, and the likely one
    (:func:`likely_setting`)."""
    names = sorted(allowed)
    likely = likely_setting(key, names, inner)
    hint = f"; did you mean {likely!r}?" if likely else ""
    path = ".".join([*where, ""])
    return f"{owner} has no setting {path}{key!r}; allowed: {', '.join(names)}{hint}"


def likely_setting(
    key: str,
    allowed: Iterable[str],
    inner: Mapping[str, Iterable[str]] | None = None,
    cutoff: float = 0.6,
) -> str | None:
    """The setting ``key`` was likely meant to be: one of the same name one level down
    (``field.key`` for a ``key`` in ``inner[field]``), else the closest spelling in
    ``allowed`` (difflib ratio at least ``cutoff``); None when none is close."""
    nested = [f"{name}.{key}" for name, fields in (inner or {}).items() if key in fields]
    close = nested or difflib.get_close_matches(key, list(allowed), n=1, cutoff=cutoff)
    return close[0] if close else None


__all__ = ["Settings", "invalid_setting", "likely_setting", "unknown_setting"]
