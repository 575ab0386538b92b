"""Every config.yaml the plugin reads is parsed by PyYAML's C loader where PyYAML has it: the
pure-Python one took about 10 s over a 5.7 MB file, read more than once a command."""

from __future__ import annotations

import pytest
import yaml

from project_history_recall import settings
from project_history_recall.files import configfile, yamltext
from project_history_recall.semantic import consent
from project_history_recall.ui import demo

needs_libyaml = pytest.mark.skipif(not hasattr(yaml, "CSafeLoader"), reason="PyYAML built without libyaml")


@pytest.fixture
def pure_loader_refused(monkeypatch):
    """``yaml.SafeLoader`` (what ``yaml.safe_load`` uses) made to fail the test when it is used."""
    class Refused(yaml.SafeLoader):
        def __init__(self, stream):
            raise AssertionError("read by the pure-Python loader")

    monkeypatch.setattr(yaml, "SafeLoader", Refused)


@needs_libyaml
def test_settings_consents_config_edits_and_the_demo_read_by_the_c_loader(tmp_path, pure_loader_refused):
    own = settings.plugin_config_path(tmp_path)
    own.parent.mkdir(parents=True)
    own.write_text("context: 4\nconsents: []\n", encoding="utf-8")
    (tmp_path / "config.yaml").write_text("plugins:\n  enabled: [project-history-recall]\ntimezone: UTC\n",
                                          encoding="utf-8")
    loaded = settings.load(tmp_path)
    assert loaded.context == 4 and loaded.hermes_timezone == "UTC" and not loaded.warnings
    assert consent.records(tmp_path) == ([], [])
    assert configfile.replace_block("a: 1\n", "b", [2]) == "a: 1\nb:\n- 2\n"
    assert demo._enabled(tmp_path)


def test_the_values_are_those_of_yaml_safe_load():
    text = "\ufeffa: 1\nb: [x, 'y', 2.5, null, true]\nc: {d: 2026-09-01}\nd: |\n  two\n  lines\n"
    assert yamltext.safe_load(text) == yaml.safe_load(text)


def test_without_libyaml_the_pure_python_loader_reads_it(monkeypatch):
    monkeypatch.delattr(yaml, "CSafeLoader", raising=False)
    assert yamltext.safe_load("a: [1, 2]\n") == {"a": [1, 2]}


@pytest.mark.parametrize("text,line,column", [("a: 1\n\tb: 2\n", 2, 1), ("a: b: c\n", 1, 5), ("a: [1,\n", 2, 1)])
def test_bad_yaml_is_a_yaml_error_with_its_line_and_column(text, line, column):
    with pytest.raises(yaml.YAMLError) as exc:
        yamltext.safe_load(text)
    mark = exc.value.problem_mark
    assert (mark.line + 1, mark.column + 1) == (line, column) and exc.value.problem


def test_a_lone_surrogate_is_a_yaml_error_as_before():
    """libyaml reads UTF-8, which a lone surrogate has no encoding in: refused as YAML, not as an encoding."""
    with pytest.raises(yaml.YAMLError):
        yamltext.safe_load("a: \udc80\n")


@pytest.mark.parametrize("encoding,said", [("gbk", "not UTF-8 text, at line 2: save it as UTF-8"),
                                           ("latin-1", "not UTF-8 text, at line 2: save it as UTF-8"),
                                           ("utf-16", "UTF-16 text, not UTF-8: save it as UTF-8")])
def test_a_config_yaml_not_in_utf8_says_so(tmp_path, encoding, said):
    """The plugin's config.yaml saved by an editor in the system's code page (GBK on Chinese Windows,
    Latin-1) or as Notepad's "Unicode" (UTF-16): its settings and consents were ignored with "could not
    be read (UnicodeDecodeError)", which told the person neither what nor where. It says both now."""
    own = settings.plugin_config_path(tmp_path)
    own.parent.mkdir(parents=True)
    own.write_bytes("context: 4\n# mes réglages, 我的设置\nsemantic: false\n".encode(encoding, errors="replace"))
    loaded = settings.load(tmp_path)
    assert loaded.context == 2 and any(f"could not be read ({said})" in w for w in loaded.warnings), loaded.warnings
    assert any(f"could not be read ({said}); no consent is on record" in w for w in consent.records(tmp_path)[1])
