"""The plugin groups sessions exactly as Hermes's own sidebar builder does.

The reference is Hermes 0.19.0's ``tui_gateway.project_tree.build_tree``, fed by
the TUI server's own inputs and its real git probe (``tui_gateway.git_probe``,
which runs git): explicit projects by folder, else an automatic project per
repository root as git reports it, else per folder.
"""

from __future__ import annotations

import pytest

from hermes_world import enable_plugin, make_repo, only_on, plugin_module, sidebar_groups

pytestmark = only_on((0, 19), "Hermes's sidebar grouping comes from tui_gateway.server, which on the 0.22 line "
                              "needs Python 3.14 to import")


def plugin_groups(home) -> dict[str, str | None]:
    """session id -> the explicit project id or automatic root the plugin attributes it to (None: home)."""
    statedb, scope = plugin_module("hermes.statedb"), plugin_module("scope.resolve")
    with statedb.reading(home / "state.db") as (conn, _shape):
        amap = scope.attribution_map(home, conn)
    return {sid: a.id for sid, a in amap.by_session.items()}


@pytest.fixture
def layout(world, work):
    app = make_repo(work / "app")
    (app / "src").mkdir()
    lib = make_repo(work / "lib")
    (lib / "sub").mkdir()
    git_a = make_repo(work / "gitA")
    plain = work / "plain"
    plain.mkdir()
    (work / "notes").mkdir()
    (work / "link").symlink_to(app, target_is_directory=True)
    (work / "liblink").symlink_to(lib, target_is_directory=True)
    app_id = world.project("App", app)
    sessions = {
        "app/src": world.session("in app", cwd=app / "src"),
        "lib/sub": world.session("in lib", cwd=lib / "sub"),
        "gitA": world.session("in gitA", cwd=git_a),
        "plain": world.session("in plain", cwd=plain),
        "notes": world.session("in notes", cwd=work / "notes"),
        # Opened through a symlink to App's repository; the TUI recorded git's root for it.
        "link": world.session("through the link", cwd=work / "link", root=app),
        # Through a symlink to a repository that is no explicit project, no root recorded.
        "liblink": world.session("through the lib link", cwd=work / "liblink"),
        # '..' out of a repository into a plain folder: git says "not a repository".
        "dotdot": world.session("up and over", cwd=f"{git_a}/../plain"),
        "telegram": world.session("from a phone", source="telegram"),
    }
    enable_plugin(world.home)
    return {"work": work, "app_id": app_id, "sessions": sessions}


def test_every_session_is_grouped_as_hermes_sidebar_groups_it(layout, world):
    sidebar = sidebar_groups(world.db)
    mine = plugin_groups(world.home)
    names = {sid: name for name, sid in layout["sessions"].items()}
    assert {names[sid]: mine[sid] for sid in names} == {names[sid]: sidebar.get(sid) for sid in names}


def test_the_symlink_and_dotdot_cases_land_where_git_puts_them(layout, world):
    """The two cases spelled out, so a change in Hermes's own grouping cannot hide a regression here."""
    work, s = layout["work"], layout["sessions"]
    mine = plugin_groups(world.home)
    assert mine[s["link"]] == layout["app_id"]
    assert mine[s["liblink"]] == str(work / "lib")
    assert mine[s["dotdot"]] == f"{work}/gitA/../plain"
    assert mine[s["telegram"]] is None
