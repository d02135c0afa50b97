"""Lines that are a headline, a link's text or a caption, not a sentence of prose; a
site's copyright notice; and a news story's dateline, which is not part of the sentence
it opens.

Read by :mod:`sleuth.stages.sentences` (such a line is never quoted, a dateline never
opens a quote) and by :mod:`sleuth.report.quote_check` (such a quote is a fault; a
sentence may start after a dateline).
"""

from __future__ import annotations

import re

__all__ = ["COPYRIGHT", "after_dateline", "dateline_end", "headline"]

_END = re.compile(r"[.!?…。！？][\"'”’)\]]*$")
# A teaser for another page: "Related: …", "Read more", "Photos: …".
_TEASER = re.compile(
    r"^\s*(?:[-*•]\s+)?(?:Related(?: (?:articles?|stories|content|coverage|reading))?"
    r"|Read (?:more|next|also)|Also read|More(?: from| on)?|See more|Recommended|Watch|Listen"
    r"|Photos?|Videos?|Gallery|Slideshow|Sponsored|Advertisement|Trending|Popular)\b\s*[:|»›]"
    r"|^\s*(?:[-*•]\s+)?(?:Read more|Continue reading|Click here)\b",
    re.IGNORECASE,
)
# A picture's caption: a credit in brackets closing the line ("… (Image: GETTY )",
# "(Photo: Reuters)", "(Getty Images)"), or a line opening with one ("Photo credit: …").
_CAPTION = re.compile(
    r"[(\[]\s*(?:(?:Image|Photo|Picture|Pic|Photograph|Credit|Illustration)s?"
    r"(?:\s+credit)?\s*[:/]|Getty Images|AFP|AP Photo|Reuters|Shutterstock)[^()\[\]]{0,80}"
    r"[)\]]\s*$"
    r"|^\s*(?:Image|Photo|Picture|Photograph)s?(?:\s+credit)?\s*:",
    re.IGNORECASE,
)
# A link to another story tagged by its kind ("… jibe [INSIGHT]", "… [VIDEO]"), or a line
# a separator closes ("… jibe [INSIGHT]|"): a site's links, not its prose.
_TAGGED_LINK = re.compile(r"\[[A-Z][A-Z ]{2,20}\][\s|]*$|\s[|·•»›]\s*$")
#: A site's legal line: "Copyright 2019 Hawaii News Now.", "© 2024 …", "All rights
#: reserved." ("Copyright law protects …" is prose: a notice names its year or its sign.)
COPYRIGHT = re.compile(
    r"^\s*(?:©|\(c\)\s*\d{4}|Copyright\s*(?:©|\(c\)|\d{4}))|\bAll rights reserved\b",
    re.IGNORECASE,
)
_LIST_MARK = re.compile(r"^\s*(?:[-*•]|\d{1,2}[.)])\s+")
#: Small words a title leaves in lower case ("Signs of Alien Life").
_TITLE_SMALL = frozenset(
    re.findall(r"\w+", "a an and as at but by for from in into nor of on or per the to vs via with")
)


def headline(line: str) -> bool:
    """Whether ``line`` is a headline, a link's text or a caption rather than a sentence:
    a teaser ("Related: …", "Read more"), a picture's caption (a credit such as
    "(Image: GETTY )" closing it), a link tagged by its kind ("… [VIDEO]"), or words in
    title case (every word but the small ones capitalised) with no sentence's ending."""
    if _TEASER.match(line) or _CAPTION.search(line) or _TAGGED_LINK.search(line):
        return True
    text = _LIST_MARK.sub("", line).strip()
    if not text or _END.search(text):
        return False
    words = [w for w in re.findall(r"[^\W\d_][\w'’-]*", text) if w.lower() not in _TITLE_SMALL]
    return len(words) >= 3 and all(w[0].isupper() for w in words)


# Where a news story was filed and by whom: "WASHINGTON (Reuters) -", "Hong Kong (CNN
# Business)" glued to its first word, "NEW YORK, Nov 19 (AP) —", "(Reuters) —"; a news
# agency named, or any outlet after a city in capitals and before a dash.
_FILED = (
    r"(?:[A-Z][\w.'’-]*(?: [A-Z][\w.'’-]*){0,3}(?:, [A-Z][a-z]{2,8}\.? \d{1,2})?,? )?"
    r"\((?:CNN(?: [A-Z][a-z]+)?|Reuters|AP|AFP|Bloomberg|UPI|Xinhua|dpa|AAP|PA|CNBC|BBC|NPR)\)"
)
# Any outlet after a city in capitals, with a dash: "HONOLULU, Hawaii (HawaiiNewsNow) -".
_FILED_IN_CAPS = (
    r"[A-Z]{2,}(?:[ .'-][A-Z]{2,})*(?:, [A-Z][a-z]+(?: [A-Z][a-z]+)?)? "
    r"\([A-Z][\w&.' ]{1,30}\)\s*[-–—]+"
)
_DATELINE = re.compile(_FILED + r"(?:\s*[-–—]+\s*|\s*(?=[A-Z0-9\"“‘]))|" + _FILED_IN_CAPS + r"\s*")
_ENDS_WITH_DATELINE = re.compile(
    r"(?:^|\s)(?:" + _FILED + r"(?:\s*[-–—]+)?|" + _FILED_IN_CAPS + ")$"
)


def dateline_end(text: str, start: int, end: int) -> int:
    """Where the sentence at ``text[start:end]`` starts once the dateline opening it (if
    any) is left out: ``start`` when it has none."""
    found = _DATELINE.match(text, start, end)
    return found.end() if found else start


def after_dateline(before: str) -> bool:
    """Whether ``before`` (the text before a sentence, stripped) ends with a dateline."""
    return bool(_ENDS_WITH_DATELINE.search(before))
