"""PDF to text with pypdf: the text layer of each page, and the title and date of the
document's metadata. A scanned PDF (no text layer) gives empty text; one that cannot be
opened raises :class:`~sleuth.extraction.text.ExtractError`."""

from __future__ import annotations

import io
import logging
from typing import Any

from sleuth.extraction.text import Extracted, ExtractError, normalize_text

__all__ = ["pdf_text"]

log = logging.getLogger(__name__)


def _pdf_date(value: Any) -> str | None:
    try:
        return value.date().isoformat() if value is not None else None
    except (AttributeError, ValueError):
        return None


def pdf_text(data: bytes, max_chars: int | None = None) -> Extracted:
    """Text of a PDF (title and date from its metadata).

    Stops reading pages once ``max_chars`` characters are in hand. Raises
    :class:`ExtractError` for a PDF that cannot be opened; a scanned PDF without
    a text layer gives empty text.
    """
    import pypdf

    try:
        reader = pypdf.PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            raise ExtractError("encrypted PDF")
        parts: list[str] = []
        size = 0
        for page in reader.pages:
            try:
                part = page.extract_text() or ""
            except MemoryError:  # not a reading of the page: the caller must see it
                raise
            except Exception:  # one broken page should not lose the others
                log.debug("pypdf could not read a page", exc_info=True)
                continue
            parts.append(part)
            size += len(part)
            if max_chars is not None and size > max_chars:
                break
        meta = _pdf_metadata(reader)
    except ExtractError:
        raise
    except MemoryError:  # not a reading of the page: the caller must see it
        raise
    except Exception as exc:  # pypdf raises many types on corrupt files
        raise ExtractError(f"unreadable PDF ({type(exc).__name__})") from exc
    return Extracted(text=normalize_text("\n\n".join(parts)), title=meta[0], date=meta[1])


def _pdf_metadata(reader: Any) -> tuple[str | None, str | None]:
    try:
        meta = reader.metadata
    except MemoryError:  # not a reading of the page: the caller must see it
        raise
    except Exception:  # broken metadata must not cost us the text
        return None, None
    if meta is None:
        return None, None
    title = normalize_text(str(meta.title)) if meta.title else None
    try:
        created = meta.creation_date
    except MemoryError:  # not a reading of the page: the caller must see it
        raise
    except Exception:  # malformed date strings raise inside pypdf
        created = None
    return title or None, _pdf_date(created)
