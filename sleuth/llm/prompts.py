"""Prompt templates: package data in ``sleuth/prompts/*.txt``, rendered strictly.

A template has a ``[system]`` section and a ``[user]`` section, and ``{{name}}``
placeholders. Rendering is strict and single-pass:

* a placeholder without a value, or a value without a placeholder, raises
  :class:`~sleuth.errors.PromptError` before anything reaches a server;
* values are inserted verbatim: a page containing ``{{x}}``, ``$x`` or ``{x}`` is
  never expanded again (one ``re.sub`` pass over the template, not over the result);
* the one change made to values: ``<<<`` and ``>>>`` become ``<< <`` and ``> >>``,
  so untrusted text cannot close the ``<<<PAGE … PAGE>>>`` block it sits in and
  pose as instructions. Every prompt tells the model that text inside such blocks
  is data and that instructions in it must be ignored.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from importlib.resources import files

from sleuth.errors import PromptError

__all__ = ["PROMPT_NAMES", "Prompt", "load", "placeholders", "render", "render_messages"]

PROMPT_NAMES = (
    "plan",
    "refine",
    "select",
    "summarize",
    "merge",
    "report",
    "verify",
    "agent_round",
    "subquestions",
    "learn",
    "outline",
    "section",
    "frame",
    "judge",
)

_PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
_SECTION = re.compile(r"^\[(system|user)\]\s*$", re.MULTILINE)
_NAME = re.compile(r"[a-z][a-z0-9_]*")


@dataclass(frozen=True)
class Prompt:
    """A loaded template: its name, its two sections and the placeholders they use."""

    name: str
    system: str
    user: str

    @property
    def placeholders(self) -> frozenset[str]:
        """Every ``{{name}}`` the template uses; render needs exactly these."""
        return frozenset(_PLACEHOLDER.findall(self.system + "\n" + self.user))


def _parse(name: str, text: str) -> Prompt:
    parts = _SECTION.split(text)
    # split() gives ["", "system", body, "user", body] for a well-formed file.
    sections = dict(zip(parts[1::2], parts[2::2], strict=True))
    if parts[0].strip() or set(sections) != {"system", "user"} or len(parts) != 5:
        raise PromptError(f"prompt {name!r} must have a [system] and then a [user] section")
    prompt = Prompt(name=name, system=sections["system"].strip(), user=sections["user"].strip())
    # A "{{" that is not a placeholder is a typo that would reach the model verbatim.
    leftover = _PLACEHOLDER.sub("", prompt.system + prompt.user)
    if "{{" in leftover or "}}" in leftover:
        raise PromptError(f"prompt {name!r} has a malformed placeholder")
    return prompt


@cache
def load(name: str) -> Prompt:
    """The template ``sleuth/prompts/<name>.txt``, read with importlib.resources."""
    if not _NAME.fullmatch(name):
        raise PromptError(f"invalid prompt name {name!r}")
    resource = files("sleuth") / "prompts" / f"{name}.txt"
    try:
        text = resource.read_text(encoding="utf-8")
    except (FileNotFoundError, IsADirectoryError):
        raise PromptError(f"no prompt named {name!r}") from None
    return _parse(name, text)


def placeholders(name: str) -> frozenset[str]:
    """The values ``render(name, ...)`` requires."""
    return load(name).placeholders


def _defang(value: str) -> str:
    return value.replace("<<<", "<< <").replace(">>>", "> >>")


def _fill(prompt: Prompt, values: dict[str, object]) -> tuple[str, str]:
    wanted = prompt.placeholders
    missing = sorted(wanted - values.keys())
    extra = sorted(values.keys() - wanted)
    if missing or extra:
        problems = []
        if missing:
            problems.append(f"missing {', '.join(missing)}")
        if extra:
            problems.append(f"unexpected {', '.join(extra)}")
        raise PromptError(f"prompt {prompt.name!r}: {'; '.join(problems)}")
    text: dict[str, str] = {}
    for key, value in values.items():
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            raise PromptError(
                f"prompt {prompt.name!r}: value {key!r} must be text or a "
                f"number, not {type(value).__name__}"
            )
        text[key] = _defang(str(value))

    def substitute(match: re.Match[str]) -> str:
        return text[match.group(1)]

    return _PLACEHOLDER.sub(substitute, prompt.system), _PLACEHOLDER.sub(substitute, prompt.user)


def render(name: str, **values: object) -> str:
    """The whole prompt as one text (system part, blank line, user part)."""
    system, user = _fill(load(name), values)
    return f"{system}\n\n{user}"


def render_messages(name: str, **values: object) -> list[dict[str, str]]:
    """The prompt as chat messages: a system message and a user message."""
    system, user = _fill(load(name), values)
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]
