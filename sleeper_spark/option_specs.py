"""What an option is, and the registry that knows every one of them.

An option is declared once, as a field of a pydantic model: :class:`~sleeper_spark.config.CatalogConfig`
and its retry policies for the catalog, the models of :mod:`sleeper_spark.source_options` for a
read, a write or a stream. :func:`specs_of` turns those fields into :class:`OptionSpec` s, so the
name, type, default and meaning that users see cannot drift from what the code parses.

Spark lowercases option keys on the way in (``versionAsOf`` arrives as ``versionasof``), so every
lookup here ignores case; a spec keeps the spelling users write.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Iterator, Mapping
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError
from pydantic_core import PydanticUndefined

from sleeper_spark.errors import ConfigError

Scope = Literal["catalog", "read", "write", "stream source", "stream sink"]
SCOPES: tuple[Scope, ...] = ("catalog", "read", "write", "stream source", "stream sink")
# A name ending in this takes any key after its prefix: ``metadata.<key>``.
ANY_KEY = "<key>"
DOCS = "docs/usage.md#options"


class OptionSpec(BaseModel):
    """One option: how users spell it, what it holds, its default, its meaning and where it applies."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    name: str
    field_path: tuple[str, ...]  # where the parsed value lives in its model: ("retry", "max_attempts")
    annotation: Any  # the field's type with its constraints, e.g. Annotated[int, Ge(1)]
    required: bool = False
    default: Any = None
    generated: bool = False  # the default is made afresh each time (a write id)
    description: str
    scopes: frozenset[Scope]
    # Set by sleeper_spark itself (the helper API) or by Spark, not by users; left out of hints.
    internal: bool = False

    @property
    def key(self) -> str:
        """The name as Spark delivers it."""
        return self.name.lower()

    @property
    def prefix(self) -> str | None:
        """``metadata.`` for ``metadata.<key>``; None for a plain option."""
        return self.key.removesuffix(ANY_KEY.lower()) if self.key.endswith(ANY_KEY.lower()) else None

    def matches(self, key: str) -> bool:
        key = key.lower()
        prefix = self.prefix
        return key.startswith(prefix) and len(key) > len(prefix) if prefix else key == self.key

    @property
    def default_text(self) -> str:
        """The default as the docs give it: a value, ``required``, ``none`` or ``generated``."""
        if self.required:
            return "required"
        if self.generated:
            return "generated"
        if isinstance(self.default, bool):
            return str(self.default).lower()
        return "none" if self.default in (None, {}) else str(self.default)

    def parse(self, text: str) -> Any:
        """``text`` as this option's type, by the same rules as its model; ConfigError if it is not one."""
        try:
            return TypeAdapter(self.annotation).validate_python(text)
        except ValidationError as error:
            raise ConfigError(f"option {self.name!r}: {error.errors()[0]['msg']}") from None


def specs_of(model: type[BaseModel], scopes: Iterable[Scope], *, prefix: str = "",
             exclude: Iterable[str] = ()) -> list[OptionSpec]:
    """One spec per field of ``model``, named by its alias (else its name) after ``prefix``.

    A field's ``description`` is its meaning, and ``json_schema_extra={"internal": True}`` marks an
    option that sleeper_spark or Spark sets.
    """
    specs = []
    for name, field in model.model_fields.items():
        if name in exclude:
            continue
        extra = field.json_schema_extra if isinstance(field.json_schema_extra, dict) else {}
        specs.append(OptionSpec(
            name=prefix + (field.alias or name),
            field_path=(*filter(None, [prefix.rstrip(".")]), name),
            annotation=Annotated[(field.annotation, *field.metadata)] if field.metadata else field.annotation,
            required=field.is_required(),
            default=None if field.default is PydanticUndefined else field.default,
            generated=field.default_factory is not None,
            description=field.description or "",
            scopes=frozenset(scopes),
            internal=bool(extra.get("internal", False)),
        ))
    return specs


class OptionRegistry:
    """Every option of sleeper_spark, looked up without case.

    Models that share a field (the ``table`` of a read and of a write) give one option that
    applies in all their scopes; they must agree on its default.
    """

    def __init__(self, specs: Iterable[OptionSpec]) -> None:
        merged: dict[str, OptionSpec] = {}
        for spec in specs:
            known = merged.get(spec.key)
            if known is not None:
                if (known.default, known.required, known.generated) != (spec.default, spec.required, spec.generated):
                    raise ValueError(f"option {spec.name!r} is declared twice with different defaults")
                spec = known.model_copy(update={"scopes": known.scopes | spec.scopes})
            merged[spec.key] = spec
        self._specs = merged

    def __iter__(self) -> Iterator[OptionSpec]:
        return iter(self._specs.values())

    def specs(self, scope: Scope | None = None) -> list[OptionSpec]:
        return [spec for spec in self._specs.values() if scope is None or scope in spec.scopes]

    def find(self, key: str) -> OptionSpec | None:
        """The option ``key`` names, in any case; None for an unknown key."""
        spec = self._specs.get(key.lower())
        if spec is not None:
            return spec
        return next((spec for spec in self._specs.values() if spec.prefix and spec.matches(key)), None)

    def spec(self, key: str) -> OptionSpec:
        """The option ``key`` names; :meth:`unknown` if none."""
        spec = self.find(key)
        if spec is None:
            raise self.unknown(key)
        return spec

    def by_name(self, options: Mapping[str, str], scope: Scope) -> dict[str, str]:
        """The options of ``scope`` keyed by their spelled names (keys of ``metadata.<key>`` kept as given).

        Unknown keys are refused; known options of other scopes are left out, since Spark hands
        a read the same options as a write and a session conf serves both.
        """
        named: dict[str, str] = {}
        for key, value in options.items():
            spec = self.spec(key)
            if scope in spec.scopes:
                named[key if spec.prefix else spec.name] = value
        return named

    def unknown(self, key: str, origin: str = "") -> ConfigError:
        """The error for a key no option has: the closest option, every option by scope, and the docs.

        ``origin`` says where the key came from when that is not an option, e.g. a session conf entry.
        """
        public = [spec for spec in self._specs.values() if not spec.internal]
        by_key = {spec.key: spec.name for spec in public}
        closest = difflib.get_close_matches(key.lower(), by_key, n=1, cutoff=0.6)
        hint = f" (did you mean {by_key[closest[0]]!r}?)" if closest else ""
        groups = "; ".join(f"{_label(scope)}: {', '.join(_listed(s.name for s in public if scope in s.scopes))}"
                           for scope in SCOPES)
        return ConfigError(f"unknown sleeper option {key!r}{origin}{hint}. {groups}. Fix the key's spelling "
                           f"or remove it; every option is described in {DOCS}")


def _label(scope: Scope) -> str:
    return {"catalog": "Catalog options", "stream source": "streaming read options",
            "stream sink": "streaming write options"}.get(scope, f"{scope} options")


def _listed(names: Iterable[str]) -> list[str]:
    # The retry policies' knobs as one entry each: retry.*, store_retry.*
    listed: list[str] = []
    for name in names:
        group, dot, _ = name.partition(".")
        shown = f"{group}.*" if dot and not name.endswith(ANY_KEY) else name
        if shown not in listed:
            listed.append(shown)
    return listed


def describe(error: ValidationError) -> str:
    """A validation error as one line naming each option (by its spelled name) and what is wrong."""
    problems = [f"{'.'.join(str(p) for p in item['loc']) or 'options'}: {item['msg']}" for item in error.errors()]
    return "invalid sleeper options: " + "; ".join(problems)
