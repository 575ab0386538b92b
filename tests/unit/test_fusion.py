"""Fusion of the two engines' results, pure."""

from __future__ import annotations

from project_history_recall.fusion import EVIDENCE_WEIGHT, backed, blend, rrf
from project_history_recall.hits import KEYWORD, SEMANTIC, Hit


def kw(pairs: list[tuple[int, float]]) -> list[Hit]:
    """Keyword hits (message id, score), each in its own session s<id>."""
    return [Hit(mid, f"s{mid}", score, KEYWORD, 100.0 + mid) for mid, score in pairs]


def sem(ids: list[int]) -> list[Hit]:
    return [Hit(mid, f"s{mid}", 0.5, SEMANTIC, 100.0 + mid) for mid in ids]


def test_blend_adds_similarity_to_the_keyword_share_of_the_question():
    fused = blend(kw([(1, 0.9), (2, 0.5)]), sem([3, 2]), {1: 0.1, 2: 0.9, 3: 0.5}, weight=0.7)
    scores = {f.message_id: round(f.score, 3) for f in fused}
    assert scores == {1: 0.97, 2: 1.13, 3: 0.35}
    assert [f.message_id for f in fused] == [2, 1, 3]
    assert {f.message_id: f.source for f in fused} == {1: "keyword", 2: "both", 3: "semantic"}


def test_a_weak_keyword_match_does_not_bury_a_close_semantic_hit():
    # The best keyword hit holds a tenth of the question: it is not scaled up to "sure".
    fused = blend(kw([(1, 0.1)]), sem([2]), {1: 0.05, 2: 0.6}, weight=0.7)
    assert [f.message_id for f in fused] == [2, 1]


def test_a_semantic_hit_that_also_holds_some_words_is_credited_for_them():
    similarity = {1: 0.2, 2: 0.4, 3: 0.45}
    assert [f.message_id for f in blend(kw([(1, 0.5)]), sem([2, 3]), similarity, weight=0.7)] == [1, 3, 2]
    fused = blend(kw([(1, 0.5)]), sem([2, 3]), similarity, weight=0.7, keyword_more=kw([(2, 0.3)]))
    assert [f.message_id for f in fused] == [1, 2, 3]
    assert {f.message_id: f.source for f in fused} == {1: "keyword", 2: "both", 3: "semantic"}


def test_blend_with_no_keyword_hits_ranks_by_similarity():
    fused = blend([], sem([5, 6]), {5: 0.2, 6: 0.4}, weight=0.7)
    assert [f.message_id for f in fused] == [6, 5] and all(f.source == "semantic" for f in fused)


def test_each_model_weighs_its_cosine_by_how_far_its_ranking_is_trusted():
    from project_history_recall.semantic.embedders import OFFLINE

    # zh-daily in one project: half the question's words are in someone else's session (1),
    # the asked-about one says it in other words (2). e5's cosines (mapped from its crowded
    # scale) part them by 0.17; USE's ranking is trusted less, so the words keep the lead.
    candidates = (kw([(1, 0.45)]), sem([2, 1]), {1: 0.45, 2: 0.62})
    e5, use = OFFLINE["e5-small"].fusion_weight, OFFLINE["local"].fusion_weight
    assert [f.message_id for f in blend(*candidates, weight=e5)] == [2, 1]
    assert [f.message_id for f in blend(*candidates, weight=use)] == [1, 2]


def test_a_session_with_further_evidence_outranks_one_that_matches_once():
    # Two sessions' best messages equally close; s2 says it again elsewhere (its evidence).
    candidates = ([], sem([1, 2]), {1: 0.5, 2: 0.5})
    assert [f.message_id for f in blend(*candidates, weight=1.0)] == [2, 1]  # a tie: the newer first
    fused = blend(*candidates, weight=1.0, evidence={"s1": 0.05})
    assert [f.message_id for f in fused] == [1, 2]
    assert {f.message_id: round(f.score, 3) for f in fused} == {1: round(0.5 + EVIDENCE_WEIGHT * 0.05, 3), 2: 0.5}
    # It adds to the cosine, so the model's weight scales it too; no evidence, no change.
    assert blend(*candidates, weight=3.0, evidence={"s1": 0.05})[0].score == 3.0 * (0.5 + EVIDENCE_WEIGHT * 0.05)
    assert [f.score for f in blend(*candidates, weight=1.0, evidence={})] == [0.5, 0.5]


def test_rrf_votes_by_rank():
    fused = rrf({KEYWORD: kw([(1, 0.9), (2, 0.8)]), SEMANTIC: sem([2, 3])}, k=3, weights={SEMANTIC: 0.5})
    assert [f.message_id for f in fused] == [2, 1, 3] and fused[0].source == "both"


def test_fused_hits_keep_their_session_and_time():
    for fused in (rrf({KEYWORD: kw([(1, 0.9)]), SEMANTIC: sem([1, 2])}, k=3),
                  blend(kw([(1, 0.9)]), sem([1, 2]), {1: 0.3, 2: 0.4}, weight=0.7)):
        assert {(f.message_id, f.session_id, f.timestamp) for f in fused} == {(1, "s1", 101.0), (2, "s2", 102.0)}


def test_the_semantic_side_backs_the_messages_standing_out_of_the_questions_background():
    similarity = {1: 0.55, 2: 0.35, 3: 0.2}
    assert backed(similarity, (0.2, 0.1)) == {1}  # above 0.2 + 2 × 0.1
    assert backed(similarity, (0.2, 0.1), z=1.0) == {1, 2}
