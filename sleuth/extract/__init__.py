"""Extraction: bytes in, readable text out. Pure functions, no I/O but the worker pool.

    from sleuth.extract import extract
    doc = extract(html, url="https://example.com/post")   # Extracted(text, title, date)

:mod:`~sleuth.extract.decode` (charsets, binary sniffing), :mod:`~sleuth.extract.html`
(hidden text, trafilatura, the block model's choice: :mod:`~sleuth.extract.blocks` cuts
the page into blocks and describes them, :mod:`~sleuth.extract.model` scores them),
:mod:`~sleuth.extract.pdf`, :mod:`~sleuth.extract.content` (a downloaded body by its
kind), :mod:`~sleuth.extract.text` (the :class:`Extracted` record and its tidy-up).
:mod:`~sleuth.extract.workers` runs extraction in worker processes, each page bounded
in time and memory.

``sleuth.extract`` as an attribute of the ``sleuth`` package is the function
:func:`extract`; import this package's modules by name (``from sleuth.extract import
html``).
"""

from sleuth.extract.decode import decode_body, looks_binary
from sleuth.extract.html import extract
from sleuth.extract.pdf import pdf_text
from sleuth.extract.text import Extracted, ExtractError, normalize_text, truncate_text

__all__ = ["ExtractError", "Extracted", "decode_body", "extract", "looks_binary",
           "normalize_text", "pdf_text", "truncate_text"]
