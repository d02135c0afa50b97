"""File names as file systems compare them: :func:`fold_name`.

Two names a file system treats as one file must be one name to sleuth wherever it
compares names it did not choose (an agent's paths against sleuth's own files, a
batch's report names against each other). File systems differ: case-insensitive ones
(macOS, Windows) fold case, macOS stores names decomposed, and HFS+ ignores some
invisible characters outright (``re\u200dsult.md`` is ``result.md`` there). The fold
is the widest of them: the Unicode default-ignorable code points dropped, NFKC, case
folded.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["DEFAULT_IGNORABLE", "fold_name"]

#: Unicode's Default_Ignorable_Code_Point (DerivedCoreProperties.txt, Unicode 15): soft
#: hyphen, joiners and zero widths, bidi marks and embeddings, variation selectors, the
#: byte order mark, fillers and tags. Invisible in a name, and some file systems skip them.
DEFAULT_IGNORABLE = re.compile(
    "[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e"
    "\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufff8"
    "\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e0fff]"
)


def fold_name(name: str) -> str:
    """``name`` as the most forgiving file system compares it (see the module doc)."""
    text = DEFAULT_IGNORABLE.sub("", name)
    return DEFAULT_IGNORABLE.sub("", unicodedata.normalize("NFKC", text)).casefold()
