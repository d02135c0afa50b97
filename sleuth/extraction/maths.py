"""Formulas kept as text: a page's MathML becomes its TeX (or its text) before hiding.

Wikipedia and other MediaWiki sites write each formula twice: MathML for screen readers,
inside a ``display: none`` span, and an image whose ``alt`` is the TeX. Hidden text is
dropped (:func:`sleuth.extraction.html.without_hidden`) and images carry no text, so
without this the formula vanished from the sentence around it ("Proof: Therefore if
."). Each ``<math>`` element, with the wrapper that holds it and its fallback image, is
replaced by its TeX (``alttext``, or the TeX annotation), unwrapped of
``{\\displaystyle …}`` and font commands; a formula with no TeX gives its text.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["keep_maths", "readable_tex"]

_WRAPPER = re.compile(r"^\{\\(?:displaystyle|textstyle|scriptstyle)\s*(.*)\}$", re.DOTALL)
_FONT = re.compile(
    r"\\(?:mathsf|mathrm|mathbf|mathit|mathcal|mathbb|boldsymbol|operatorname|textstyle"
    r"|displaystyle)\b\s*"
)
_HOLDER_CLASS = re.compile(r"\bmwe-math-element\b")
_MATH_TAGS = ("math", "{http://www.w3.org/1998/Math/MathML}math")


def readable_tex(tex: str) -> str:
    """TeX as a reader can follow it in a sentence: no display wrapper or font commands,
    one space between words."""
    tex = " ".join(tex.split())
    match = _WRAPPER.match(tex)
    if match:
        tex = match.group(1).strip()
    return " ".join(_FONT.sub("", tex).split())


def _tex_of(math: Any) -> str:
    alt = math.get("alttext")
    if not alt:
        for node in math.iter("annotation", "{http://www.w3.org/1998/Math/MathML}annotation"):
            if "tex" in (node.get("encoding") or "").lower():
                alt = node.text_content()
                break
    if alt:
        return readable_tex(alt)
    return " ".join(math.text_content().split())


def keep_maths(tree: Any) -> None:
    """Replace every formula of ``tree`` (an lxml.html tree) by its text, in place."""
    for math in list(tree.iter(*_MATH_TAGS)):
        if math.getparent() is None:
            continue
        holder = math
        for ancestor in math.iterancestors():
            if _HOLDER_CLASS.search(ancestor.get("class") or ""):
                holder = ancestor
                break
        text = _tex_of(math)
        parent = holder.getparent()
        if parent is None:
            continue
        holder.tail = (text + (holder.tail or "")) if text else holder.tail
        holder.drop_tree()
