"""Benchmarks: ``python -m bench speed`` and ``python -m bench locomo``.

Each prints the machine, the data and its figures; ``--json FILE`` also
writes them. These are measurements, not tests: nothing here asserts a bar.
"""

from __future__ import annotations

import argparse
import json
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
    speed.add_argument("--json", type=Path, help="also write the figures here")

    locomo = sub.add_parser("locomo", help="retrieval quality on LoCoMo vs core session_search")
    locomo.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "bench-data"
                        / "locomo10.json")
    locomo.add_argument("--home", type=Path, help="Hermes home to build into (default: a temp dir)")
    locomo.add_argument("--modes", default="keyword", help="comma-separated plugin modes to score")
    locomo.add_argument("--json", type=Path, help="also write the figures here")

    args = parser.parse_args(argv)
    if args.command == "speed":
        from . import speed as mod
        from .synth import SynthSpec

        figures = mod.run(args.home, SynthSpec(args.messages, args.sessions, args.projects), args.queries)
    else:
        from . import locomo as mod

        home = args.home or Path(tempfile.mkdtemp(prefix="phr-locomo-")) / "home"
        figures = mod.run(args.data, home, [m.strip() for m in args.modes.split(",") if m.strip()])
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
