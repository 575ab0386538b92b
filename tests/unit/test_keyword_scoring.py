"""The keyword side's term counts, BM25 scores and ranking (``keyword.scoring``), pure."""

from __future__ import annotations

import numpy as np
import pytest

from project_history_recall.hits import KEYWORD, Hit
from project_history_recall.keyword import textindex
from project_history_recall.keyword.answerkind import AMOUNT, ANSWER_CHARS
from project_history_recall.keyword.engine import filled
from project_history_recall.keyword.scoring import (ANSWER_CREDIT, LENGTH_B, LENGTH_K1, NEAR_CREDIT, NEAR_WORDS, REPEAT_CREDIT,
                                                    SPREAD_CONCEPTS, SPREAD_FLOOR, SPREAD_MESSAGES, SPREAD_RATIO, TF_MAX_CHARS,
                                                    TF_READ_CHARS, Concept, Facts, bm25_scores, nearness, occurrences, rank,
                                                    spread, term_counts, to_read)


@pytest.mark.parametrize("text, needle, whole_word, count", [
    ("art, start art; party (art)", "art", True, 3),  # not inside "start" or "party"
    ("art, start art; party (art)", "art", False, 5),
    ("art", "art", True, 1),
    ("new york, new-york and new york", "new york", True, 2),
    ("我喜欢画画，画画很好", "画画", False, 2),
    ("画画画画", "画画", False, 2),  # counted without overlap
    ("nothing here", "art", True, 0),
])
def test_occurrences_count_whole_words_or_substrings(text, needle, whole_word, count):
    assert occurrences(text, needle, whole_word) == count


def _concept(weight: float, credit: list[float], needle: str | None = None, whole_word: bool = True) -> Concept:
    return Concept(weight, np.array(credit), needle, whole_word)


def test_term_counts_read_normalised_text_and_count_a_repeat_as_part_of_the_first():
    concepts = [_concept(1.0, [1, 1, 1], "api"), _concept(1.0, [1, 1, 1], "画画", whole_word=False),
                _concept(1.0, [1, 1, 1])]
    counts = term_counts(concepts, [None if t is None else textindex.normalise(t)
                                    for t in ["ＡＰＩ, API and api: 画画画画", "painted it", None]])
    assert counts == pytest.approx(np.array([
        [1 + 2 * REPEAT_CREDIT, 1, 1],  # compatibility forms and case folded; none found still counts once
        [1 + REPEAT_CREDIT, 1, 1],
        [1, 1, 1]]))  # a concept without a needle, a text not read: once


def test_nearness_is_the_share_of_neighbouring_question_words_said_close_together():
    # "charity run volunteers": charity-run and run-volunteers are the pairs; 1, 2 and 1 of 4 weight.
    concepts = [_concept(1.0, [1] * 6, "charity"), _concept(2.0, [1] * 6, "run"),
                _concept(1.0, [1] * 6, "volunteers"), _concept(0.0, [1] * 6, "画画", whole_word=False)]
    far = " ".join(["word"] * NEAR_WORDS)
    near = nearness(concepts, [None if t is None else textindex.normalise(t) for t in [
        "I ran a CHARITY run with the volunteers",  # both pairs, case folded
        f"a charity {far} run",  # NEAR_WORDS + 1 words apart: too far
        "the run was for charity",  # either order
        "volunteering at a charity",  # a word beginning with the stem of "volunteers", but no pair
        "runs and charity",  # "run" (four letters or fewer) only as itself
        "a rerun for charity",  # nor inside another word
        "charities: a run",  # a word beginning with all but the last three letters of "charity"
        None,  # not read
    ]])
    assert near == pytest.approx([0.5, 0, 0.25, 0, 0, 0, 0.25, 0])


def test_nearness_finds_a_word_whose_beginning_is_a_stop_word_only_as_itself():
    """"likely" by "like*" paired the name with every "it sounds like" (LoCoMo-zh English, "What fields would
    Caroline be likely to pursue"); "theme" by "them*" and "thank" by "than*" found those words everywhere."""
    caroline, likely, theme = _concept(1.0, [1], "caroline"), _concept(1.0, [1], "likely"), _concept(1.0, [1], "theme")
    texts = ["caroline, it sounds like fun", "caroline is likely to", "caroline likes it"]
    assert nearness([caroline, likely], texts).tolist() == [0, pytest.approx(0.5), 0]
    assert nearness([caroline, theme], ["caroline told them", "caroline's themes"]).tolist() == [0, 0]
    assert nearness([caroline, theme], ["caroline's theme"]).tolist() == [pytest.approx(0.5)]


def test_nearness_pairs_whole_words_next_to_each_other_among_the_concepts():
    art, painting, melanie, caroline = (_concept(1.0, [1], "art"), _concept(1.0, [1], "画画", whole_word=False),
                                        _concept(1.0, [1], "melanie"), _concept(1.0, [1], "caroline"))
    assert nearness([art, painting], ["art 画画"]).tolist() == [0]
    # "Melanie怎么看Caroline决定领养": 看 between the names parts them; "Caroline和Melanie" (和 a stop word) does not.
    assert nearness([melanie, painting, caroline], ["melanie and caroline"]).tolist() == [0]
    assert nearness([caroline, melanie], ["melanie and caroline"]).tolist() == [pytest.approx(0.5)]
    phrase = _concept(1.0, [1], "new york")
    assert nearness([phrase, art], ["new york art"]).tolist() == [0]  # a phrase is no word


def test_nearness_leaves_chinese_neighbours_unpaired():
    """Two Chinese words of the question said together earn nothing (measured and not kept: a message that
    says the question's compound, 领养机构, mostly is not the answer, which says 收养机构)."""
    adopt, agency = _concept(1.0, [1, 1], "领养", whole_word=False), _concept(1.0, [1, 1], "机构", whole_word=False)
    caroline = _concept(1.0, [1, 1], "caroline")
    assert nearness([adopt, agency], ["我申请了领养机构", "领养 机构"]).tolist() == [0, 0]
    assert nearness([caroline, adopt], ["caroline领养了", None]).tolist() == [0, 0]


def test_a_message_that_says_the_words_together_outranks_one_that_says_them_apart():
    concepts = [_concept(1.0, [1, 1], "charity"), _concept(1.0, [1, 1], "run")]
    backend = _OneMessageSessions(2)
    far = " ".join(["word"] * NEAR_WORDS)
    backend.texts = lambda ids: {100: "a charity run", 101: f"a charity {far} and a run"}
    hits = rank(concepts, np.arange(2), 2, backend, 2)
    assert [h.message_id for h in hits] == [100, 101]  # the newer one would win a tie
    assert hits[0].score - hits[1].score == pytest.approx(NEAR_CREDIT * 0.5)


def test_with_every_count_one_the_score_is_the_share_normalised_by_length():
    concepts = [_concept(3.0, [1, 0, 0.5]), _concept(1.0, [1, 1, 0])]
    lengths = np.array([10.0, 20.0, 40.0])
    share = np.array([1.0, 0.25, 0.375])
    norm = (LENGTH_K1 + 1) / (1 + LENGTH_K1 * (1 - LENGTH_B + LENGTH_B * lengths / 20.0))
    assert bm25_scores(concepts, np.ones((2, 3)), lengths, 20.0) == pytest.approx(share * norm)


def test_saying_a_word_again_scores_more_but_saturates_below_k1_plus_one():
    concepts = [_concept(1.0, [1, 1, 1, 1])]
    counts = np.array([[1.0, 2.0, 3.0, 1000.0]])
    scores = bm25_scores(concepts, counts, np.full(4, 30.0), 30.0)
    assert scores[0] < scores[1] < scores[2] < scores[3] < LENGTH_K1 + 1
    assert scores[2] - scores[1] < scores[1] - scores[0]  # each further time adds less


def test_a_longer_message_with_the_same_counts_scores_less():
    concepts = [_concept(1.0, [1, 1])]
    scores = bm25_scores(concepts, np.array([[3.0, 3.0]]), np.array([20.0, 80.0]), 50.0)
    assert scores[0] > scores[1]


def test_a_count_adds_nothing_where_the_message_holds_none_of_the_concept():
    concepts = [_concept(1.0, [0, 1])]
    scores = bm25_scores(concepts, np.array([[7.0, 1.0]]), np.full(2, 10.0), 10.0)
    assert scores[0] == 0 and scores[1] > 0


def test_no_concepts_score_nothing():
    assert bm25_scores([], np.ones((0, 3)), np.full(3, 5.0), 5.0).tolist() == [0, 0, 0]


def test_the_best_candidates_are_read_while_the_budget_lasts_and_a_huge_one_never():
    lengths = np.array([100.0, TF_MAX_CHARS + 1.0, 50.0, 200.0])
    assert to_read(lengths).tolist() == [True, False, True, True]  # the huge one is skipped, not the budget spent
    many = np.full(TF_READ_CHARS // TF_MAX_CHARS + 2, float(TF_MAX_CHARS))
    read = to_read(many)
    assert read[:TF_READ_CHARS // TF_MAX_CHARS].all() and not read[TF_READ_CHARS // TF_MAX_CHARS:].any()


class _OneMessageSessions:
    """A keyword backend over sessions of one message each: key i is session i, message 100 + i,
    written at 1000 + i, all of the same length."""

    def __init__(self, sessions: int):
        self.names = [f"s{i}" for i in range(sessions)]

    def sessions_of(self, keys):
        return np.asarray(keys)

    def facts(self, keys):
        keys = np.asarray(keys)
        return Facts(100 + keys, np.full(len(keys), 3.0), 1000.0 + keys)

    def live(self, message_ids):
        return set(message_ids)

    def texts(self, message_ids):
        return {}

    def session_sizes(self, sessions):
        return np.ones(len(sessions))

    def outdated(self, keys, message_ids, lengths, texts):
        return set()


def test_sessions_that_hold_the_same_tie_to_the_last_bit_and_the_newest_comes_first():
    """Many sessions hold the same part of every concept, a few hold less; the same ones must
    score the same to the last bit, so their tie goes to the newest. A session's coverage summed
    as a BLAS matrix product differed in its last bit by the session's place in the batch (seen
    on an Intel Xeon's OpenBLAS in about one such search in 200), and that set the order."""
    rng = np.random.default_rng(1)
    for _ in range(400):
        same, fewer, n_concepts = int(rng.integers(3, 40)), int(rng.integers(1, 10)), int(rng.integers(2, 6))
        held = rng.random(n_concepts)
        concepts = []
        for c in range(n_concepts):
            credit = np.full(same + fewer, held[c])
            credit[same:] = held[c] / 2 if c == 0 else 0.0  # the others hold only a little of the first
            concepts.append(_concept(float(rng.random() + 0.5), list(credit)))
        hits = rank(concepts, np.arange(same + fewer), same + fewer + 30, _OneMessageSessions(same + fewer), same)
        assert [h.message_id for h in hits] == list(range(100 + same - 1, 99, -1))


def test_a_piece_the_scope_never_says_takes_no_share_of_a_concept_from_the_others_but_a_character_does():
    from project_history_recall.keyword.engine import PIECE_CREDIT, _concepts
    from project_history_recall.keyword.scoring import inverse_frequency
    from project_history_recall.keyword.querytext import Term

    keys = np.array([1, 2])
    # 优先照顾 is never said whole, nor its bigram across the cut (先照): 优先 and 照顾 are the whole of what can be.
    word, first, across, second = (Term("cjk", "优先照顾"), Term("cjk", "优先", partial=True),
                                   Term("cjk", "先照", partial=True), Term("cjk", "照顾", partial=True))
    found = {word: keys[:0], first: np.array([1]), across: keys[:0], second: np.array([1, 2])}
    [compound] = _concepts({0: [word, first, across, second]}, found, keys, 100)
    assert compound.credit[0] == pytest.approx(PIECE_CREDIT)
    assert compound.credit[1] == pytest.approx(PIECE_CREDIT * inverse_frequency(100, 2) / (inverse_frequency(100, 1) + inverse_frequency(100, 2)))
    # The characters of an unseen 负面: 面 alone, said where 负 is not, keeps its part of the half only.
    word, neg, face = Term("cjk", "负面"), Term("cjk", "负", partial=True), Term("cjk", "面", partial=True)
    [unseen] = _concepts({0: [word, neg, face]}, {word: keys[:0], neg: keys[:0], face: keys}, keys, 100)
    assert unseen.credit[0] == pytest.approx(PIECE_CREDIT * inverse_frequency(100, 2) / (inverse_frequency(100, 0) + inverse_frequency(100, 2)))


def test_a_character_of_a_word_the_scope_says_counts_only_in_a_message_the_semantic_side_backs():
    from project_history_recall.keyword.engine import Ranking, _concepts
    from project_history_recall.keyword.querytext import Term

    # 海滩 of the question is said in message 104; 照片 in 100, 101 and 102, of which 101 and 102
    # also say 海 (海边); 103 says 海 and nothing else of the question, so it is no candidate.
    beach, sea, photo = (Term("cjk", "海滩", concept=0), Term("character", "海", partial=True, concept=0),
                         Term("cjk", "照片", concept=1))
    keys = np.array([0, 1, 2, 4])
    found = {beach: np.array([4]), photo: np.array([0, 1, 2])}
    concepts = _concepts({0: [beach, sea], 1: [photo]}, found, keys, 100)
    backend = _OneMessageSessions(5)
    backend.texts = lambda ids: {m: {101: "去海边拍了照片", 102: "海鲜和照片", 103: "海"}.get(m, "照片")
                                 for m in ids}
    counted = []
    backend.character_count = lambda term: counted.append(term) or {sea: 4}.get(term, 0)
    ranking = Ranking(concepts, keys, 5, backend, 100)
    assert ranking.gated()
    # A character no backed message says is not even counted.
    assert ranking.backed({100, 104}) is None and counted == []

    plain = {h.message_id: h.score for h in ranking.hits(10)}
    assert plain[100] == plain[101] == plain[102]
    backed = ranking.backed({101, 103})
    assert backed is not None
    lifted = {h.message_id: h.score for h in backed.hits(10)}
    assert lifted[101] > lifted[100] == lifted[102]
    assert set(lifted) == {100, 101, 102, 104}  # a character alone lifts nothing, backed or not
    assert counted == [sea]
    assert ranking.backed({100, 103}) is None  # no backed candidate says 海
    # A character the scope's index never says (a message changed since it was indexed) earns nothing.
    backend.character_count = lambda term: 0
    assert Ranking(concepts, keys, 5, backend, 100).backed({101, 102}) is None


def test_a_one_character_word_inside_another_word_earns_the_glued_credit_unless_the_message_is_near():
    from project_history_recall.keyword.engine import Ranking, _concepts
    from project_history_recall.keyword.querytext import Term

    # 开 ("open") of the question: 店开了 says it as a word, 很开心 ("happy") and 开业了 ("opened for
    # business") inside other words.
    open_ = Term("cjk", "开")
    keys = np.array([0, 1, 2])
    [concept] = _concepts({0: [open_]}, {open_: keys}, keys, 100)
    assert concept.single
    backend = _OneMessageSessions(3)
    backend.texts = lambda ids: {m: {100: "店开了", 101: "很开心", 102: "开业了"}[m] for m in ids}
    ranking = Ranking([concept], keys, 3, backend)

    plain = {h.message_id: h.score for h in ranking.hits(10)}
    assert plain[100] > plain[101] == plain[102] > 0

    near = ranking.backed(set(), near={102})
    assert near is not None and not near.gated()
    scores = {h.message_id: h.score for h in near.hits(10)}
    assert scores[100] == scores[102] > scores[101]
    assert ranking.backed(set()) is None  # nothing near: the ranking as it was


def test_a_message_that_says_the_number_a_question_asks_for_earns_part_of_a_share():
    concepts = [_concept(1.0, [1, 1, 1], "牙套", whole_word=False), _concept(1.0, [1, 1, 1], "钱", whole_word=False)]
    backend = _OneMessageSessions(3)
    backend.texts = lambda ids: {100: "牙套钱两千五", 101: "牙套钱多少", 102: "牙套钱两个月才付"}
    hits = rank(concepts, np.arange(3), 3, backend, 3, asks=AMOUNT)
    assert [h.message_id for h in hits] == [100, 102, 101]  # a length of time is no price: 102 wins a tie as the newer
    assert hits[0].score - hits[1].score == pytest.approx(ANSWER_CREDIT / 3)
    plain = rank(concepts, np.arange(3), 3, backend, 3)
    assert [h.message_id for h in plain] == [102, 101, 100]  # without the question word, ties go to the newer


def test_a_ranking_tells_which_messages_say_the_answer_asked_for_reading_only_those_it_has_not():
    from project_history_recall.keyword.engine import Ranking

    concepts = [_concept(1.0, [1, 1], "牙套", whole_word=False)]
    backend = _OneMessageSessions(2)
    said = {100: "牙套两千五", 101: "牙套多少钱", 7: "两千", 8: "二" * (ANSWER_CHARS + 1)}
    read: list[list[int]] = []
    backend.texts = lambda ids: read.append(sorted(ids)) or {m: said[m] for m in ids if m in said}
    ranking = Ranking(concepts, np.arange(2), 2, backend, asks=AMOUNT)
    ranking.hits(2)
    assert read == [[100, 101]]
    answered = ranking.answered([101, 100, 7, 8, 9])
    assert answered == {101: False, 100: True, 7: True, 8: None, 9: None}  # 8 too long, 9 gone: not read
    assert read == [[100, 101], [7, 8, 9]]  # a candidate's text is read once
    assert Ranking(concepts, np.arange(2), 2, backend).answered([100]) == {}  # the question asks for none


def test_a_ranking_gives_the_texts_read_for_an_answer_reading_only_those_it_has_not():
    from project_history_recall.keyword.engine import Ranking

    concepts = [_concept(1.0, [1, 1], "首保", whole_word=False)]
    backend = _OneMessageSessions(2)
    said = {100: "首保要做啥", 101: "首保做完了", 7: "等了两个小时", 8: "保" * (ANSWER_CHARS + 1)}
    read: list[list[int]] = []
    backend.texts = lambda ids: read.append(sorted(ids)) or {m: said[m] for m in ids if m in said}
    ranking = Ranking(concepts, np.arange(2), 2, backend)  # asks for no number or time: texts all the same
    ranking.hits(2)
    assert ranking.readable_texts([101, 7, 8, 9]) == {101: "首保做完了", 7: "等了两个小时"}  # 8 too long, 9 gone
    assert read == [[100, 101], [7, 8, 9]]


def test_filled_appends_other_sessions_below_every_hit_in_their_order():
    hits = [Hit(1, "a", 2.0, KEYWORD, 0.0), Hit(2, "b", 0.5, KEYWORD, 0.0)]
    others = [Hit(3, "b", 9.0, KEYWORD, 0.0), Hit(4, "c", 6.0, KEYWORD, 0.0), Hit(5, "d", 3.0, KEYWORD, 0.0),
              Hit(6, "c", 1.0, KEYWORD, 0.0)]
    out = filled(hits, others)
    assert [(h.message_id, h.session_id) for h in out] == [(1, "a"), (2, "b"), (4, "c"), (5, "d"), (6, "c")]
    assert out[2].score == pytest.approx(0.25) and out[3].score == pytest.approx(0.125)
    assert all(a.score >= b.score for a, b in zip(out, out[1:], strict=False))
    assert filled(hits, others[:1]) == hits
    assert [h.message_id for h in filled([], others)] == [3, 4, 5, 6]


def test_a_session_is_about_the_question_where_half_its_messages_hold_two_of_its_concepts():
    assert (SPREAD_FLOOR, SPREAD_CONCEPTS, SPREAD_MESSAGES, SPREAD_RATIO) == (0.5, 2, 3, 2.0)
    # Candidates of five sessions; sizes: how many messages each session holds.
    session_at = np.array([0, 0, 0, 0, 1, 1, 2, 3, 3, 3, 4, 4])
    trip = _concept(1.0, [1, 1, 1, 0, 1, 0, 1, 1, 1, 1, 1, 1])
    kyoto = _concept(3.0, [1, 1, 1, 1, 0, 1, 0, 0, 0, 1, 1, 1])
    sizes = np.array([5, 10, 4, 0, 2])
    got = spread([trip, kyoto], np.stack([trip.credit, kyoto.credit]), session_at, sizes)
    # Session 0 says "trip" in 3 of its 5 messages and "Kyoto" in 4, where the median candidate
    # session says them in 0.25 and 0.1 of its messages (of 0.6, 0.1, 0.25, 0, 1 and 0.8, 0.1, 0, 0,
    # 1; session 3's size is not known, so it holds nothing): 0.35 and 0.7 above, weighted 1:3.
    assert got[0] == pytest.approx(0.35 * 1 / 4 + 0.7 * 3 / 4)
    # Session 1 says each in one of its ten messages: a many-topic session earns nothing.
    # Session 2 says "trip" in one of its four messages and never "Kyoto".
    # Session 3's size is unknown: never counted as about anything.
    # Session 4 says both in both its messages: half of a short session is met by chance, so a
    # concept must be said in three messages or more.
    assert got[1] == got[2] == got[3] == got[4] == 0


def test_no_session_is_about_the_question_where_every_session_says_its_words_alike():
    # Three sessions of four messages each; the words are said in half to three quarters of the
    # messages of every session, so none stands at twice the typical share: what sets a session
    # apart by chance among alike ones earns nothing.
    session_at = np.repeat(np.arange(3), 4)
    kilo = _concept(1.0, [1, 1, 1, 0, 1, 1, 0, 0, 1, 1, 0, 0])
    lima = _concept(1.0, [1, 1, 1, 0, 1, 1, 1, 0, 1, 1, 0, 0])
    got = spread([kilo, lima], np.stack([kilo.credit, lima.credit]), session_at, np.array([4, 4, 4]))
    assert got.tolist() == [0, 0, 0]


def test_a_ranking_names_the_sessions_about_the_question():
    from project_history_recall.keyword.engine import Ranking

    # The candidates of test_a_session_is_about_the_question_where_half_its_messages_hold_two_of_its_concepts,
    # of five named sessions: only the first is about the question.
    session_at = np.array([0, 0, 0, 0, 1, 1, 2, 3, 3, 3, 4, 4])
    trip = _concept(1.0, [1, 1, 1, 0, 1, 0, 1, 1, 1, 1, 1, 1])
    kyoto = _concept(3.0, [1, 1, 1, 1, 0, 1, 0, 0, 0, 1, 1, 1])
    backend = _OneMessageSessions(5)
    backend.sessions_of = lambda keys: session_at[np.asarray(keys)]
    backend.session_sizes = lambda sessions: np.array([5, 10, 4, 0, 2], dtype=np.float64)[np.asarray(sessions)]
    keys = np.arange(len(session_at))
    assert Ranking([trip, kyoto], keys, 5, backend).about() == {"s0"}
    assert Ranking([trip], keys, 5, backend).about() == set()  # one concept said all through is not enough
    assert Ranking([], keys, 5, backend).about() == set()
    assert Ranking([trip, kyoto], keys[:0], 5, backend).about() == set()


def test_a_ranking_names_the_sessions_about_the_question_from_what_it_ranked_them_by():
    from project_history_recall.keyword.engine import Ranking

    session_at = np.array([0, 0, 0, 0, 1, 1, 2, 3, 3, 3, 4, 4])
    trip = _concept(1.0, [1, 1, 1, 0, 1, 0, 1, 1, 1, 1, 1, 1])
    kyoto = _concept(3.0, [1, 1, 1, 1, 0, 1, 0, 0, 0, 1, 1, 1])
    backend = _OneMessageSessions(5)
    asked = []
    backend.sessions_of = lambda keys: asked.append("sessions_of") or session_at[np.asarray(keys)]
    backend.session_sizes = lambda sessions: asked.append("session_sizes") or np.array(
        [5, 10, 4, 0, 2], dtype=np.float64)[np.asarray(sessions)]
    ranking = Ranking([trip, kyoto], np.arange(len(session_at)), 5, backend)
    ranking.hits(3)
    ranked_by = list(asked)
    assert ranking.about() == {"s0"}
    assert asked == ranked_by == ["sessions_of", "session_sizes"]  # the sessions rank() grouped, not again
