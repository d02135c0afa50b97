"""Deep research: a tree of questions researched with the quick research's stages.

:mod:`~sleuth.pipeline.deep.run` runs one (``sleuth deep``, ``mode="deep"``):
:mod:`~sleuth.pipeline.deep.explore` explores the tree, dealing each level's pages with
:mod:`~sleuth.pipeline.deep.deal`, into the record of :mod:`~sleuth.pipeline.deep.tree`;
:mod:`~sleuth.pipeline.deep.sift` judges its sources together; and
:mod:`~sleuth.pipeline.deep.report` writes the long report.
"""

from __future__ import annotations

from sleuth.pipeline.deep.deal import assign, spread
from sleuth.pipeline.deep.run import deep_research
from sleuth.pipeline.deep.tree import Branch, Tree

__all__ = ["Branch", "Tree", "assign", "deep_research", "spread"]
