"""A catalog's namespaces: the ones created (the registry records them) and the ones table names imply.

A namespace exists while it is recorded or while some table's or recorded namespace's name has
it as a prefix (``sales`` for ``sales.orders``, ``a`` for the namespace ``a.b``). Creating a
table never needs its namespace, so the records only add what names cannot say: a comment,
properties and a creation time. Altering an implied namespace records it.

Properties follow Spark's namespace metadata: the key ``"comment"`` is the comment wherever
properties are given or changed, and ``"location"`` is refused, since a namespace has no folder of
its own (its tables live at ``<warehouse>/<table name>/``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Mapping, Sequence

from sleeper_spark.commit import utc_now
from sleeper_spark.errors import (
    ConfigError,
    NamespaceAlreadyExistsError,
    NamespaceNotEmptyError,
    NamespaceNotFoundError,
    TableNotFoundError,
)
from sleeper_spark.log import CatalogBackend
from sleeper_spark.models import Namespace
from sleeper_spark.table.names import check_namespace_name, is_inside, parent_namespaces

log = logging.getLogger(__name__)

COMMENT = "comment"
LOCATION = "location"


class CatalogNamespaces:
    """The namespace calls of :class:`~sleeper_spark.table.catalog.Catalog`, over its backend.

    ``drop_table`` is the catalog's own, so that a cascading drop drops each table as
    ``Catalog.drop_table`` does.
    """

    def __init__(self, backend: CatalogBackend, warehouse: str, drop_table: Callable[[str], None]) -> None:
        self._backend = backend
        self._registry = backend.registry
        self._warehouse = warehouse
        self._drop_table = drop_table

    def create(self, name: str, comment: str | None, properties: Mapping[str, str] | None,
               if_not_exists: bool) -> Namespace:
        check_namespace_name(name)
        record = _new_record(name, comment, properties)
        inside = self._names_inside(name)
        if not inside:
            try:
                self._registry.register_namespace(record)
            except NamespaceAlreadyExistsError:
                if if_not_exists:
                    return self.get(name)
                raise NamespaceAlreadyExistsError(
                    f"namespace {name!r} exists already; create_namespace(..., if_not_exists=True) leaves it as it "
                    f"is, alter_namespace({name!r}, set=...) changes its comment and properties") from None
            log.info("namespace %s created in %s", name, self._warehouse)
            return record
        if if_not_exists:
            return self.get(name)
        raise NamespaceAlreadyExistsError(
            f"namespace {name!r} exists already: it holds {inside[:5]}; create_namespace(..., if_not_exists=True) "
            f"leaves it as it is, alter_namespace({name!r}, set=...) gives it a comment and properties")

    def get(self, name: str) -> Namespace:
        check_namespace_name(name)
        record = self._registry.lookup_namespace(name)
        if record is not None:
            return record
        if self._names_inside(name):
            return Namespace(name=name)
        raise self._missing(name)

    def children(self, parent: str | None) -> list[str]:
        if parent is not None:
            check_namespace_name(parent)
        tables, recorded = self._registry.names(), self._registry.namespace_names()
        every = set(recorded).union(*(parent_namespaces(name) for name in [*tables, *recorded]))
        if parent is None:
            if not tables and not recorded:
                self._backend.check_warehouse()  # else a mistyped path would read as an empty catalog
            return sorted(name for name in every if "." not in name)
        if parent not in every:
            raise self._missing(parent)
        depth = parent.count(".") + 1
        return sorted(name for name in every if is_inside(name, parent) and name.count(".") == depth)

    def alter(self, name: str, set: Mapping[str, str] | None, unset: Sequence[str]) -> Namespace:
        check_namespace_name(name)
        change = _change(name, set, unset)
        changed = self._registry.update_namespace(name, change)
        if changed is None:
            if not self._names_inside(name):
                raise self._missing(name)
            try:  # an implied namespace: its first change records it
                changed = change(Namespace(name=name, created_at=utc_now()))
                self._registry.register_namespace(changed)
            except NamespaceAlreadyExistsError:  # recorded meanwhile: change that record
                changed = self._registry.update_namespace(name, change)
                if changed is None:  # and dropped again
                    raise self._missing(name) from None
        log.info("namespace %s of %s changed: set %s, unset %s", name, self._warehouse, sorted(set or {}),
                 sorted(unset))
        return changed

    def drop(self, name: str, cascade: bool) -> None:
        check_namespace_name(name)
        tables, recorded = self._registry.names(), self._registry.namespace_names()
        inside_tables = [table for table in tables if is_inside(table, name)]
        inside_namespaces = [namespace for namespace in recorded if is_inside(namespace, name)]
        if name not in recorded and not inside_tables and not inside_namespaces:
            raise self._missing(name)
        if (inside_tables or inside_namespaces) and not cascade:
            raise NamespaceNotEmptyError(
                f"namespace {name!r} holds {len(inside_tables)} table(s) {inside_tables[:5]} and "
                f"{len(inside_namespaces)} namespace(s) {inside_namespaces[:5]}; nothing was dropped. Drop them first, "
                f"or drop_namespace({name!r}, cascade=True) drops them with it")
        for table in inside_tables:
            try:
                self._drop_table(table)
            except TableNotFoundError:
                log.info("table %s was dropped meanwhile", table)
        for namespace in [*inside_namespaces, name]:
            self._registry.unregister_namespace(namespace)
        log.info("namespace %s of %s dropped with %d table(s)", name, self._warehouse, len(inside_tables))

    def _names_inside(self, name: str) -> list[str]:
        """The tables and recorded namespaces in ``name``, nested ones included: what makes it exist unrecorded."""
        found = [*self._registry.names(), *self._registry.namespace_names()]
        return [other for other in found if is_inside(other, name)]

    def _missing(self, name: str) -> NamespaceNotFoundError:
        self._backend.check_warehouse()  # a missing warehouse says so, rather than that one namespace is missing
        known = self.children(None)
        return NamespaceNotFoundError(
            f"no namespace {name!r} in {self._warehouse}: none was created and no table's name starts with "
            f"{name + '.'!r}; the top-level namespaces: {known[:20]}. create_namespace({name!r}) creates it")


def _strings(value: object, what: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise ConfigError(f"{what} must map strings to strings, e.g. {{'owner': 'finance'}}; nothing was changed")
    return dict(value)


def _check_no_location(keys: Collection[str], name: str) -> None:
    if LOCATION in keys:
        raise ConfigError(f"namespace {name!r}: a namespace has no location of its own (its tables live at "
                          "<warehouse>/<table name>/), so 'location' cannot be set; nothing was changed")


def _new_record(name: str, comment: object, properties: object) -> Namespace:
    given = _strings(properties, "properties")
    _check_no_location(given, name)
    if COMMENT in given:  # Spark's namespace metadata carries the comment as a property
        from_properties = given.pop(COMMENT)
        if comment is not None and comment != from_properties:
            raise ConfigError(f"namespace {name!r}: the comment is given twice, as comment= and as the property "
                              "'comment', with different texts; give it once")
        comment = from_properties
    if comment is not None and not isinstance(comment, str):
        raise ConfigError(f"namespace {name!r}: the comment must be a string, not {type(comment).__name__}")
    return Namespace(name=name, comment=comment, properties=given, created_at=utc_now())


def _change(name: str, set: object, unset: object) -> Callable[[Namespace], Namespace]:
    """What ``alter_namespace`` does to a record; idempotent, as the registry's compare-and-swap needs."""
    setting = _strings(set, "set")
    if isinstance(unset, str) or not isinstance(unset, Sequence) or not all(isinstance(k, str) for k in unset):
        raise ConfigError(f"namespace {name!r}: unset must be a sequence of property names, e.g. ('owner',)")
    removing = tuple(unset)
    _check_no_location(setting, name)
    _check_no_location(removing, name)
    both = sorted(set_key for set_key in setting if set_key in removing)
    if both:
        raise ConfigError(f"namespace {name!r}: {both} are both set and unset; nothing was changed")

    def change(record: Namespace) -> Namespace:
        comment = None if COMMENT in removing else record.comment
        comment = setting.get(COMMENT, comment)
        properties = {key: value for key, value in record.properties.items() if key not in removing}
        properties.update((key, value) for key, value in setting.items() if key != COMMENT)
        return record.model_copy(update={"comment": comment, "properties": properties})

    return change
