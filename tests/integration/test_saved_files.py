"""The vectors a search saves for the next process are deleted once no search can read them again.

Each project's matrix is saved in ``matrices/`` of the data folder (``semantic/kept.py``). A project
that is gone (archived in Hermes) or a model fingerprint no longer configured (here: another chunk
size) leaves a file nothing reads; the next search through Hermes deletes it, keeps the current
project's, and leaves alone whatever else is in the folder.
"""

from __future__ import annotations

from hermes_world import EN_DOCS, ask, plugin_module, plugin_settings, semantic_docs

DATA = "project-history-recall"


def _saved(folder) -> set[str]:
    return {p.name for p in folder.iterdir()}


def test_a_search_deletes_the_saved_vectors_of_a_gone_project_or_another_chunk_size(world, work, monkeypatch):
    docs = semantic_docs(world, work)
    # Save after every row read, so these few messages make files as 4,096 rows would.
    monkeypatch.setattr(plugin_module("semantic.matrix"), "SAVE_AFTER_ROWS", 1)
    folder = world.home / DATA / "matrices"
    assert ask(docs, "EN", "the build ran out of memory")["semantic_status"] == "ready"
    (en,) = _saved(folder)
    assert ask(docs, "ZH", "内存不够")["semantic_status"] == "ready"
    (zh,) = _saved(folder) - {en}
    # Not the plugin's: other names, a folder named like a matrix, a file in a folder below.
    foreign = {"notes.txt": b"mine", "scope.arrays": b"mine too", f"{en[:-7]}.arrays.bak": b"a copy"}
    for name, data in foreign.items():
        (folder / name).write_bytes(data)
    (folder / ("0" * 32 + ".arrays")).mkdir()
    (folder / ("0" * 32 + ".arrays") / ("1" * 32 + ".arrays")).write_bytes(b"below")
    others = _saved(folder) - {en, zh}

    world.archive(docs["ZH"])  # the project is gone: its sessions fall to an automatic project by folder
    assert ask(docs, "EN", "the build ran out of memory")["semantic_status"] == "ready"
    assert _saved(folder) == {en} | others
    fields, _ = plugin_module("files.arrays").load(folder / en)  # kept whole: the next process starts from it
    assert fields["rows"] == len(EN_DOCS)  # one chunk each

    plugin_settings(world.home, chunk_chars=500)  # another fingerprint: the saved vectors are of the old one
    assert ask(docs, "EN", "the build ran out of memory")["semantic_status"] == "ready"
    now = _saved(folder)
    assert en not in now and len(now - others) == 1 and others <= now
    assert (folder / ("0" * 32 + ".arrays") / ("1" * 32 + ".arrays")).read_bytes() == b"below"
    assert all((folder / name).read_bytes() == data for name, data in foreign.items())
