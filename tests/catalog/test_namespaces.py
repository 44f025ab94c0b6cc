"""Namespaces of the Catalog API: created ones, with a comment and properties, beside those table names imply."""

from __future__ import annotations

import pyarrow as pa
import pytest

import sleeper_spark as ss
from tests.fixtures.catalogs import EVENTS_SCHEMA, events

SCHEMA = pa.schema([("id", pa.int64())])


def test_a_created_namespace_is_listed_and_described_and_holds_no_table(catalog: ss.Catalog) -> None:
    # When a namespace is created with a comment and properties
    created = catalog.create_namespace("sales", comment="Orders and refunds", properties={"owner": "finance"})

    # Then it is listed and described as created, and no table was made
    assert catalog.namespaces() == ["sales"]
    assert catalog.namespaces("sales") == []
    described = catalog.namespace("sales")
    assert described == created
    assert (described.name, described.comment, described.properties) == ("sales", "Orders and refunds",
                                                                         {"owner": "finance"})
    assert described.recorded and described.created_at is not None and described.created_at.tzinfo is not None
    assert catalog.tables() == []


def test_table_names_imply_their_namespaces(catalog: ss.Catalog) -> None:
    # Given tables in a namespace, in a nested one and outside any, and no namespace created
    for name in ("sales.orders", "sales.eu.orders", "top"):
        catalog.create_table(name, SCHEMA)

    # Then each prefix is a namespace, with no comment, no properties and no creation time
    assert catalog.namespaces() == ["sales"]
    assert catalog.namespaces("sales") == ["sales.eu"]
    assert catalog.namespaces("sales.eu") == []
    assert catalog.namespace("sales.eu") == ss.Namespace(name="sales.eu")
    assert not catalog.namespace("sales").recorded


def test_nested_namespaces_are_listed_level_by_level(catalog: ss.Catalog) -> None:
    # Given a created namespace three levels deep, and a created namespace beside a table's prefix
    catalog.create_namespace("a.b.c", comment="deep")
    catalog.create_namespace("z")
    catalog.create_table("m.t", SCHEMA)

    # Then each level lists its direct children by their full names, the levels above implied
    assert catalog.namespaces() == ["a", "m", "z"]
    assert catalog.namespaces("a") == ["a.b"]
    assert catalog.namespaces("a.b") == ["a.b.c"]
    assert catalog.namespace("a.b") == ss.Namespace(name="a.b")
    assert catalog.namespace("a.b.c").comment == "deep"


def test_creating_an_existing_namespace_is_refused_unless_if_not_exists(catalog: ss.Catalog) -> None:
    # Given a created namespace and one that a table's name implies
    first = catalog.create_namespace("sales", comment="first")
    catalog.create_table("web.clicks", SCHEMA)

    # When each is created again, Then it is refused
    with pytest.raises(ss.NamespaceAlreadyExistsError, match="if_not_exists=True"):
        catalog.create_namespace("sales", comment="second")
    with pytest.raises(ss.NamespaceAlreadyExistsError, match=r"web\.clicks"):
        catalog.create_namespace("web")

    # And with if_not_exists each existing one comes back unchanged, the implied one still unrecorded
    assert catalog.create_namespace("sales", comment="second", if_not_exists=True) == first
    assert catalog.create_namespace("web", comment="clicks", if_not_exists=True) == ss.Namespace(name="web")
    assert catalog.namespace("sales").comment == "first" and not catalog.namespace("web").recorded


def test_a_missing_namespace_is_a_namespace_not_found_error_naming_what_exists(catalog: ss.Catalog) -> None:
    # Given a catalog with one namespace
    catalog.create_namespace("sales")

    # When another is asked for, listed, changed or dropped, Then each says it is missing
    for call in (lambda: catalog.namespace("nope"), lambda: catalog.namespaces("nope"),
                 lambda: catalog.alter_namespace("nope", set={"a": "b"}), lambda: catalog.drop_namespace("nope")):
        with pytest.raises(ss.NamespaceNotFoundError, match=r"no namespace 'nope'.*\['sales'\]") as raised:
            call()
        # And it is no TableNotFoundError, which code catches to create a table
        assert not isinstance(raised.value, ss.TableNotFoundError)
    assert catalog.namespaces() == ["sales"]


def test_alter_namespace_sets_and_unsets_properties_and_the_comment(catalog: ss.Catalog) -> None:
    # Given a namespace with a comment and two properties
    catalog.create_namespace("sales", comment="Orders", properties={"owner": "finance", "retention": "7d"})

    # When one property is changed, one added, one removed, and the comment replaced
    changed = catalog.alter_namespace("sales", set={"owner": "ops", "tier": "gold", "comment": "Orders, all"},
                                      unset=["retention"])

    # Then the record holds exactly that, with its creation time kept
    assert (changed.comment, changed.properties) == ("Orders, all", {"owner": "ops", "tier": "gold"})
    assert catalog.namespace("sales") == changed
    # And unsetting "comment" removes the comment
    assert catalog.alter_namespace("sales", unset=["comment"]).comment is None


def test_altering_an_implied_namespace_records_it(catalog: ss.Catalog) -> None:
    # Given a namespace only a table's name makes
    catalog.create_table("sales.orders", SCHEMA)

    # When its properties are set
    catalog.alter_namespace("sales", set={"owner": "finance", "comment": "Orders"})

    # Then it is recorded with them, and stays after its last table is dropped
    described = catalog.namespace("sales")
    assert described.recorded and (described.comment, described.properties) == ("Orders", {"owner": "finance"})
    catalog.drop_table("sales.orders")
    assert catalog.namespaces() == ["sales"]


def test_drop_namespace_is_refused_while_it_holds_tables_or_namespaces(catalog: ss.Catalog) -> None:
    # Given a namespace holding a table, and one holding only a created namespace
    catalog.create_table("sales.orders", SCHEMA)
    catalog.create_namespace("web")
    catalog.create_namespace("web.eu")

    # When each is dropped without cascade, Then it is refused and nothing is dropped
    with pytest.raises(ss.NamespaceNotEmptyError, match=r"1 table\(s\) \['sales.orders'\].*cascade=True"):
        catalog.drop_namespace("sales")
    with pytest.raises(ss.NamespaceNotEmptyError, match=r"\['web.eu'\]"):
        catalog.drop_namespace("web")
    assert catalog.tables() == ["sales.orders"]
    assert catalog.namespaces() == ["sales", "web"] and catalog.namespaces("web") == ["web.eu"]


def test_drop_namespace_cascade_drops_its_tables_and_namespaces_and_nothing_else(catalog: ss.Catalog) -> None:
    # Given a created namespace with a written table, a nested table and a nested created namespace,
    # and a table whose name only starts like it
    catalog.create_namespace("sales")
    orders = catalog.create_table("sales.orders", EVENTS_SCHEMA)
    orders.write(events(0, 0))
    catalog.create_table("sales.eu.orders", SCHEMA)
    catalog.create_namespace("sales.us")
    catalog.create_table("salesforce", SCHEMA)

    # When it is dropped with cascade
    catalog.drop_namespace("sales", cascade=True)

    # Then its tables, their logs and the namespaces in it are gone, as drop_table leaves them
    assert catalog.tables() == ["salesforce"]
    assert catalog.namespaces() == []
    with pytest.raises(ss.NamespaceNotFoundError):
        catalog.namespace("sales.us")
    store = catalog.backend.store
    assert [info.key for info in store.list("sales.orders/_log/")] == []
    assert [info.key for info in store.list("sales.orders/data/")] != []  # drop_table keeps data files


def test_an_empty_namespace_is_dropped_and_can_be_created_again(catalog: ss.Catalog) -> None:
    catalog.create_namespace("sales", comment="old")
    catalog.drop_namespace("sales")
    assert catalog.namespaces() == []
    assert catalog.create_namespace("sales").comment is None


def test_a_table_and_a_namespace_may_share_a_name(catalog: ss.Catalog) -> None:
    # Given a table "sales" and a namespace "sales" (Spark's lake.sales and lake.sales.t)
    catalog.create_table("sales", SCHEMA)
    catalog.create_namespace("sales", comment="Orders")

    # When the namespace is dropped, Then the table stays, and the other way round
    catalog.drop_namespace("sales")
    assert catalog.tables() == ["sales"]
    catalog.create_namespace("sales")
    catalog.drop_table("sales")
    assert catalog.namespace("sales").recorded


@pytest.mark.parametrize("name", ["", ".a", "a.", "a..b", "a b", "a/b", "-a", "a.-b", "é", "x" * 127])
def test_invalid_namespace_names_are_refused(catalog: ss.Catalog, name: str) -> None:
    catalog.ensure_infrastructure()
    for call in (lambda: catalog.create_namespace(name), lambda: catalog.namespace(name),
                 lambda: catalog.namespaces(name), lambda: catalog.alter_namespace(name, set={"a": "b"}),
                 lambda: catalog.drop_namespace(name)):
        with pytest.raises(ss.InvalidNamespaceNameError, match="invalid namespace name") as raised:
            call()
        assert isinstance(raised.value, ss.InvalidTableNameError)
    assert catalog.namespaces() == []


def test_bad_comments_and_properties_are_config_errors_that_change_nothing(local_catalog: ss.Catalog) -> None:
    catalog = local_catalog
    catalog.create_namespace("sales", properties={"comment": "Orders"})  # Spark's way of giving the comment
    assert catalog.namespace("sales").comment == "Orders" and catalog.namespace("sales").properties == {}
    refused = {
        "location": lambda: catalog.create_namespace("web", properties={"location": "s3://b/w"}),
        "twice": lambda: catalog.create_namespace("web", comment="a", properties={"comment": "b"}),
        "not strings": lambda: catalog.create_namespace("web", properties={"owner": 1}),  # type: ignore[dict-item]
        "comment type": lambda: catalog.create_namespace("web", comment=7),  # type: ignore[arg-type]
        "set location": lambda: catalog.alter_namespace("sales", set={"location": "s3://b/w"}),
        "set and unset": lambda: catalog.alter_namespace("sales", set={"owner": "a"}, unset=["owner"]),
        "unset a string": lambda: catalog.alter_namespace("sales", unset="owner"),
    }
    for why, call in refused.items():
        with pytest.raises(ss.ConfigError):
            call()
            pytest.fail(why)
    assert catalog.namespaces() == ["sales"]
    assert catalog.namespace("sales").properties == {}
