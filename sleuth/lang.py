"""The language a run writes in: ``--lang`` as a name for prompts, and sleuth's own labels.

``--lang`` takes a code (``en``, ``zh``, ``zh-TW``, ``ja``, ...) or a language name
(``Dutch``); without it the question's script decides (Han → Chinese, kana →
Japanese, hangul → Korean, Cyrillic → Russian, ASCII → English), and a question in
another Latin-script language is answered "in the same language as the question".
The model writes the report body, its section titles included, in that language;
the parts sleuth writes itself (title prefix, Sources, Confidence, Gaps, the
citation footer) come from :data:`LABELS`, in English where no translation exists.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sleuth.errors import ConfigError

_CODES = {
    "en": "English",
    "zh": "Simplified Chinese",
    "zh-cn": "Simplified Chinese",
    "zh-hans": "Simplified Chinese",
    "zh-sg": "Simplified Chinese",
    "zh-tw": "Traditional Chinese",
    "zh-hk": "Traditional Chinese",
    "zh-hant": "Traditional Chinese",
    "ja": "Japanese",
    "ko": "Korean",
    "de": "German",
    "fr": "French",
    "es": "Spanish",
    "pt": "Portuguese",
    "it": "Italian",
    "nl": "Dutch",
    "ru": "Russian",
    "uk": "Ukrainian",
    "pl": "Polish",
    "tr": "Turkish",
    "ar": "Arabic",
    "hi": "Hindi",
    "vi": "Vietnamese",
    "id": "Indonesian",
    "sv": "Swedish",
}
SAME_AS_QUESTION = "the same language as the question"
_NAME = re.compile(r"[^\W\d_][\w \-()]{0,39}")
_SCRIPTS = (
    (re.compile(r"[\u3040-\u30ff]"), "Japanese"),
    (re.compile(r"[\uac00-\ud7af]"), "Korean"),
    (re.compile(r"[\u4e00-\u9fff]"), "Simplified Chinese"),
    (re.compile(r"[\u0400-\u04ff]"), "Russian"),
)


@dataclass(frozen=True)
class Labels:
    """The words sleuth itself puts into an LLM-written report."""

    research: str = "Research"
    confidence: str = "Confidence"
    sources: str = "Sources"
    gaps: str = "Gaps"
    no_sources: str = "_None._"
    no_gaps: str = "_Every source that was tried could be read._"
    unverified: str = "*(unverified)*"
    check_title: str = "Citation check"
    removed: str = "Removed: not supported by the cited source"
    # deep mode's long report
    contents: str = "Contents"
    introduction: str = "Introduction"
    conclusion: str = "Conclusion"


LABELS: dict[str, Labels] = {
    "English": Labels(),
    "Simplified Chinese": Labels(
        research="研究",
        confidence="可信度",
        sources="参考来源",
        gaps="未能获取的内容",
        no_sources="_无。_",
        no_gaps="_所有尝试的来源都已读取。_",
        unverified="*（未核实）*",
        check_title="引用核查",
        removed="已删除：引用的来源不支持",
        contents="目录",
        introduction="引言",
        conclusion="结论",
    ),
    "Traditional Chinese": Labels(
        research="研究",
        confidence="可信度",
        sources="參考來源",
        gaps="未能取得的內容",
        no_sources="_無。_",
        no_gaps="_所有嘗試的來源都已讀取。_",
        unverified="*（未核實）*",
        check_title="引用核查",
        removed="已刪除：引用的來源不支持",
        contents="目錄",
        introduction="引言",
        conclusion="結論",
    ),
}


def language_name(lang: str | None, question: str = "") -> str:
    """The language to put in prompts ("Simplified Chinese", "Dutch", ...).

    Raises ConfigError for a ``--lang`` value that is not a code or a plain name.
    """
    if lang is not None and lang.strip():
        value = " ".join(lang.split())
        code = value.lower().replace("_", "-")
        if code in _CODES:
            return _CODES[code]
        if not _NAME.fullmatch(value):
            raise ConfigError(
                f"invalid value for --lang: {lang!r} is not a language code or "
                "name (e.g. en, zh, German)"
            )
        return value[:1].upper() + value[1:]
    for pattern, name in _SCRIPTS:
        if pattern.search(question):
            return name
    letters = [ch for ch in question if ch.isalpha()]
    return "English" if all(ch.isascii() for ch in letters) else SAME_AS_QUESTION


def labels_for(language: str) -> Labels:
    """sleuth's own report words in ``language``, English where none are known."""
    return LABELS.get(language, LABELS["English"])
