"""``--search auto``: the web search engines, and the specialised providers the question's
field calls for.

The question's words decide, not a model. Each field has a vocabulary, stemmed as the
rest of sleuth stems words (:func:`sleuth.terms.terms_of`), of single words and
phrases; a field is called for when the question holds two of its entries, or one
*marked* entry (a word or phrase that names the field on its own: "PubMed",
"machine learning", "CRISPR", "GitHub"). Common words such as "model", "network" or
"cloud" are in no list: a news question about a product or a market calls for nothing.

* biomedical → ``pubmed``;
* machine learning and computing research → ``arxiv`` and ``semanticscholar``;
* code and software → ``github`` (and ``github-code`` when ``GITHUB_TOKEN`` is set);
* encyclopaedic → ``wikipedia``: a short "what is / who was" question, or one asking for
  a history, an origin, a definition or a biography, unless it asks what is new.

In ``--search``, ``auto`` stands for the web search engines listed with it (DuckDuckGo
when none is) and then the providers routing adds (:func:`expand`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache

import httpx

from sleuth.errors import ProviderError
from sleuth.models import SearchHit
from sleuth.search.base import SearchProvider, get_provider, register
from sleuth.terms import terms_of

__all__ = ["AUTO", "FIELDS", "AutoSearch", "Field", "Route", "expand", "route"]

#: The name that stands for the web search engines plus the providers routing adds.
AUTO = "auto"
#: The web search engine ``auto`` uses when no other is listed.
DEFAULT_WEB = "duckduckgo"


@dataclass(frozen=True)
class Field:
    """A field of questions and the providers that search it."""

    name: str
    providers: tuple[str, ...]
    #: Words and phrases that name the field on their own (one is enough).
    marked: tuple[str, ...]
    #: Words and phrases of the field (two are needed).
    words: tuple[str, ...]


@dataclass(frozen=True)
class Route:
    """A field the question calls for, its providers, and the entries that matched."""

    field: str
    providers: tuple[str, ...]
    matched: tuple[str, ...]


def _list(text: str) -> tuple[str, ...]:
    """The entries of a vocabulary written as one string (a phrase's words joined by "-")."""
    return tuple(text.split())


FIELDS = (
    Field(
        "biomedical",
        ("pubmed",),
        marked=_list(
            "pubmed medline clinical-trial randomized-controlled-trial meta-analysis crispr "
            "mrna covid covid-19 sars-cov-2 alzheimer's parkinson's dementia cancer tumor "
            "tumour chemotherapy immunotherapy antibiotic vaccine placebo pharmacokinetics "
            "epidemiology pathogen diabetes hypertension insulin stem-cell side-effect"
        ),
        words=_list(
            "disease patient clinical therapy treatment drug dose dosage symptom syndrome "
            "disorder chronic inflammation inflammatory immune antibody gene genetic genome "
            "genomic protein enzyme cell mutation receptor virus viral bacteria bacterial "
            "infection infectious blood cholesterol obesity metabolic metabolism microbiome "
            "mortality prevalence diagnosis diagnostic prognosis biomarker surgery surgical "
            "brain neuron cognitive depression anxiety schizophrenia autism asthma allergy "
            "pregnancy prenatal pediatric medical medicine health nutrition vitamin "
            "supplement efficacy adverse trial randomized cohort tissue organ cardiovascular "
            "heart stroke kidney liver lung hormone dna rna"
        ),
    ),
    Field(
        "machine learning",
        ("arxiv", "semanticscholar"),
        marked=_list(
            "arxiv semantic-scholar machine-learning deep-learning neural-network "
            "reinforcement-learning language-model llm transformer bert gpt convolutional "
            "backpropagation gradient-descent fine-tuning pretraining pre-training "
            "diffusion-model computer-vision natural-language-processing nlp "
            "retrieval-augmented attention-mechanism self-supervised few-shot zero-shot "
            "overfitting hyperparameter federated-learning question-answering "
            "information-retrieval object-detection speech-recognition machine-translation"
        ),
        words=_list(
            "training dataset benchmark inference classification classifier regression "
            "clustering embedding supervised unsupervised algorithm optimization optimizer "
            "accuracy retrieval dense token tokenizer attention encoder decoder generative "
            "prompt prompting gradient layer architecture parameter quantization distillation "
            "adversarial multimodal summarization recommender segmentation perceptron"
        ),
    ),
    Field(
        "code",
        ("github", "github-code"),
        marked=_list(
            "github gitlab open-source source-code repository stack-trace npm pypi "
            "javascript typescript golang kotlin haskell"
        ),
        words=_list(
            "library framework package module api sdk code coding programming compile "
            "compiler runtime function bug debug debugging exception error install "
            "installation cli command-line implementation implement parser parsing regex "
            "json yaml database sql sqlite postgres postgresql docker kubernetes linux git "
            "python rust java ruby php swift react django flask fastapi numpy pandas pytorch "
            "tensorflow async asyncio thread concurrency script plugin dependency http "
            "unit-test deploy deployment"
        ),
    ),
)

#: The encyclopaedic field: Wikipedia.
ENCYCLOPAEDIC = Field("encyclopaedic", ("wikipedia",), marked=("wikipedia",), words=())
_DEFINING = re.compile(r"^\s*(?:who|what)\s+(?:is|was|are|were)\b", re.IGNORECASE)
_DEFINING_WORDS = 8
_REFERENCE = re.compile(
    r"\b(?:history|origins?|definition|meaning|etymology|biography) of\b|\bbiography\b|"
    r"\b(?:capital|population) of\b|\bknown for\b|\bnamed after\b|"
    r"^\s*(?:who|when|where)\b.*\b(?:born|died|founded|invented|discovered|built|"
    r"established|written|wrote|located)\b",
    re.IGNORECASE,
)
_NEWS = re.compile(
    r"\b(?:recent|recently|latest|news|today|currently|upcoming|this (?:week|month|year))\b",
    re.IGNORECASE,
)


@cache
def _entries(field: Field) -> tuple[tuple[tuple[str, ...], str, int], ...]:
    """Each vocabulary entry as its stems, its words and its weight (marked: 2)."""
    out = []
    for weight, entries in ((2, field.marked), (1, field.words)):
        for entry in entries:
            stems = tuple(terms_of(entry.replace("-", " ")))
            if stems:
                out.append((stems, entry.replace("-", " "), weight))
    return tuple(out)


def _holds(stems: Sequence[str], run: tuple[str, ...]) -> bool:
    """Whether ``run`` occurs in ``stems`` as consecutive items."""
    size = len(run)
    return any(tuple(stems[i : i + size]) == run for i in range(len(stems) - size + 1))


def _matches(field: Field, stems: Sequence[str]) -> tuple[tuple[str, ...], int]:
    """The entries of ``field`` the question holds, and their weight."""
    found = [(words, weight) for run, words, weight in _entries(field) if _holds(stems, run)]
    return tuple(words for words, _ in found), sum(weight for _, weight in found)


def _encyclopaedic(question: str) -> bool:
    """A definition, a biography, a history or an origin, not news."""
    if _NEWS.search(question):
        return False
    short = _DEFINING.match(question) and len(question.split()) <= _DEFINING_WORDS
    return bool(short or _REFERENCE.search(question))


def route(question: str) -> list[Route]:
    """The fields ``question`` calls for, in :data:`FIELDS` order, Wikipedia last."""
    stems = terms_of(question)
    routes = []
    for field in FIELDS:
        matched, weight = _matches(field, stems)
        if weight >= 2:
            routes.append(Route(field.name, field.providers, matched))
    wiki, weight = _matches(ENCYCLOPAEDIC, stems)
    if weight or _encyclopaedic(question):
        routes.append(Route(ENCYCLOPAEDIC.name, ENCYCLOPAEDIC.providers, wiki))
    return routes


def _usable(name: str, env: Mapping[str, str]) -> bool:
    """Whether provider ``name`` has the keys it needs (routing never adds one that fails)."""
    return all(env.get(key) for key in get_provider(name).env_keys)


def expand(names: Sequence[str], question: str | None, env: Mapping[str, str]) -> list[str]:
    """``names`` (``--search``) with ``auto`` replaced: the web search engines listed
    (DuckDuckGo when none is), then each provider ``question`` calls for that is not
    listed yet and has its keys. Names without ``auto`` come back as they are."""
    if AUTO not in names:
        return list(names)
    listed = [n for n in dict.fromkeys(names) if n != AUTO]
    web = [n for n in listed if not searched_alongside_name(n)]
    out = listed if web else [DEFAULT_WEB, *listed]
    for found in route(question or ""):
        out += [n for n in found.providers if n not in out and _usable(n, env)]
    return out


def searched_alongside_name(name: str) -> bool:
    """Whether the provider registered as ``name`` is searched alongside the web ones
    (an unknown name is not: building the providers reports it)."""
    try:
        return get_provider(name).alongside
    except ProviderError:
        return False


@register
class AutoSearch(SearchProvider):
    """The name ``auto`` in the registry. :func:`sleuth.search.build_providers` replaces
    it (see :func:`expand`); used directly, it searches the default web search engine."""

    name = AUTO
    # The keys of the providers routing may add (a batch's workers are given them).
    optional_env_keys = ("NCBI_API_KEY", "SEMANTIC_SCHOLAR_API_KEY", "GITHUB_TOKEN")

    def __init__(
        self, settings: object, client: httpx.AsyncClient, env: Mapping[str, str] | None = None
    ) -> None:
        super().__init__(settings, client, env)
        self.web = get_provider(DEFAULT_WEB)(settings, client, env)

    async def search(self, query: str, *, limit: int) -> list[SearchHit]:
        """The default web search engine's hits."""
        return await self.web.search(query, limit=limit)
