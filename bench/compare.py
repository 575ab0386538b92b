"""Two systems' answers to the same questions, side by side: ``python -m bench compare FILE``.

A bench run with ``--questions FILE`` logs every system's answer to every question (``locomo.QuestionLog``);
a cell of its tables moves by a handful of them. This lists the questions where the second system ranks
the gold session lower than the first, then those where it ranks it higher, each with both places, and
counts them at each cutoff the tables print, so "hybrid is two questions below keyword at hit@1" reads
as which two, and which questions the other way.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Collection
from pathlib import Path


CUTOFFS = (1, 5, 10)
# LoCoMo's adversarial questions, which no table counts.
UNSCORED = frozenset({5})


def paired(rows: list[dict], first: str, second: str) -> list[tuple[dict, dict]]:
    """(the first system's answer, the second's) to each question both answered, in the log's order.
    A question asked twice in one place (LoCoMo repeats a few) pairs its answers in their order."""
    answers: dict[tuple, dict[str, list[dict]]] = defaultdict(lambda: defaultdict(list))
    for row in rows:
        answers[(row["where"], row["question"], str(row["category"]))][row["system"]].append(row)
    # A question only one system answered (a log of one system, or cut short) pairs with nothing.
    return [pair for by_system in answers.values()
            for pair in zip(by_system[first], by_system[second], strict=False)]


def _place(rank: int | None) -> str:
    return ">10" if rank is None else str(rank)


def _worse(a: int | None, b: int | None) -> bool:
    """Whether place ``b`` is below place ``a`` (None: not in the ten)."""
    return (b is None and a is not None) or (a is not None and b is not None and b > a)


def run(path: Path, systems: tuple[str, str] = ("plugin:keyword", "plugin:hybrid"),
        where: Collection[str] = (), categories: Collection[str] = ()) -> dict:
    """Print the questions of ``path`` (a ``--questions`` log) the two ``systems`` rank differently,
    among those asked in ``where`` (every place when empty) of ``categories`` (every scored one when
    empty); returns them, and by how many questions each cutoff moves."""
    first, second = systems
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    pairs = [(a, b) for a, b in paired(rows, first, second)
             if (not where or a["where"] in where)
             and (str(a["category"]) in categories if categories else a["category"] not in UNSCORED)]
    below = [(a, b) for a, b in pairs if _worse(a["rank"], b["rank"])]
    above = [(a, b) for a, b in pairs if _worse(b["rank"], a["rank"])]
    moved = {}
    for k in CUTOFFS:
        lost = sum(1 for a, b in below if a["rank"] is not None and a["rank"] <= k and (b["rank"] is None or b["rank"] > k))
        won = sum(1 for a, b in above if b["rank"] is not None and b["rank"] <= k and (a["rank"] is None or a["rank"] > k))
        moved[f"hit@{k}"] = {"lost": lost, "gained": won}
    print(f"{len(pairs)} questions answered by both {first} and {second}")
    for title, group in ((f"{second} ranks the gold lower", below), (f"{second} ranks the gold higher", above)):
        print(f"\n{title} ({len(group)}): place in {first} -> in {second}, where, category, question, "
              f"each one's first session")
        for a, b in group:
            firsts = " / ".join(r["sessions"][0] if r["sessions"] else "-" for r in (a, b))
            print(f"  {_place(a['rank'])} -> {_place(b['rank'])}  {a['where']}  {a['category']}  {a['question'].strip()}"
                  f"  [{firsts}; gold {', '.join(a['gold'])}]")
    print(f"\n{second} against {first}, questions: " + "; ".join(
        f"{cut} -{m['lost']} +{m['gained']}" for cut, m in moved.items()))
    return {"questions": len(pairs), "lower": [(a["question"], a["rank"], b["rank"]) for a, b in below],
            "higher": [(a["question"], a["rank"], b["rank"]) for a, b in above], "moved": moved}

