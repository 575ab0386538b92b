"""Both offline models at once (``embedder: local+e5``): USE and multilingual-e5-small.

Each text's vector is USE's unit vector and e5's side by side, each scaled
(``mix``) so that the cosine of two such vectors, mapped by the pair's own
``cosine_baseline`` as matrix.py maps every model's, is a weighted mean of
the two models' mapped cosines. The pair is searched, stored and fused like
any one model; it costs both models' embedding (e5's, mostly).

An option, not the default: it indexes as slowly as e5. Measured against each model alone
(docs/benchmarks.md, "Both offline models at once"), it ranks best on LoCoMo in hybrid and semantic
mode and on the Chinese sets searched in one project in hybrid, but below e5 on zh-daily.
"""

from __future__ import annotations

from pathlib import Path

from .base import normalise
from .e5 import MultilingualE5Small
from .local import EmbeddedModel, UniversalSentenceEncoder

PARTS = (UniversalSentenceEncoder, MultilingualE5Small)


def mix(shares: tuple[float, ...], baselines: tuple[float, ...]) -> tuple[tuple[float, ...], float]:
    """(the scale of each model's unit vector, the pair's cosine baseline B) for which the pair's
    mapped cosine is ``sum(share_i × mapped_i)``, ``shares`` summing to 1.

    Model i's cosine c_i is mapped to (c_i - b_i) / (1 - b_i) (matrix.py). Scaled by a_i and put
    side by side, two texts' vectors have the dot product C = sum(a_i² c_i) and, when
    sum(a_i²) = 1, unit length, so C is their cosine. Asking (C - B) / (1 - B) to equal
    sum(share_i (c_i - b_i) / (1 - b_i)) for every c_i gives, term by term,
    a_i² = (1 - B) share_i / (1 - b_i), and sum(a_i²) = 1 fixes
    1 / (1 - B) = sum(share_i / (1 - b_i)); the constant terms then agree as well (both sides are
    0 when every c_i is its b_i). So B is the cosine unrelated texts have in both models at once,
    and a crowded model (e5, b = 0.75) gets the larger raw part: its cosines move less."""
    stretch = sum(s / (1.0 - b) for s, b in zip(shares, baselines, strict=True))
    scales = tuple((s / (1.0 - b) / stretch) ** 0.5 for s, b in zip(shares, baselines, strict=True))
    return scales, 1.0 - 1.0 / stretch


class UseAndE5(EmbeddedModel):
    """USE and e5-small side by side; loading, install hint and CPU check are each part's own."""

    model = "use-multilingual-v3+multilingual-e5-small-q4"
    dimension = sum(part.dimension for part in PARTS)
    # USE's share of the pair's mapped cosine, and e5's. Tried on the tune halves of LoCoMo,
    # LoCoMo-zh (both languages), zh-daily, zh-sms in one project and the three Chinese sets in one
    # project with distractors, against each model alone (docs/benchmarks.md, "Both offline models
    # at once"): equal shares (hybrid weight 2 or 3) lost the Chinese sets to e5 more than e5's
    # larger share did; hybrid weight 4 (each model its own weight, 1 and 3) ranked no better than 3.
    shares = (0.25, 0.75)
    scales, cosine_baseline = mix(shares, tuple(part.cosine_baseline for part in PARTS))
    # Between USE's 1 and e5's 0: the neighbours' USE half lifts LoCoMo, their e5 half costs the
    # Chinese daily sets; 0.5 kept most of both (hybrid, tune halves) where 0 lost LoCoMo and 1
    # the combined Chinese set.
    context_weight = 0.5
    fusion_weight = 3.0
    # Each chunk is embedded by both: the rates add as times.
    reference_chunks_per_second = 1.0 / sum(1.0 / part.reference_chunks_per_second for part in PARTS)

    @classmethod
    def fingerprint_for(cls, chunk_chars: int, chunk_overlap: int, before: int | None = None) -> str:
        # Both models' own fingerprints (package versions, sizes, preprocessing, each as the pair
        # embeds: with the pair's ``context_before``) and the shares, which change the vectors too.
        before = cls.context_before if before is None else before
        parts = " + ".join(part.fingerprint_for(chunk_chars, chunk_overlap, before) for part in PARTS)
        return f"{cls.provider}/{cls.model}/shares{'-'.join(f'{s:g}' for s in cls.shares)}/d{cls.dimension}/({parts})"

    def __init__(self, chunk_chars: int, chunk_overlap: int, threads: int | None = None,
                 saved_in: Path | None = None):
        self.parts = [part(chunk_chars, chunk_overlap, threads, saved_in) for part in PARTS]
        self.fingerprint = self.fingerprint_for(chunk_chars, chunk_overlap)
        self.saved_in = saved_in

    def _encode(self, texts: list[str], query: bool):
        import numpy as np

        return np.hstack([normalise(np.asarray(part._encode(texts, query), dtype=np.float32)) * np.float32(scale)
                          for part, scale in zip(self.parts, self.scales, strict=True)])
