"""The live reload's bookkeeping, in process (``app/server/config_watch.py``): which data sources a
change keeps, starts and stops, a change whose data source never syncs, a change superseded
before a session boundary, and what carries over. Over a real server:
``tests/service/test_config_reload.py``."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from app.config import load_with_origin
from app.server.config_watch import ConfigWatch
from app.server.main import CalderaApp, create_app
from app.server.options import ServeOptions
from tests.examples import example_bytes

BUDGETS = """\
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web, namespace: default}
spec: {minAvailable: 1, selector: {matchLabels: {app: web}}}
status: {disruptionsAllowed: 0}
"""


def pdb_config(*files: Path, version: str = '"1.15"') -> str:
    entries = "".join(
        f"  - name: pdb\n    arguments: {{source: file, file: {path}}}\n" for path in files
    )
    return f"volcanoVersion: {version}\ntiers:\n- plugins:\n{entries}"


@asynccontextmanager
async def serving(path: Path) -> AsyncIterator[tuple[CalderaApp, ConfigWatch]]:
    """The app for the configuration file ``path``, its lifespan running, the watch driven by
    hand (``check()``) rather than by its timer."""
    config, origin = load_with_origin(path)
    app = create_app(ServeOptions.of(config, origin).replace(config_watch_seconds=0))
    async with app.router.lifespan_context(app):
        yield app, app.runtime.config_watch


def backgrounds(app: CalderaApp) -> dict[str, object]:
    return dict(app.runtime.backgrounds)


async def test_an_unchanged_entry_keeps_its_data_source_and_a_removed_one_is_stopped(
    tmp_path: Path,
) -> None:
    a, b = tmp_path / "a.yaml", tmp_path / "b.yaml"
    a.write_text(BUDGETS)
    b.write_text(BUDGETS)
    path = tmp_path / "caldera.yaml"
    path.write_text(pdb_config(a, b))
    async with serving(path) as (app, watch):
        before = backgrounds(app)
        kept, dropped = before.values()
        path.write_text(pdb_config(a))
        await watch.check()  # no session is open: applied at once
        after = backgrounds(app)
        assert list(after.values()) == [kept]
        assert watch.retired == []  # the switch retired it, the same look stopped it
        assert dropped._task is None  # type: ignore[attr-defined]
        assert kept._task is not None  # type: ignore[attr-defined]
    assert kept._task is None  # type: ignore[attr-defined]  # stopped with the app


async def test_a_data_source_that_never_syncs_rejects_the_change(tmp_path: Path) -> None:
    budgets = tmp_path / "budgets.yaml"
    budgets.write_text(BUDGETS)
    path = tmp_path / "caldera.yaml"
    path.write_text(pdb_config(budgets))
    async with serving(path) as (app, watch):
        watch.sync_timeout = 0.3
        served = watch.served.sha256
        path.write_text(pdb_config(tmp_path / "missing.yaml"))
        await watch.check()
        assert watch.served.sha256 == served
        assert watch.rejected is not None
        assert "did not sync within 0.3 s" in watch.rejected.error
        assert "missing.yaml" in watch.rejected.error
        assert app.runtime.metrics.config_rejected._value.get() == 1
        assert watch.retired == []  # the new source was stopped at once
        (kept,) = backgrounds(app).values()
        assert kept.ready()  # type: ignore[attr-defined]


async def test_a_change_superseded_before_the_session_boundary_stops_its_sources(
    tmp_path: Path,
) -> None:
    a, b, c = (tmp_path / f"{n}.yaml" for n in "abc")
    for budgets in (a, b, c):
        budgets.write_text(BUDGETS)
    path = tmp_path / "caldera.yaml"
    path.write_text(pdb_config(a))
    async with serving(path) as (app, watch):
        extender = app.runtime.extender
        extender.handle(
            "onSessionOpen", example_bytes("volcano-1.15", "onSessionOpen.request.json")
        )  # a session is open
        path.write_text(pdb_config(b))
        await watch.check()
        assert watch.staged is not None
        (source_b,) = watch.staged.started
        path.write_text(pdb_config(c))
        await watch.check()
        assert watch.staged is not None and watch.staged.started != [source_b]
        assert source_b._task is None  # type: ignore[attr-defined]
        extender.handle(
            "onSessionOpen", example_bytes("volcano-1.15", "onSessionOpen.request.json")
        )  # the boundary
        assert watch.staged is None
        (served,) = backgrounds(app).values()
        assert served.path == str(c)  # type: ignore[attr-defined]
        assert app.runtime.sessions.current is not None  # the new session opened on it


async def test_the_file_going_back_to_the_served_content_drops_the_staged_change(
    tmp_path: Path,
) -> None:
    budgets = tmp_path / "budgets.yaml"
    budgets.write_text(BUDGETS)
    path = tmp_path / "caldera.yaml"
    original = pdb_config(budgets)
    path.write_text(original)
    async with serving(path) as (app, watch):
        app.runtime.extender.handle(
            "onSessionOpen", example_bytes("volcano-1.15", "onSessionOpen.request.json")
        )
        path.write_text(pdb_config(budgets, budgets))
        await watch.check()
        assert watch.staged is not None
        path.write_text(original)
        await watch.check()
        assert watch.staged is None
        app.runtime.extender.handle(
            "onSessionOpen", example_bytes("volcano-1.15", "onSessionOpen.request.json")
        )
        assert len(backgrounds(app)) == 1


async def test_an_inferred_release_carries_over_a_reload(tmp_path: Path) -> None:
    path = tmp_path / "caldera.yaml"
    path.write_text("volcanoVersion: auto\ntiers:\n- plugins:\n  - name: priority\n")
    async with serving(path) as (app, watch):
        app.runtime.extender.handle(
            "onSessionOpen", example_bytes("v1.9", "onSessionOpen.request.json")
        )
        inferred = app.runtime.sessions.release
        assert inferred.name == "1.8"
        app.runtime.extender.handle("onSessionClose", b"{}")
        path.write_text("volcanoVersion: auto\ntiers:\n- plugins:\n  - name: conformance\n")
        await watch.check()
        assert [o.name for o in app.runtime.config.plugin_options()] == ["conformance"]
        assert app.runtime.sessions.release == inferred
