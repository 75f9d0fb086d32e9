"""One registry of views (attnwidgets.viewdata.views.VIEWS), read by every place that lists views: the wire-type
generator, the pictures of fallback, the command line and magics, the widgets' front-end names. Each test compares a
consumer with the registry, so a view added or renamed in one place only fails here."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from attnwidgets import cli, fallback, magics, plots, widgets
from attnwidgets.viewdata.views import BY_CLI, BY_NAME, REPLIES, STATES, TRAITS, VIEWS

ROOT = Path(__file__).resolve().parents[2]


def _wire_types():
    spec = importlib.util.spec_from_file_location("wire_types", ROOT / "js" / "scripts" / "wire_types.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_each_view_is_named_once():
    assert len(BY_NAME) == len(VIEWS)
    assert len(BY_CLI) == len([v for v in VIEWS if v.cli is not None])


def test_the_wire_types_list_every_registered_view_in_its_order():
    text = _wire_types().render()
    body = text.split("export interface Views {")[1].split("}\n")[0]
    listed = [line.strip().split(":")[0] for line in body.splitlines() if line.strip()]
    assert listed == [v.name for v in VIEWS]


def test_the_old_tables_are_read_from_the_registry():
    assert STATES == {v.name: v.state for v in VIEWS}
    assert all(REPLIES[v.name] == v.replies for v in VIEWS if v.replies)
    assert all(TRAITS[v.name] == v.traits for v in VIEWS if v.traits)


@pytest.mark.parametrize("spec", VIEWS, ids=lambda v: v.name)
def test_each_widget_shows_the_view_it_is_registered_for(spec):
    assert getattr(widgets, spec.widget)._bundle == spec.name


def test_fallback_draws_a_twin_for_exactly_the_views_that_name_one():
    # every view with a twin is drawn by its painter (plots.paint): fallback keeps no table of its own
    assert not hasattr(fallback, "_twins")
    for spec in VIEWS:
        if spec.twin is not None:
            assert callable(getattr(plots, spec.twin)), spec
            assert spec.paint is not None and callable(getattr(plots, spec.paint)), spec
        if spec.paint is not None:
            assert spec.twin is not None, spec


def test_a_view_without_a_twin_has_no_picture():
    class Stub:
        _bundle = next(v.name for v in VIEWS if v.twin is None)

    assert fallback.twin_figure(Stub()) is None


def test_the_command_line_offers_the_registered_views():
    assert cli.VIEWS == tuple(v.cli for v in VIEWS if v.cli is not None)
    assert f"--view {{{','.join(cli.VIEWS)}}}" in magics.USAGE
    _, show = cli._parsers()
    view = next(a for a in show._actions if a.dest == "view")
    assert tuple(view.choices) == cli.VIEWS
