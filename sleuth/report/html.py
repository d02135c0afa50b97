"""Reports as HTML: one self-contained file (``--format html``) or a fragment for the web page.

The report's Markdown is rendered by markdown-it-py with raw HTML off, images off and
links limited to ``http``, ``https``, ``mailto`` and in-page fragments, so text that
came from web pages is always escaped and can never become markup or a
``javascript:`` link. Citation markers such as ``[2]`` that name a source become
links to that source's entry (``#source-2``); the Sources list is built from the
report's records, with each source's tier as a badge. The file loads nothing from
anywhere: its CSS is inline, its two scripts (a loader that unpacks the timeline's data
block, and the script it holds, which draws the timeline: :mod:`sleuth.report.waterfall`)
are allowed by their hashes, and a
Content-Security-Policy forbids everything else. A deep research's tree of questions is
drawn by :mod:`sleuth.report.tree`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from html import escape
from typing import Any
from urllib.parse import urlsplit

from markdown_it import MarkdownIt
from markdown_it.renderer import RendererHTML
from markdown_it.rules_inline import StateInline
from markdown_it.token import Token
from markdown_it.utils import EnvType, OptionsDict

from sleuth._format import plural
from sleuth._slug import Slugger
from sleuth._version import __version__
from sleuth.lang import LABELS
from sleuth.models import Quality, Report, Source
from sleuth.report.quotes import POPOVER_CSS, QUOTE_CSS, VERBATIM_CSS, Quotes
from sleuth.report.tree import TREE_CSS, render_tree
from sleuth.report.waterfall import (
    REPORT_LOADER,
    REPORT_LOADER_HASH,
    WATERFALL_CSS,
    WATERFALL_JS_HASH,
    render_waterfall,
)

__all__ = [
    "REPORT_CSP",
    "REPORT_CSS",
    "TIERS",
    "render_fragment",
    "render_html",
    "report_from_data",
]

# "[3]", "[1, 4]", "[2-3]": numbers only, so ordinary bracketed words stay text.
_CITE = re.compile(r"\[(\d{1,3}(?:\s*[,;–-]\s*\d{1,3})*)\]")
_NUMBER = re.compile(r"\d{1,3}")
_TIER = re.compile(r"\((PRIMARY|SECONDARY|UNVERIFIED)\)")
# Section titles sleuth writes itself, in every language it has labels for.
_SOURCES_TITLES = sorted({"References", *(labels.sources for labels in LABELS.values())})
_GAPS_TITLES = {labels.gaps.casefold() for labels in LABELS.values()}
_SOURCES_HEADING = re.compile(
    r"^#{1,3}\s+(?:" + "|".join(map(re.escape, _SOURCES_TITLES)) + r")\s*[:：]?\s*$", re.IGNORECASE
)
_CONFIDENCE_HEADING = re.compile(
    r"^(?:"
    + "|".join(map(re.escape, sorted({labels.confidence for labels in LABELS.values()})))
    + r")\s*[:：]\s*(HIGH|MEDIUM|LOW)\b",
    re.IGNORECASE,
)
_ANY_HEADING = re.compile(r"^#{1,3}\s")
_SAFE_SCHEMES = ("http://", "https://", "mailto:", "#")

_BASE_CSS = """
.sleuth-report{--fg:#1d2329;--muted:#5b6670;--line:#d8dee4;--bg:#fff;--bg2:#f5f7f9;
 --link:#0b5cad;--hi:#fff4c2;color:var(--fg);line-height:1.55;font:16px/1.55 system-ui,
 -apple-system,"Segoe UI",Roboto,sans-serif;max-width:52rem}
@media (prefers-color-scheme:dark){.sleuth-report{--fg:#e3e7ea;--muted:#9aa6b0;--line:#39424a;
 --bg:#171d22;--bg2:#1f262c;--link:#7cb6ff;--hi:#4a4216}}
.sleuth-report h1{font-size:1.6rem;line-height:1.25;margin:.2rem 0 .6rem}
.sleuth-report h2{font-size:1.2rem;margin:1.8rem 0 .6rem;padding-bottom:.2rem;
 border-bottom:1px solid var(--line)}
.sleuth-report a{color:var(--link);overflow-wrap:anywhere}
.sleuth-report blockquote{margin:.4rem 0 .9rem;padding:.3rem .9rem;border-left:3px solid
 var(--line);background:var(--bg2);color:var(--fg)}
.sleuth-report blockquote p,.sleuth-report blockquote ul{margin:.25rem 0}
.sleuth-report code{background:var(--bg2);padding:0 .2rem;border-radius:3px}
.sleuth-report table{border-collapse:collapse}.sleuth-report td,.sleuth-report th{border:1px
 solid var(--line);padding:.2rem .5rem}
.sleuth-report .meta{display:flex;flex-wrap:wrap;gap:.4rem 1rem;align-items:center;
 color:var(--muted);font-size:.9rem;margin-bottom:1rem}
.sleuth-report a.cite{text-decoration:none;font-weight:600;padding:0 .1rem;border-radius:3px}
.sleuth-report a.cite:hover{background:var(--bg2);text-decoration:underline}
.sleuth-report .badge{display:inline-block;font-size:.72rem;font-weight:700;letter-spacing:.03em;
 padding:.05rem .45rem;border-radius:999px;vertical-align:middle;color:#fff;background:#6b7680}
.sleuth-report .tier-primary{background:#1f7a3d}.sleuth-report .tier-secondary{background:#2563a8}
.sleuth-report .tier-unverified{background:transparent;color:var(--muted);font-weight:600;
 box-shadow:inset 0 0 0 1px var(--line)}
.sleuth-report .legend{color:var(--muted);font-size:.85rem;margin:.2rem .5rem}
.sleuth-report .conf-high{background:#1f7a3d}.sleuth-report .conf-medium{background:#a86a06}
.sleuth-report .conf-low{background:#b3261e}
.sleuth-report h2.confidence{border-left:5px solid #6b7680;padding-left:.5rem;border-bottom:0}
.sleuth-report h2.confidence.high{border-left-color:#1f7a3d}
.sleuth-report h2.confidence.medium{border-left-color:#a86a06}
.sleuth-report h2.confidence.low{border-left-color:#b3261e}
.sleuth-report ol.sources{list-style:none;padding:0}
.sleuth-report ol.sources li{padding:.35rem .5rem;border-radius:4px;scroll-margin-top:1rem}
.sleuth-report ol.sources li:target{background:var(--hi)}
.sleuth-report .num{font-weight:700;margin-right:.3rem}
.sleuth-report .host,.sleuth-report .via{color:var(--muted);font-size:.85rem;margin-left:.3rem}
"""
#: The report's stylesheet: its own, then its quotes', question tree's and timeline's.
REPORT_CSS = _BASE_CSS + QUOTE_CSS + TREE_CSS + WATERFALL_CSS


def _safe_url(url: str) -> bool:
    return url.strip().lower().startswith(_SAFE_SCHEMES)


def _citation_rule(
    known: Mapping[int, Source], quotes: Quotes
) -> Callable[[StateInline, bool], bool]:
    """An inline rule turning ``[n]`` (every n a known source) into a citation token,
    with the spans ``quotes`` holds for its sentence.

    It runs before the link rule, and after the escape rule has consumed ``\\[``, so
    brackets that the writer escaped (page text) never become citations.
    """

    def citation(state: StateInline, silent: bool) -> bool:
        if state.src[state.pos] != "[":
            return False
        match = _CITE.match(state.src, state.pos, state.posMax)
        if match is None or state.src[match.end() : match.end() + 1] == "(":
            return False  # "[1](https://…)" is a real link
        numbers = [int(n) for n in _NUMBER.findall(match.group(1))]
        if not all(n in known for n in numbers):
            return False
        if not silent:
            token = state.push("citation", "", 0)
            token.content = match.group(1)
            token.meta = {"quotes": quotes.at(state.src, state.pos, numbers)}
        state.pos = match.end()
        return True

    return citation


def _markdown(known: Mapping[int, Source], quotes: Quotes | None = None) -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    md.enable(["table", "strikethrough"])
    md.disable("image")  # a report must not load anything, and page text must not make it
    md.validateLink = _safe_url  # type: ignore[method-assign]
    spans = quotes or Quotes(None, known)
    md.inline.ruler.before("link", "citation", _citation_rule(known, spans))

    def render_citation(
        self: RendererHTML, tokens: list[Token], idx: int, options: OptionsDict, env: EnvType
    ) -> str:
        found = tokens[idx].meta.get("quotes") or {}

        def link(match: re.Match[str]) -> str:
            n = int(match.group(0))
            return spans.marker(n, found.get(n))

        return "[" + _NUMBER.sub(link, escape(tokens[idx].content)) + "]"

    def render_text(
        self: RendererHTML, tokens: list[Token], idx: int, options: OptionsDict, env: EnvType
    ) -> str:
        text = escape(tokens[idx].content, quote=False)
        return _TIER.sub(lambda m: _badge(m.group(1)), text)

    def render_link_open(
        self: RendererHTML, tokens: list[Token], idx: int, options: OptionsDict, env: EnvType
    ) -> str:
        token = tokens[idx]
        if not str(token.attrGet("href") or "").startswith("#"):
            # No referrer goes out: the document (its <meta name="referrer">) and the web
            # page (its Referrer-Policy header) both say so for every link.
            token.attrSet("rel", "noopener")
            token.attrSet("target", "_blank")
        return self.renderToken(tokens, idx, options, env)

    md.add_render_rule("citation", render_citation)
    md.add_render_rule("text", render_text)
    md.add_render_rule("link_open", render_link_open)
    return md


#: How each tier reads on the page, and what it means (the legend). The
#: names PRIMARY/SECONDARY/UNVERIFIED stay as they are in Markdown and JSON; on the page
#: "UNVERIFIED" read as a warning about the page, when it only says that the site is not
#: on sleuth's list of known sites.
TIERS = {
    "PRIMARY": (
        "primary",
        "an official site, standard or documentation on sleuth's list of known sites",
    ),
    "SECONDARY": ("secondary", "a well-known reference or community site on sleuth's list"),
    "UNVERIFIED": (
        "unlisted",
        "a site that is not on sleuth's list of known sites; this "
        "says nothing against the page itself",
    ),
}


def _badge(tier: str) -> str:
    """A tier's badge. What it means is said once, in the legend under the Sources list
    (:func:`_legend`), not in a tooltip on every badge."""
    label = TIERS[tier][0] if tier in TIERS else tier.lower()
    return f'<span class="badge tier-{escape(tier.lower())}">{label}</span>'


def _legend(sources: list[Source]) -> str:
    """One line under the Sources list saying what each tier shown there means."""
    shown = [tier for tier in TIERS if any(s.quality.value == tier for s in sources)]
    if not shown:
        return ""
    parts = [f"{_badge(tier)} {escape(TIERS[tier][1])}" for tier in shown]
    return f'<p class="legend">{"; ".join(parts)}.</p>\n'


def _plain(inline: Token) -> str:
    """The text a heading shows: its inline children's text and code, marks left out."""
    parts = [
        child.content
        for child in inline.children or []
        if child.type in ("text", "code_inline", "citation")
    ]
    return "".join(parts) if inline.children else inline.content


def _mark_headings(tokens: list[Token], slugs: Slugger, found: dict[str, str]) -> None:
    """Give each heading the id GitHub gives it (the Markdown's contents links work here
    too; ``slugs`` counts the document's headings in order); ``confidence`` and ``gaps``
    for sleuth's own sections, which the page links to. ``found`` gets each heading's text
    and id."""
    for i, token in enumerate(tokens[:-1]):
        if token.type != "heading_open":
            continue
        text = _plain(tokens[i + 1]).strip()
        slug = slugs.slug(text)
        confidence = _CONFIDENCE_HEADING.match(text) if token.tag == "h2" else None
        if confidence:
            slug = "confidence"
            token.attrSet("class", f"confidence {confidence.group(1).lower()}")
        elif token.tag == "h2" and text.casefold() in _GAPS_TITLES:
            slug = "gaps"
            token.attrSet("class", "gaps")
        elif re.fullmatch(r"source-\d+|sources(-list)?", slug):
            slug += "-h"  # the ids of the Sources list and its entries stay theirs
        token.attrSet("id", slug)
        found.setdefault(text, slug)


def _render_md(
    md: MarkdownIt, text: str, slugs: Slugger, headings: dict[str, str] | None = None
) -> str:
    tokens = md.parse(text)
    _mark_headings(tokens, slugs, {} if headings is None else headings)
    html: str = md.renderer.render(tokens, md.options, {})
    return html


def _split_sources(markdown: str) -> tuple[str, str, str | None]:
    """The Markdown before and after its Sources section, and that section's title
    (None: it had none)."""
    lines = markdown.splitlines()
    for i, line in enumerate(lines):
        if _SOURCES_HEADING.match(line):
            end = next(
                (j for j in range(i + 1, len(lines)) if _ANY_HEADING.match(lines[j])), len(lines)
            )
            title = line.lstrip("#").strip()
            return "\n".join(lines[:i]), "\n".join(lines[end:]), title
    return markdown, "", None


def _sources_html(sources: list[Source]) -> str:
    items = []
    for source in sources:
        title = escape(source.title or source.url)
        host = escape(urlsplit(source.url).hostname or "")
        if source.url.lower().startswith(("http://", "https://")):
            href = escape(source.url, quote=True)
            name = f'<a href="{href}" rel="noopener" target="_blank">{title}</a>'
        else:
            name = title
        via = escape(", ".join(source.providers))
        found = f'<span class="via">via {via}</span>' if via else ""
        items.append(
            f'<li id="source-{source.id}"><span class="num">[{source.id}]</span> '
            f'{_badge(source.quality.value)} {name}<span class="host">{host}</span>{found}</li>'
        )
    body = "\n".join(items) if items else "<li><em>None.</em></li>"
    return (
        f'<section id="sources-list"><h2 id="sources">Sources</h2>\n<ol class="sources">\n'
        f"{body}\n</ol>\n{_legend(sources)}</section>\n"
    )


def _meta_html(report: Report) -> str:
    stats = report.stats
    level = report.confidence
    gaps = plural(len(report.failures), "gap", "gaps")
    parts = [
        f'<span class="badge conf-{level.lower()}" title="{escape(report.confidence_reason)}"'
        f">confidence {level}</span>",
        f"<span>{plural(len(report.sources), 'source', 'sources')} read</span>",
        f"<span>{plural(stats.searches, 'search', 'searches')}</span>",
        f"<span>{plural(stats.fetches, 'page', 'pages')} fetched</span>",
        # A link only when there is something to go to.
        f'<span><a href="#gaps">{gaps}</a></span>' if report.failures else f"<span>{gaps}</span>",
        f"<span>{stats.elapsed_s:,.1f} s</span>",
    ]
    if stats.llm_calls:
        tokens = stats.prompt_tokens + stats.completion_tokens
        cost = f", ${stats.cost_usd:.4f}" if stats.cost_usd is not None else ""
        calls = plural(stats.llm_calls, "model call", "model calls")
        parts.append(f"<span>{calls}, {tokens:,} tokens{cost}</span>")
    if report.run_id:
        parts.append(f"<span>run {escape(report.run_id)}</span>")
    return f'<div class="meta">{"".join(parts)}</div>\n'


def render_fragment(report: Report, *, timeline: bool = True, standalone: bool = False) -> str:
    """The report as an ``<article class="sleuth-report">`` (style it with ``REPORT_CSS``),
    ending with its timing waterfall (unless ``timeline`` is False: the web page draws
    a live run's own; ``standalone``: the waterfall carries its own stylesheet)."""
    known = {source.id: source for source in report.sources}
    said = [*(report.answer.sentences if report.answer else [])]
    said += [s for section in report.sections or [] for s in section.answer]
    md = _markdown(known, Quotes(report.claims, known, said))
    before, after, sources_title = _split_sources(report.markdown)
    slugs = Slugger()
    lines = before.split("\n", 1)
    if lines[0].startswith("# "):
        head, before = _render_md(md, lines[0], slugs), (lines[1] if len(lines) > 1 else "")
    else:
        head = f"<h1>Research: {escape(report.topic)}</h1>\n"
    headings: dict[str, str] = {}
    body = _render_md(md, before, slugs, headings)
    if sources_title is not None:  # the Markdown's own heading, which the list replaces
        slugs.slug(sources_title)
    body += _sources_html(report.sources) + _render_md(md, after, slugs)
    if sources_title is None and 'id="gaps"' not in body and report.failures:
        gaps = "\n".join(
            f"- {escape(f.url or f.stage)} — {escape(f.reason)}" for f in report.failures
        )
        body += _render_md(md, "## Gaps\n\n" + gaps, slugs)
    body += render_tree(report, headings)
    if timeline:
        body += render_waterfall(report, standalone=standalone)
    return f'<article class="sleuth-report">\n{head}{_meta_html(report)}{body}</article>\n'


#: The report document's Content-Security-Policy: its inline CSS and the two scripts of
#: its timeline (the loader and the drawing script it unpacks, by their hashes), nothing
#: else, ever: no request of any kind.
REPORT_CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; "
    f"script-src '{REPORT_LOADER_HASH}' '{WATERFALL_JS_HASH}'; "
    "img-src data:; base-uri 'none'; form-action 'none'"
)
_PAGE_CSS = (
    "body{margin:0;padding:2rem 1rem}main{margin:0 auto;max-width:52rem}"
    "footer{margin-top:2.5rem;font:13px system-ui,sans-serif;color:#7a848d}"
    "@media (prefers-color-scheme:dark){body{background:#14191d}}"
)


def _tight(css: str) -> str:
    """``css`` with no whitespace that its meaning does not need: runs of it become one
    space (a line may break inside a value), and none is kept around ``{ } ; ,``."""
    return re.sub(r" ?([{};,]) ?", r"\1", re.sub(r"\s+", " ", css)).strip()


def _css(fragment: str) -> str:
    """The stylesheet a standalone report needs: the parts for its quotes and tree only
    when it has them (the timeline's comes with its data, for its script)."""
    # The document holds one report: its rules need no ".sleuth-report " scope, which the
    # web page's stylesheet keeps (the page shows more than the report).
    parts = [_tight(_BASE_CSS.replace(".sleuth-report ", ""))]
    parts += [POPOVER_CSS] if 'class="cw"' in fragment else []
    parts += [VERBATIM_CSS] if 'class="cite v"' in fragment else []
    parts += [TREE_CSS] if '<details class="qtree"' in fragment else []
    return "".join(parts)


def render_html(report: Report) -> str:
    """The report as one self-contained HTML document: inline CSS, no external asset, and
    (when it has a timeline) the scripts that draw it, which make no request."""
    title = escape(f"Research: {report.topic}")
    fragment = render_fragment(report, standalone=True)
    script = (
        f"<script>{REPORT_LOADER}</script>\n" if '<details class="timeline"' in fragment else ""
    )
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{REPORT_CSP}">\n'
        '<meta name="referrer" content="no-referrer">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f'<meta name="generator" content="sleuth {__version__}">\n'
        f"<title>{title}</title>\n<style>{_css(fragment)}{_PAGE_CSS}</style>\n</head>\n"
        f"<body>\n<main>\n{fragment}<footer>Written by sleuth {__version__}. Citation numbers "
        "link to the sources list; every source listed was fetched and read.</footer>\n"
        f"</main>\n{script}</body>\n</html>\n"
    )


def report_from_data(data: Mapping[str, Any]) -> Report:
    """A :class:`Report` from its JSON form, as stored or printed by ``--format json``.

    The JSON form leaves out each source's ``quality_score``; it is filled in from the
    tier so that stored reports can be shown again.
    """
    fixed = dict(data)
    default_score = {Quality.PRIMARY: 4, Quality.SECONDARY: 3, Quality.UNVERIFIED: 2}
    sources = []
    for source in fixed.get("sources") or []:
        source = dict(source)
        if "quality_score" not in source:
            source["quality_score"] = default_score.get(
                Quality(source.get("quality", "UNVERIFIED")), 2
            )
        sources.append(source)
    fixed["sources"] = sources
    return Report.model_validate(fixed)
