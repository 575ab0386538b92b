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
