"""The one settings table drives the CLI, the environment and the README."""

import re
from pathlib import Path

import pytest

from sleuth.errors import ConfigError
from sleuth.settings import Settings, load_settings, settings_markdown, with_options

README = Path(__file__).resolve().parent.parent / "README.md"


def test_readme_settings_table_is_generated_from_the_model() -> None:
    text = README.read_text(encoding="utf-8")
    match = re.search(r"<!-- settings:start -->\n(.*?)\n<!-- settings:end -->", text, re.S)
    assert match, "README lost its settings markers"
    assert match.group(1) == settings_markdown(), (
        "README settings table is stale: paste sleuth.settings.settings_markdown() output"
    )


def test_cli_options_file_is_generated_from_the_model() -> None:
    """The CLI reads the table from a compiled file (fast --help); it must not drift."""
    from sleuth._options import cli_options
    from sleuth.settings import cli_options_table

    cli_options.cache_clear()
    assert list(cli_options()) == cli_options_table(), (
        "sleuth/data/cli_options.json is stale: run python -c 'from sleuth.settings "
        "import write_cli_options; write_cli_options()'"
    )


def test_environment_then_overrides() -> None:
    env = {
        "SLEUTH_DEPTH": "3",
        "SLEUTH_SEARCH": "searxng, duckduckgo",
        "SLEUTH_ALLOW_PRIVATE_URLS": "yes",
    }
    s = load_settings(env=env)
    assert (s.depth, s.search, s.allow_private_urls) == (3, ["searxng", "duckduckgo"], True)
    assert load_settings({"depth": 1}, env=env).depth == 1


@pytest.mark.parametrize(
    ("overrides", "flag"),
    [
        ({"depth": 0}, "--depth"),
        ({"max_sources": "many"}, "--max-sources"),
        ({"search": " , "}, "--search"),
        ({"format": "pdf"}, "--format"),
        ({"timeout": -1}, "--timeout"),
    ],
)
def test_errors_name_the_flag(overrides: dict[str, object], flag: str) -> None:
    with pytest.raises(ConfigError, match=f"^invalid value for {flag}: "):
        load_settings(overrides, env={})


def test_every_field_has_a_flag_and_help() -> None:
    for name, info in Settings.model_fields.items():
        extra = info.json_schema_extra
        assert isinstance(extra, dict) and str(extra["flag"]).startswith("--"), name
        assert info.description, name


def test_the_settings_table_is_the_one_reader_of_sleuth_variables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every SLEUTH_* variable (and OPENAI_BASE_URL) reaches sleuth through the settings
    table (load_settings), never by a module reading the environment on its own: settings
    built without it do not see them."""
    from sleuth.llm.config import resolve_config
    from sleuth.store import default_home

    for name, value in {
        "SLEUTH_HOME": str(tmp_path / "elsewhere"),
        "SLEUTH_BASE_URL": "http://127.0.0.1:9/v1",
        "SLEUTH_MODEL": "m",
        "OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    built = Settings()
    assert resolve_config(built) is None  # no server named: no model
    assert default_home() != tmp_path / "elsewhere"
    loaded = load_settings()
    assert loaded.home == tmp_path / "elsewhere"
    config = resolve_config(loaded)
    assert config is not None and (config.base_url, config.model) == ("http://127.0.0.1:9/v1", "m")


def test_options_over_settings_keep_what_was_set_and_what_was_not() -> None:
    """One way to apply keyword options (research, agent, the web page): the options win,
    what the settings had set stays set, their defaults stay defaults."""
    base = load_settings({"depth": 3, "search": "searxng"}, env={})
    merged = with_options(base, {"max_sources": 8, "depth": 1})
    assert (merged.depth, merged.max_sources, merged.search) == (1, 8, ["searxng"])
    assert merged.model_fields_set == {"depth", "max_sources", "search"}
    assert with_options(base, {}) is base
    assert with_options(
        None,
        {"depth": 1},
    ).model_fields_set >= {"depth"}
    with pytest.raises(ConfigError, match="--depth"):
        with_options(base, {"depth": 9})
