"""Fit the block model (needs numpy and scikit-learn; see train_extractor.py).

Cross-validates by site over the tune split to pick the one cutoff (for pages that
say they are articles; the others get their own, see ``best_keep``) and to
report an honest tune score, then fits on all of it and writes the trees as JSON package data,
with the versions it was trained with (``trained_with``).

scikit-learn's ``HistGradientBoostingClassifier`` has no public API for its trees
(scikit-learn issue 29731: ``_predictors`` and ``_baseline_prediction`` are private, and
so is the node layout). ``_hgb_trees`` is the one place that reads them, and
``check_export`` proves every export through the public API instead: the written
file, walked by sleuth's own ``predict``, must give ``predict_proba``'s probabilities on
every training block, so a scikit-learn that lays its trees out otherwise stops the
training instead of shipping a wrong model. The version the shipped model was trained
with is pinned in pyproject.toml's ``bench`` extra.
"""

from __future__ import annotations

import json
import platform
import re
import statistics
import zlib
from collections import Counter, defaultdict
from importlib import metadata
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import numpy as np

_WORD = re.compile(r"\w+")
PARAMS: dict[str, Any] = {
    "max_iter": 150,
    "max_leaf_nodes": 16,
    "learning_rate": 0.12,
    "min_samples_leaf": 40,
    "l2_regularization": 1.0,
    "random_state": 0,
}
TYPES = ("article", "documentation", "service", "forum", "collection", "listing", "product")


def _bag_f1(pred: Counter[str], ref: Counter[str]) -> float:
    if not ref:
        return 1.0 if not pred else 0.0
    if not pred:
        return 0.0
    overlap = sum((pred & ref).values())
    p, r = overlap / sum(pred.values()), overlap / sum(ref.values())
    return 2 * p * r / (p + r) if p + r else 0.0


def load(path: Path) -> list[dict[str, Any]]:
    pages = []
    with path.open() as handle:
        for line in handle:
            page = json.loads(line)
            n = len(page["texts"])
            page["X"] = np.array(page["X"], dtype=float).reshape(n, -1) if n else np.zeros((0, 1))
            page["y"] = np.array(page["y"])
            page["bags"] = [Counter(_WORD.findall(t.lower())) for t in page["texts"]]
            page["ref"] = Counter(_WORD.findall(page["truth"].lower()))
            page["site"] = (urlsplit(page["url"] or "").hostname or page["id"]).removeprefix("www.")
            pages.append(page)
    return pages


def _stack(
    pages: list[dict[str, Any]], key: str = "X"
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    X = np.vstack([p[key] for p in pages if len(p["texts"])])
    y = np.concatenate([p["y"] for p in pages if len(p["texts"])]) >= 0.5
    words = np.concatenate([[sum(b.values()) for b in p["bags"]] for p in pages if len(p["texts"])])
    totals = np.concatenate(
        [
            [max(1, sum(sum(b.values()) for b in p["bags"]))] * len(p["texts"])
            for p in pages
            if len(p["texts"])
        ]
    )
    # Each page weighs about the same (the benchmark macro-averages over pages);
    # within a page, a block weighs its words.
    weight = words / totals + 1e-3
    return X, y, weight


def page_f1(page: dict[str, Any], keep: np.ndarray) -> float:
    pred: Counter[str] = Counter()
    for bag, kept in zip(page["bags"], keep, strict=True):
        if kept:
            pred.update(bag)
    return _bag_f1(pred, page["ref"])


def _cross_validate(pages: list[dict[str, Any]], key: str, folds: int) -> dict[str, np.ndarray]:
    """Out-of-fold probabilities for every page (folds by site)."""
    from sklearn.ensemble import HistGradientBoostingClassifier

    sites = sorted({p["site"] for p in pages}, key=lambda s: zlib.crc32(s.encode()))
    fold_of = {s: i % folds for i, s in enumerate(sites)}
    probs: dict[str, np.ndarray] = {}
    for k in range(folds):
        X, y, w = _stack([p for p in pages if fold_of[p["site"]] != k], key)
        model = HistGradientBoostingClassifier(**PARAMS).fit(X, y, sample_weight=w)
        for p in pages:
            if fold_of[p["site"]] == k:
                probs[p["id"]] = (
                    model.predict_proba(p[key])[:, 1] if len(p["texts"]) else np.zeros(0)
                )
    return probs


def fit(data: Path, out: Path, folds: int = 3, trained_on: str | None = None) -> None:
    """Cross-validate (folds by site) to pick the cutoff, then fit on the whole tune split."""
    from sklearn.ensemble import HistGradientBoostingClassifier

    from sleuth.extraction.model import _declares_article, model_keeps

    pages = load(data)
    probs = _cross_validate(pages, "X", folds)
    # The one cutoff serves only the pages that say they are articles: chosen on those.
    articles = [p for p in pages if len(p["texts"]) and _declares_article(p["X"])]
    best = max(
        (statistics.fmean(page_f1(p, probs[p["id"]] >= c) for p in articles), c)
        for c in np.arange(0.2, 0.75, 0.05)
    )
    cutoff = float(round(best[1], 2))
    by_type = defaultdict(list)
    for p in pages:
        by_type[p["kind"]].append(page_f1(p, model_keeps(probs[p["id"]], p["X"], cutoff)))
    overall = statistics.fmean(f for scores in by_type.values() for f in scores)
    print(
        f"cross-validated tune F1 {overall:.3f}; cutoff {cutoff} "
        f"({best[0]:.3f} on the {len(articles)} pages that say they are articles)"
    )
    print("  " + "  ".join(f"{k} {statistics.fmean(by_type[k]):.3f}" for k in TYPES))
    np.save(data.with_name("cvprobs.npy"), np.array([probs], dtype=object), allow_pickle=True)
    X, y, w = _stack(pages)
    model = HistGradientBoostingClassifier(**PARAMS).fit(X, y, sample_weight=w)
    plain, Z = _fit_plain(pages)
    write_model({"BLOCKS": model, "PLAIN": plain}, cutoff, out, trained_on)
    check_export(model, out, X)
    check_export(plain, out, Z, "plain")


def _fit_plain(pages: list[dict[str, Any]]) -> tuple[Any, np.ndarray]:
    """The ``plain`` ensemble, for pages extracted without trafilatura (those that do
    not say they are articles): trained on every tune page with trafilatura's columns
    at 0, as such a page has them. Returns it and its training matrix."""
    from sklearn.ensemble import HistGradientBoostingClassifier

    from sleuth.extraction.blocks import TRAFILATURA_COLUMNS

    for page in pages:
        page["Z"] = page["X"].copy()
        if len(page["texts"]):
            page["Z"][:, list(TRAFILATURA_COLUMNS)] = 0.0
    Z, y, w = _stack(pages, "Z")
    return HistGradientBoostingClassifier(**PARAMS).fit(Z, y, sample_weight=w), Z


def fit_plain(data: Path, out: Path) -> None:
    """Train the ``plain`` ensemble alone and put it into the model file ``out``, whose
    other ensemble stays as it is."""
    plain, Z = _fit_plain(load(data))
    doc = json.loads(out.read_text(encoding="utf-8"))
    doc["plain"] = {"features": int(plain.n_features_in_), **_flatten(plain)}
    out.write_text(_json_lines(doc) + "\n")
    print(f"wrote the plain ensemble into {out}")
    check_export(plain, out, Z, "plain")


def check_export(
    model: Any, out: Path, X: np.ndarray, key: str = "blocks", tolerance: float = 1e-4
) -> None:
    """Raise unless the written model gives scikit-learn's own probabilities on ``X``.

    Leaf values are written to 5 significant digits, so the two differ by ~1e-6; a
    wrong child, feature or threshold moves some blocks by far more than ``tolerance``.
    """
    from sleuth.extraction.model import _trees, predict

    written = _trees(json.loads(out.read_text(encoding="utf-8"))[key])
    ours = predict(written, X)
    theirs = model.predict_proba(X)[:, 1]
    worst = float(np.max(np.abs(ours - theirs), initial=0.0))
    if worst > tolerance:
        raise RuntimeError(
            f"{out}: the exported trees give probabilities up to {worst:.3g} away from "
            f"scikit-learn {_version('scikit-learn')}'s on the training blocks; its tree "
            "layout is not the one _hgb_trees reads (pyproject.toml's bench extra pins the "
            "version the trainer was written for)"
        )
    print(
        f"checked: the written {key} trees match predict_proba to {worst:.1g} on {len(X):,} blocks"
    )


def _version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def _hgb_trees(model: Any) -> tuple[list[Any], float]:
    """Each tree's node array, and the baseline log-odds, of a fitted binary HGB model.

    The only reads of scikit-learn's private attributes (it has no public tree API for
    HistGradientBoosting*); ``check_export`` verifies what is made of them.
    """
    trees = [tree.nodes for (tree,) in model._predictors]
    return trees, float(np.ravel(model._baseline_prediction)[0])


def _flatten(model: Any) -> dict[str, Any]:
    """One ensemble as flat lists, keyed as ``sleuth.extraction.model._trees`` reads them.

    Node i tests X[feature[i]] <= threshold[i]; feature[i] < 0 marks a leaf.
    """
    feature: list[int] = []
    threshold: list[float] = []
    left: list[int] = []
    right: list[int] = []
    value: list[float] = []
    roots: list[int] = []
    depth = 0
    trees, baseline = _hgb_trees(model)
    for nodes in trees:
        base = len(feature)
        roots.append(base)
        for node in nodes:
            leaf = bool(node["is_leaf"])
            feature.append(-1 if leaf else int(node["feature_idx"]))
            # Thresholds exactly: on counts and shares a threshold is often a value blocks
            # have (log1p(3)), and a rounded one sends those blocks down the other branch.
            threshold.append(0.0 if leaf else float(node["num_threshold"]))
            left.append(base + int(node["left"]) if not leaf else base)
            right.append(base + int(node["right"]) if not leaf else base)
            value.append(float(f"{node['value']:.5g}") if leaf else 0.0)
            depth = max(depth, int(node["depth"]))
    return {
        "baseline": baseline,
        "depth": depth + 1,
        "roots": roots,
        "feature": feature,
        "threshold": threshold,
        "left": left,
        "right": right,
        "value": value,
    }


def write_model(
    models: dict[str, Any], cutoff: float, out: Path, trained_on: str | None = None
) -> None:
    """The ensembles as JSON package data (``sleuth/data/block_model.json``).

    One key per line, each array on its line, so a retrained model diffs by array.
    """
    doc: dict[str, Any] = {
        "about": "Trained trees for the block model in sleuth/extraction/model.py "
        "(generated by bench/train_extractor.py; do not edit), from the tune split "
        "of WCXB v1.0 (Web Content eXtraction Benchmark, Murrough Foley, CC BY 4.0, "
        'github.com/Murrough-Foley/web-content-extraction-benchmark). "blocks" '
        'reads trafilatura\'s text; "plain" is for pages extracted without it '
        "(its columns 0).",
        "cutoff": cutoff,
        # What made this file, so that a retraining can be compared with it.
        "trained_with": {
            "python": platform.python_version(),
            "numpy": _version("numpy"),
            "scikit-learn": _version("scikit-learn"),
            "params": PARAMS,
            "data": trained_on,
        },
    }
    for name, model in models.items():
        doc[name.lower()] = {"features": int(model.n_features_in_), **_flatten(model)}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(_json_lines(doc) + "\n")
    print(f"wrote {out}")


def _json_lines(value: Any, indent: str = "") -> str:
    """JSON with each object key on its own line and arrays kept on one line."""
    if not isinstance(value, dict):
        return json.dumps(value, separators=(",", ":"))
    inner = indent + "  "
    items = [f"{inner}{json.dumps(k)}: {_json_lines(v, inner)}" for k, v in value.items()]
    return "{\n" + ",\n".join(items) + f"\n{indent}}}"
