"""The one settings table drives the CLI, the environment and the docs."""

from pathlib import Path

import pytest

from sleuth.errors import ConfigError
from sleuth.settings import Settings, load_settings, with_options


def test_cli_options_file_is_generated_from_the_model() -> None:
    """The CLI reads the table from a compiled file (fast --help); it must not drift."""
    from sleuth._options import cli_options
    from sleuth.settings_docs import cli_options_table

    cli_options.cache_clear()
    assert list(cli_options()) == cli_options_table(), (
        "sleuth/data/cli_options.json is stale: run python -m sleuth.cli.reference"
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
    with pytest.raises(ConfigError, match=r"^invalid value for depth: must be at most 3$"):
        with_options(base, {"depth": 9})


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            {"max_sources": 999},
            "invalid value for --max-sources: must be at most 50 (60 with --mode deep)",
        ),
        (
            {"max_sources": 55},
            "invalid value for --max-sources: must be at most 50 (60 with --mode deep)",
        ),
        (
            {"max_sources": 61, "mode": "deep"},
            "invalid value for --max-sources: must be at most 60",
        ),
        (
            {"max_sources": 999, "mode": "deep"},
            "invalid value for --max-sources: must be at most 60",
        ),
        ({"depth": 9}, "invalid value for --depth: must be at most 3"),
        ({"depth": 0}, "invalid value for --depth: must be at least 1"),
        ({"timeout": 0}, "invalid value for --timeout: must be more than 0"),
    ],
)
def test_every_limit_reads_the_same(options: dict[str, object], message: str) -> None:
    """One wording for every bound, whichever check finds it (a field's own or a rule over
    several fields): 999 and 55 sources are refused by the same sentence."""
    with pytest.raises(ConfigError) as caught:
        load_settings(options, env={})
    assert str(caught.value) == message


def test_python_callers_see_their_keyword_not_the_cli_flag() -> None:
    """research_sync('x', depth=9) was told about '--depth', a flag it never typed."""
    with pytest.raises(ConfigError) as caught:
        with_options(None, {"depth": 9})
    assert str(caught.value) == "invalid value for depth: must be at most 3"
    with pytest.raises(ConfigError) as caught:
        with_options(None, {"max_sources": 55})
    assert str(caught.value) == (
        "invalid value for max_sources: must be at most 50 (60 with mode='deep')"
    )
