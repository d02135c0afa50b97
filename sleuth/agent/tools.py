"""The agent's five tools: definitions for the model, and the code that runs them.

``search``, ``browse``, ``file``, ``update_dashboard`` and ``all_finished`` are
described to the model as OpenAI function definitions (JSON Schema generated from
pydantic models, so the schema and the validation are one thing). Models without
function calling use the strict text fallback: a reply that is exactly one JSON
object ``{"tool": NAME, "arguments": {...}}``, optionally in one Markdown code
fence, and nothing else (:func:`parse_json_action`). Tool names are never looked
for in free text.

Everything a tool hands back goes to the model inside a ``<<<RESULT … RESULT>>>``
block, with any ``<<<``/``>>>`` inside defanged, and cut to a cap: page text and
search results are data, never instructions. Unknown tools, broken JSON and bad
arguments come back as error results the model can read; only an unexpected
exception inside a tool (a bug) is raised, as :class:`ToolCrash`, and fails the round.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import ConfigDict, Field, ValidationError

from sleuth._valid import valid_data
from sleuth.agent.dashboard import DASHBOARD_MAX_CHARS, Dashboard
from sleuth.agent.workspace import DASHBOARD, Workspace, WorkspaceError
from sleuth.fetch import Fetcher
from sleuth.models import Page, ValidText
from sleuth.search import SearchProvider, run_searches
from sleuth.settings import Settings

__all__ = [
    "RESULT_CHARS",
    "TOOL_NAMES",
    "Action",
    "ToolCrash",
    "ToolResult",
    "Toolbox",
    "json_protocol",
    "parse_json_action",
    "tool_definitions",
    "wrap_result",
]

#: Most characters of one tool result handed to the model (browse may ask for less).
RESULT_CHARS = 8000
_SNIPPET_CHARS = 300
_MAX_SEARCH_RESULTS = 10


class _Args(ValidText):  # a lone surrogate in an argument becomes U+FFFD
    model_config = ConfigDict(extra="forbid")


class SearchArgs(_Args):
    """Search the web; returns titles, URLs and snippets."""

    query: str = Field(min_length=1, max_length=400, description="What to search for.")
    max_results: int | None = Field(
        None, ge=1, le=_MAX_SEARCH_RESULTS, description="How many results to return (1-10)."
    )


class BrowseArgs(_Args):
    """Read a web page: its title and main text. Long pages come in parts; ask again
    with ``offset`` for the next part."""

    url: str = Field(min_length=1, max_length=2000, description="http(s) URL of the page.")
    offset: int = Field(0, ge=0, description="Character to start from (default 0).")


class FileArgs(_Args):
    """Read, write, append to or list files inside this search's workspace. Paths are
    relative to the workspace (e.g. notes.md, sources/page1.md)."""

    operation: Literal["read", "write", "append", "list"]
    path: str = Field(".", max_length=240, description="Relative path; '.' for list.")
    content: str | None = Field(None, description="Text to write or append.")
    offset: int = Field(0, ge=0, description="read: character to start from.")


class DashboardArgs(_Args):
    """Replace the dashboard (your memory between rounds) with new plain text."""

    content: str = Field(
        description=f"The whole new dashboard, at most {DASHBOARD_MAX_CHARS} characters."
    )


class FinishArgs(_Args):
    """End the whole search with its final result."""

    result: str = Field(
        min_length=1,
        description="The answer to the goal, with the URLs of the pages it comes from.",
    )


_ARGS: dict[str, type[_Args]] = {
    "search": SearchArgs,
    "browse": BrowseArgs,
    "file": FileArgs,
    "update_dashboard": DashboardArgs,
    "all_finished": FinishArgs,
}
TOOL_NAMES = tuple(_ARGS)


def _schema(model: type[_Args]) -> dict[str, Any]:
    def clean(node: Any) -> Any:
        if isinstance(node, dict):
            return {k: clean(v) for k, v in node.items() if k != "title"}
        if isinstance(node, list):
            return [clean(v) for v in node]
        return node

    schema: dict[str, Any] = clean(model.model_json_schema())
    schema.pop("description", None)
    return schema


def _description(model: type[_Args]) -> str:
    return " ".join((model.__doc__ or "").split()).replace("``", "")


def tool_definitions() -> list[dict[str, Any]]:
    """The tools as OpenAI function definitions."""
    return [
        {
            "type": "function",
            "function": {
                "name": name,
                "description": _description(model),
                "parameters": _schema(model),
            },
        }
        for name, model in _ARGS.items()
    ]


def json_protocol() -> str:
    """The system-prompt text that teaches the JSON-action fallback."""
    tools = "\n".join(
        f"- {name}: {_description(model)} Arguments: "
        f"{json.dumps(_schema(model), ensure_ascii=False)}"
        for name, model in _ARGS.items()
    )
    return (
        "You call tools by replying with exactly one JSON object and nothing else:\n"
        '{"tool": "<tool name>", "arguments": {<arguments>}}\n'
        "A single Markdown code fence around it is allowed; any other text is not. One "
        "tool per reply; its result comes back in the next message. A reply that is not "
        "such an object ends the round.\nThe tools:\n" + tools
    )


NATIVE_PROTOCOL = (
    "Act only through the tool calls provided; a reply without a tool call ends the round."
)


# -- the JSON-action text fallback ---------------------------------------------------------
_FENCED = re.compile(r"\A```[ \t]*(?:json)?[ \t]*\n(.*)\n[ \t]*```\Z", re.DOTALL | re.IGNORECASE)


@dataclass(frozen=True)
class Action:
    """A tool call from a text reply; ``error`` says why a would-be action is unusable."""

    name: str = ""
    arguments: dict[str, Any] = field(default_factory=dict)
    error: str | None = None


def parse_json_action(text: str) -> Action | None:
    """The action in a reply that is exactly one JSON object, else None.

    None means "not an action at all" (prose: the round ends). A reply that looks
    like an attempt (it starts with ``{`` or a code fence) but is not a valid
    ``{"tool": ..., "arguments": {...}}`` object gives an :class:`Action` with
    ``error`` set, so the model is told what is wrong instead of the round ending.
    """
    body = text.strip()
    fenced = _FENCED.match(body)
    if fenced:
        body = fenced.group(1).strip()
    if not body.startswith("{"):
        return Action(error="a code fence must hold one JSON object") if fenced else None
    try:
        value = json.loads(body)
    except json.JSONDecodeError as exc:
        return Action(
            error=f"the reply is not valid JSON ({exc.msg} at character {exc.pos}); "
            "send exactly one JSON object"
        )
    except RecursionError:
        return Action(error="the JSON is nested too deeply")
    if not isinstance(value, dict) or not isinstance(value.get("tool"), str):
        return Action(error='the object needs a "tool" name')
    value = valid_data(value)  # "\ud800" in the JSON is a lone surrogate once decoded
    extra = sorted(set(value) - {"tool", "arguments"})
    if extra:
        return Action(error=f'unexpected keys {extra}: use only "tool" and "arguments"')
    arguments = value.get("arguments", {})
    if not isinstance(arguments, dict):
        return Action(error='"arguments" must be a JSON object')
    return Action(name=value["tool"], arguments=arguments)


# -- results -------------------------------------------------------------------------------
def _defang(text: str) -> str:
    return text.replace("<<<", "<< <").replace(">>>", "> >>")


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n[… cut: {len(text) - limit:,} more characters]"


def wrap_result(tool: str, ok: bool, body: str, limit: int = RESULT_CHARS) -> str:
    """A tool result as the model sees it: an untrusted-data block, cut to ``limit``."""
    status = "ok" if ok else "error"
    return f"<<<RESULT\ntool: {tool}\nstatus: {status}\n\n{_defang(_cut(body, limit))}\nRESULT>>>"


@dataclass
class ToolResult:
    """What one tool call produced: the text for the model and facts for the history."""

    ok: bool
    body: str
    summary: str
    finished: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


class ToolError(Exception):
    """A tool could not do what was asked; the message goes back to the model."""


class ToolCrash(Exception):
    """A tool raised something unexpected (a bug): the round fails."""

    def __init__(self, tool: str, exc: BaseException) -> None:
        super().__init__(f"tool {tool} crashed: {type(exc).__name__}: {exc}")
        self.tool = tool


def decode_arguments(raw: str | Mapping[str, Any] | None) -> dict[str, Any]:
    """Arguments as a dict; ToolError for text that is not one JSON object."""
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return {}
    args: dict[str, Any]
    if isinstance(raw, Mapping):
        args = valid_data(dict(raw))
        return args
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ToolError(
            f"the arguments are not valid JSON ({exc.msg} at character "
            f"{exc.pos}); send one JSON object"
        ) from None
    except RecursionError:
        raise ToolError("the arguments are nested too deeply") from None
    if not isinstance(value, dict):
        raise ToolError("the arguments must be a JSON object")
    args = valid_data(value)  # "\ud800" in the JSON is a lone surrogate once decoded
    return args


def _validation_message(tool: str, exc: ValidationError) -> str:
    problems = []
    for err in exc.errors()[:4]:
        where = ".".join(str(p) for p in err["loc"]) or "arguments"
        problems.append(f"{where}: {err['msg']}")
    allowed = ", ".join(_ARGS[tool].model_fields)
    return f"bad arguments for {tool} ({'; '.join(problems)}); its arguments are: {allowed}"


class Toolbox:
    """Runs the tools for one search: its workspace, dashboard, search providers, fetcher.

    ``pages`` holds the pages read in this process (for the report); ``visited``
    and ``queries`` every URL read and query searched, earlier processes included.
    """

    def __init__(
        self,
        *,
        workspace: Workspace,
        dashboard: Dashboard,
        settings: Settings,
        providers: list[SearchProvider],
        fetcher: Fetcher,
        page_chars: int = RESULT_CHARS,
    ) -> None:
        self.workspace = workspace
        self.dashboard = dashboard
        self.settings = settings
        self.providers = providers
        self.fetcher = fetcher
        self.page_chars = page_chars
        self.pages: dict[str, Page] = {}
        self.visited: list[str] = []
        self.queries: list[str] = []
        self._handlers: dict[str, Callable[[Any], Awaitable[ToolResult]]] = {
            "search": self._search,
            "browse": self._browse,
            "file": self._file,
            "update_dashboard": self._update_dashboard,
            "all_finished": self._finish,
        }

    async def call(self, name: str, raw: str | Mapping[str, Any] | None) -> ToolResult:
        """Run one tool call; problems the model can fix come back as error results."""
        try:
            if name not in self._handlers:
                raise ToolError(
                    f"there is no tool named {name[:60]!r}; the tools are {', '.join(TOOL_NAMES)}"
                )
            try:
                args = _ARGS[name].model_validate(decode_arguments(raw))
            except ValidationError as exc:
                raise ToolError(_validation_message(name, exc)) from None
            return await self._handlers[name](args)
        except (ToolError, WorkspaceError) as exc:
            return ToolResult(ok=False, body=f"ERROR: {exc}", summary=str(exc))
        except Exception as exc:
            raise ToolCrash(name, exc) from exc

    async def _search(self, args: SearchArgs) -> ToolResult:
        query = " ".join(args.query.split())
        limit = args.max_results or min(self.settings.results_per_query, _MAX_SEARCH_RESULTS)
        hits, failures = await run_searches(
            [query], self.providers, limit=limit, timeout=self.settings.search_timeout
        )
        self.queries.append(query)
        if not hits and failures:
            reasons = "; ".join(f"{f.provider}: {f.reason}" for f in failures)
            raise ToolError(f"the search failed ({reasons})")
        lines = [f"{len(hits)} results for {query!r}:"]
        for n, hit in enumerate(hits, start=1):
            snippet = " ".join(hit.snippet.split())[:_SNIPPET_CHARS]
            lines += [f"{n}. {hit.title}", f"   {hit.url}", *([f"   {snippet}"] if snippet else [])]
        return ToolResult(
            ok=True,
            body="\n".join(lines),
            summary=f"{len(hits)} results for {query!r}",
            extra={"query": query},
        )

    async def _browse(self, args: BrowseArgs) -> ToolResult:
        url = args.url.strip()
        if not url.lower().startswith(("http://", "https://")):
            raise ToolError(f"only http(s) URLs can be browsed, not {url[:80]!r}")
        result = await self.fetcher.fetch(url)
        if not isinstance(result, Page):
            raise ToolError(f"could not read {url}: {result.reason}")
        final = result.final_url or url
        self.pages.setdefault(final, result)
        if final not in self.visited:
            self.visited.append(final)
        text = result.text
        start = min(args.offset, len(text))
        end = min(len(text), start + self.page_chars)
        more = f" (call browse with offset={end} for the next part)" if end < len(text) else ""
        body = (
            f"URL: {final}\nTitle: {result.title}\nCharacters {start:,}-{end:,} of "
            f"{len(text):,}{more}\n\n{text[start:end]}"
        )
        return ToolResult(
            ok=True,
            body=body,
            summary=f"read {result.title[:60]!r} ({final})",
            extra={"url": final, "title": result.title},
        )

    async def _file(self, args: FileArgs) -> ToolResult:
        ws = self.workspace
        if args.operation == "list":
            return ToolResult(ok=True, body=ws.listing(args.path), summary=f"list {args.path}")
        if args.operation == "read":
            text = ws.read(args.path)
            start = min(args.offset, len(text))
            end = min(len(text), start + RESULT_CHARS)
            more = f" (read again with offset={end} for more)" if end < len(text) else ""
            body = f"{args.path}: characters {start:,}-{end:,} of {len(text):,}{more}\n\n"
            return ToolResult(ok=True, body=body + text[start:end], summary=f"read {args.path}")
        if args.content is None:
            raise ToolError(f"file {args.operation} needs 'content'")
        done = ws.write(args.path, args.content, append=args.operation == "append")
        return ToolResult(ok=True, body=done, summary=done)

    async def _update_dashboard(self, args: DashboardArgs) -> ToolResult:
        try:
            done = self.dashboard.replace(args.content)
        except ValueError as exc:
            raise ToolError(str(exc)) from None
        self.workspace.write_text(DASHBOARD, self.dashboard.text)
        return ToolResult(ok=True, body=done, summary=done, extra={"dashboard": True})

    async def _finish(self, args: FinishArgs) -> ToolResult:
        return ToolResult(
            ok=True, body="the search is finished", summary="finished", finished=args.result.strip()
        )
