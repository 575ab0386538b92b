"""Benchmarks: ``python -m bench speed``, ``locomo``, ``locomo-zh``, ``zh-daily`` (``en-daily``), ``longhist``, ``semantic``,
``firstrun``, ``load`` and ``huge``; ``compare`` reads two systems' answers out of a ``--questions`` log.

Each prints the machine, the data and its figures; ``--json FILE`` also
writes them. These are measurements, not tests: nothing here asserts a bar.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    speed = sub.add_parser("speed", help="keyword latency at 1M messages vs core session search")
    speed.add_argument("--home", type=Path, default=Path(tempfile.gettempdir()) / "phr-bench-1m" / "home",
                       help="synthetic Hermes home (built on first use)")
    speed.add_argument("--messages", type=int, default=1_000_000)
    speed.add_argument("--sessions", type=int, default=20_000)
    speed.add_argument("--projects", type=int, default=200)
    speed.add_argument("--queries", type=int, default=200, help="queries per class")
    speed.add_argument("--hybrid", type=int, default=0, metavar="P",
                       help="also embed the projects of the first P askers (the embedded model does ~200 chunks/s "
                            "on one core: 10-20 projects take minutes) and time hybrid against keyword search over "
                            "their queries, warm")
    speed.add_argument("--responses", type=Path, metavar="FILE",
                       help="with --hybrid: write the timed tool responses to FILE, or, if it exists, check "
                            "that they are byte-identical to those another version of the code wrote there")
    speed.add_argument("--json", type=Path, help="also write the figures here")

    data = Path(os.environ.get("PHR_BENCH_DATA") or Path(__file__).resolve().parents[1] / "bench-data")
    locomo = sub.add_parser("locomo", help="retrieval quality on LoCoMo vs core session_search")
    locomo.add_argument("--data", type=Path, default=data / "locomo10.json",
                        help="a LoCoMo file (default: $PHR_BENCH_DATA/locomo10.json, else bench-data/ in the checkout)")
    locomo.add_argument("--home", type=Path, help="Hermes home to build into (default: a temp dir)")
    locomo.add_argument("--modes", default="keyword,semantic,hybrid", help="comma-separated plugin modes to score")
    locomo.add_argument("--json", type=Path, help="also write the figures here")
    locomo.add_argument("--conversations", help="comma-separated positions in the file (0-based), e.g. 0,2,4,6,8")

    zh = sub.add_parser("locomo-zh", help="LoCoMo-zh: Chinese questions and their English originals side by side")
    zh.add_argument("--data", type=Path, default=data / "locomo-zh",
                    help="the folder holding medium_locomo_zh.json and medium_locomo.json")
    zh.add_argument("--root", type=Path, help="folder for the two homes (default: a temp dir)")
    zh.add_argument("--modes", default="keyword,semantic,hybrid")
    zh.add_argument("--json", type=Path, help="also write the figures here")
    zh.add_argument("--conversations", help="comma-separated positions in each file (0-based), e.g. 0")
    daily = sub.add_parser("zh-daily", aliases=["en-daily"],
                           help="zh-daily: short Chinese daily-life sessions, questions that paraphrase; en-daily: "
                                "one English user's focused chats with long answers")
    daily.add_argument("--data", type=Path, action="append",
                       help="the set (default: bench/data/zh_daily.json, or en_daily.json as en-daily, in the "
                            "checkout); given again, each set is added: one home, ids kept apart, figures also per set")
    daily.add_argument("--answer-words", type=int, metavar="N",
                       help="words of filler after each assistant reply (0: as written; default: as the set says)")
    daily.add_argument("--home", type=Path, help="Hermes home to build into (default: a temp dir)")
    daily.add_argument("--modes", default="keyword,semantic,hybrid", help="comma-separated plugin modes to score")
    daily.add_argument("--split", choices=("tune", "held-out", "all"), default="all",
                       help="which questions to ask (all: each split is printed too)")
    daily.add_argument("--one-project", action="store_true",
                       help="everyone's sessions in one project: each question searches every person's sessions")
    daily.add_argument("--distractors", type=int, default=0, metavar="N",
                       help="add N sessions of 2-4 turns cut from --distractor-data's conversations, answering none "
                            "of the questions (with --one-project: all into the one project)")
    daily.add_argument("--distractor-data", type=Path, metavar="FILE",
                       help="a LoCoMo-format file (default: locomo-zh/medium_locomo_zh.json for zh-daily, "
                            "locomo10.json for en-daily, in $PHR_BENCH_DATA, else bench-data/ in the checkout)")
    daily.add_argument("--json", type=Path, help="also write the figures here")
    longhist = sub.add_parser("longhist", help="long histories built from LoCoMo: 50 sessions a project, long "
                                               "assistant answers, distractor sessions of other conversations")
    longhist.add_argument("--data", type=Path, default=data / "locomo10.json", help="a LoCoMo file")
    longhist.add_argument("--home", type=Path, help="Hermes home to build into (default: a temp dir)")
    longhist.add_argument("--modes", default="keyword,semantic,hybrid", help="comma-separated plugin modes to score")
    longhist.add_argument("--conversations", help="comma-separated positions in the file (0-based), e.g. 0,2,4,6,8")
    longhist.add_argument("--words", type=int, default=300, help="words in each assistant answer, about")
    longhist.add_argument("--turns", type=int, default=4, help="LoCoMo turns in each user message")
    longhist.add_argument("--sessions", type=int, default=50, help="sessions a project, distractors included")
    longhist.add_argument("--names", choices=("shared", "distinct"), default="shared",
                          help="shared: distractors' speakers renamed to the asked conversation's (the default); "
                               "distinct: distractors only from conversations with other names, kept")
    longhist.add_argument("--focus", action="store_true",
                          help="every session's answers carry the key words of its evidence turns (sessions "
                               "written around their facts)")
    longhist.add_argument("--even", action="store_true",
                          help="distractors are whole sessions, as long as the asked conversation's, not windows")
    longhist.add_argument("--about", action="store_true",
                          help="every session's answers restate the key words of the questions its turns answer "
                               "(sessions about what is asked of them)")
    longhist.add_argument("--content", action="store_true",
                          help="no function word (a standard English stop list) is a key word an answer restates")
    longhist.add_argument("--json", type=Path, help="also write the figures here")
    for p in (locomo, daily, longhist):
        p.add_argument("--questions", type=Path, metavar="FILE",
                       help="also write every system's answer to every question here, one JSON line each (which "
                            "questions make a cell, and what each system ranked)")
    zh.add_argument("--questions", type=Path, metavar="DIR",
                    help="also write every system's answer to every question into DIR, one JSON line each, a file "
                         "for each language (medium_locomo_zh.jsonl, medium_locomo.jsonl)")
    for p in (locomo, zh, daily, longhist):
        p.add_argument("--embedder", choices=("local", "e5-small", "local+e5"), default="local",
                       help="the offline model of the semantic half (default: local, USE)")
        p.add_argument("--context-weights", default="",
                       help="also score the semantic modes with these neighbour weights, comma-separated")
    for p in (locomo, zh):
        p.add_argument("--merge", type=int, default=1,
                       help="write each run of this many consecutive turns of a session as one message (long messages)")
        p.add_argument("--time-weights", default="",
                       help="also score the plugin modes with these time_weight settings, comma-separated (0: off)")

    compare = sub.add_parser("compare", help="the questions two systems rank differently, from a --questions log")
    compare.add_argument("log", type=Path, help="a file written by --questions (locomo, longhist, zh-daily, en-daily)")
    compare.add_argument("--systems", default="plugin:keyword,plugin:hybrid",
                         help="the two systems, comma-separated: the questions the second ranks lower, then higher")
    compare.add_argument("--where", default="",
                         help="only the questions asked in these conversations or of these people, comma-separated "
                              "(e.g. a half: conv-26,conv-41,conv-43,conv-47,conv-49)")
    compare.add_argument("--categories", default="",
                         help="only these categories (or splits), comma-separated (default: every one the tables count)")
    compare.add_argument("--json", type=Path, help="also write the lists here")
    first = sub.add_parser("firstrun", help="first-run indexing cost of one project, per offline model and threads")
    first.add_argument("--scratch", type=Path, default=Path(tempfile.gettempdir()) / "phr-bench-firstrun")
    first.add_argument("--messages", type=int, default=10_000, help="messages in the project")
    first.add_argument("--embedders", default="local,e5-small", help="comma-separated: local, e5-small, local+e5")
    first.add_argument("--threads", default="1", help="comma-separated thread counts to measure each model with")
    first.add_argument("--json", type=Path, help="also write the figures here")
    one = sub.add_parser("_firstrun")  # internal: one model and thread count in a fresh process
    one.add_argument("home", type=Path)
    one.add_argument("embedder")
    one.add_argument("threads", type=int)

    sem = sub.add_parser("semantic", help="semantic indexing throughput, no-op check at 1M, hybrid latency/RSS at 100k")
    sem.add_argument("--home-1m", type=Path, default=Path(tempfile.gettempdir()) / "phr-bench-1m" / "home",
                     help="the synthetic 1M-message home (read only: it is copied)")
    sem.add_argument("--scratch", type=Path, default=Path(tempfile.gettempdir()) / "phr-bench-semantic")
    sem.add_argument("--no-1m", action="store_true", help="leave out the no-op check on the 1M-message home")
    sem.add_argument("--messages-100k", type=int, default=150_000,
                     help="messages in the one-project home (~75%% are user/assistant, one chunk each)")
    sem.add_argument("--messages-10k", type=int, default=10_000, help="messages in the small one-project home")
    sem.add_argument("--delay", type=float, default=1.0, help="seconds from session start to the first search")
    sem.add_argument("--runs", type=int, default=5, help="fresh processes (trials) per home for the first call")
    sem.add_argument("--repeats", type=int, default=50)
    sem.add_argument("--queries", type=int, default=100)
    sem.add_argument("--json", type=Path, help="also write the figures here")
    load = sub.add_parser("load", help="search latency and Hermes's writer throughput while both run at once")
    load.add_argument("--seconds", type=float, default=60)
    load.add_argument("--searchers", type=lambda v: [int(n) for n in v.split(",")], default=[1, 8],
                      help="comma-separated: one run per count of threads searching at once (default 1,8)")
    load.add_argument("--rate", type=float, default=150, help="messages a second the writer aims for")
    load.add_argument("--sessions", type=int, default=30, help="sessions in the project before the load starts")
    load.add_argument("--json", type=Path, help="also write the figures here")
    huge = sub.add_parser("huge", help="keyword search latency with and without one huge message in the project")
    huge.add_argument("--sessions", type=int, default=200)
    huge.add_argument("--mb", type=float, default=20, help="size of the huge message")
    huge.add_argument("--repeats", type=int, default=30)
    huge.add_argument("--json", type=Path, help="also write the figures here")
    serve = sub.add_parser("_serve")  # internal: the fresh process of `semantic`
    serve.add_argument("home", type=Path)
    serve.add_argument("caller")
    serve.add_argument("queries", type=int)
    first = sub.add_parser("_first")  # internal: one fresh process's first search
    first.add_argument("home", type=Path)
    first.add_argument("caller")
    first.add_argument("delay", type=float)

    args = parser.parse_args(argv)
    weights = [float(w) for w in getattr(args, "context_weights", "").split(",") if w.strip()]
    time_weights = [float(w) for w in getattr(args, "time_weights", "").split(",") if w.strip()]
    if args.command in ("firstrun", "_firstrun"):
        from . import firstrun as mod

        if args.command == "_firstrun":
            print(json.dumps(mod.measure(args.home, args.embedder, args.threads)))
            return 0
        figures = mod.run(args.scratch, args.messages, [e.strip() for e in args.embedders.split(",") if e.strip()],
                          [int(t) for t in args.threads.split(",") if t.strip()])
        if args.json:
            args.json.write_text(json.dumps(figures, indent=2, ensure_ascii=False))
        return 0
    if args.command == "_serve":
        from . import semantic as mod

        print(json.dumps(mod.serve(args.home, args.caller, args.queries)))
        return 0
    if args.command == "_first":
        from . import semantic as mod

        print(json.dumps(mod.first_call(args.home, args.caller, args.delay)))
        return 0
    if args.command == "compare":
        from . import compare as mod

        systems = [s.strip() for s in args.systems.split(",") if s.strip()]
        if len(systems) != 2:
            parser.error("--systems takes two systems")
        figures = mod.run(args.log, (systems[0], systems[1]), {w.strip() for w in args.where.split(",") if w.strip()},
                          {c.strip() for c in args.categories.split(",") if c.strip()})
        if args.json:
            args.json.write_text(json.dumps(figures, indent=2, ensure_ascii=False))
        return 0
    if args.command == "load":
        from . import load as mod

        figures = mod.run(args.seconds, args.searchers, args.rate, args.sessions)
        if args.json:
            args.json.write_text(json.dumps(figures, indent=2, ensure_ascii=False))
        return 0
    if args.command == "huge":
        from . import huge as mod

        figures = mod.run(args.sessions, args.mb, args.repeats)
        if args.json:
            args.json.write_text(json.dumps(figures, indent=2, ensure_ascii=False))
        return 0
    if args.command == "semantic":
        from . import semantic as mod

        figures = mod.run(None if args.no_1m else args.home_1m, args.scratch, args.messages_100k, args.messages_10k,
                          args.repeats, args.queries, args.delay, args.runs)
        if args.json:
            args.json.write_text(json.dumps(figures, indent=2, ensure_ascii=False))
        return 0
    if args.command == "locomo-zh":
        from . import locomo as mod

        root = args.root or Path(tempfile.mkdtemp(prefix="phr-locomo-zh-"))
        figures = mod.side_by_side([args.data / "medium_locomo_zh.json", args.data / "medium_locomo.json"], root,
                                   [m.strip() for m in args.modes.split(",") if m.strip()], args.embedder, weights,
                                   args.conversations, time_weights, args.merge, args.questions)
        if args.json:
            args.json.write_text(json.dumps(figures, indent=2, ensure_ascii=False))
        return 0
    if args.command in ("zh-daily", "en-daily"):
        from . import zh_daily as mod
        from .zh_data import EN_PATH, PATH

        if args.answer_words is not None and args.answer_words < 0:
            parser.error("--answer-words must be 0 or more")
        if args.distractors < 0:
            parser.error("--distractors must be 0 or more")
        distractor_data = args.distractor_data or (
            data / "locomo-zh" / "medium_locomo_zh.json" if args.command == "zh-daily" else data / "locomo10.json")
        home = args.home or Path(tempfile.mkdtemp(prefix=f"phr-{args.command}-")) / "home"
        figures = mod.run(args.data or [PATH if args.command == "zh-daily" else EN_PATH], home,
                          [m.strip() for m in args.modes.split(",") if m.strip()],
                          args.split, args.embedder, weights, args.one_project, args.answer_words,
                          args.distractors, distractor_data, args.questions)
        if args.json:
            args.json.write_text(json.dumps(figures, indent=2, ensure_ascii=False))
        return 0
    if args.command == "longhist":
        from . import longhist as mod

        try:
            mod.check(args.words, args.turns, args.sessions, mod.EXCHANGES, args.names)
        except ValueError as e:
            parser.error(str(e))
        home = args.home or Path(tempfile.mkdtemp(prefix="phr-longhist-")) / "home"
        picked = [int(c) for c in args.conversations.split(",") if c.strip()] if args.conversations else None
        figures = mod.run(args.data, home, [m.strip() for m in args.modes.split(",") if m.strip()], args.embedder,
                          args.words, args.turns, args.sessions, args.names, picked, weights, args.focus,
                          args.questions, args.even, args.about, args.content)
        if args.json:
            args.json.write_text(json.dumps(figures, indent=2, ensure_ascii=False))
        return 0
    if args.command == "speed":
        from . import speed as mod
        from .synth import SynthSpec

        figures = mod.run(args.home, SynthSpec(args.messages, args.sessions, args.projects), args.queries,
                          args.hybrid, args.responses)
    else:
        from . import locomo as mod

        home = args.home or Path(tempfile.mkdtemp(prefix="phr-locomo-")) / "home"
        picked = [int(c) for c in args.conversations.split(",") if c.strip()] if args.conversations else None
        figures = mod.run(args.data, home, [m.strip() for m in args.modes.split(",") if m.strip()], args.embedder,
                          weights, picked, time_weights, args.merge, questions_log=args.questions)
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
