"""numpy's BLAS thread pool, which is the whole process's, as the plugin's products use it.

USE's package caps it around each of its calls (e5 runs in its own C engine, apart from it); the pairwise
likeness of a search's hits (``matrix.ScopeMatrix.likeness``) is capped here. Uncapped, a product
of ~70 rows of 512 (Chinese questions that ask how something turned out, at 1M messages) woke
OpenBLAS's second thread, which then spun on the other core for ~20 ms after each such search, into
the searches that followed: on a busy 2-core machine those questions' hybrid p95 was 17-46 ms
higher, and their keyword p95 up to 24 ms (docs/benchmarks.md, "Hybrid's margin at 1M messages").
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager

logger = logging.getLogger(__name__)

# A cap is put back as it was found when its call ends. When a search embedded its query while
# the background indexer embedded a batch, the call that ended last put back the cap the other had
# set, and Hermes's process was left with one BLAS thread for good (seen with three threads
# embedding at once; threadpoolctl 3.8 lets only one thread set the pool, so a cap held across
# threads cannot be given back by another). One capped call at a time keeps every cap and its
# undoing in one thread. A search may wait for a batch the indexer is embedding (32 chunks, about
# 0.1 s), only while it indexes; the two would share the cores anyway. Not re-entrant: neither
# capped call (USE's encode, the likeness's product) calls back into the plugin, so none runs
# inside another; one that did would wait on itself.
one_call_at_a_time = threading.Lock()

_limit: list = []  # threadpoolctl's ``limit`` of a controller found once (finding one scans the libraries)


@contextmanager
def one_thread() -> Iterator[None]:
    """numpy's BLAS capped to one thread (``one_call_at_a_time`` held), as USE runs; uncapped
    where threadpoolctl is missing."""
    with one_call_at_a_time:
        if not _limit:
            try:
                from threadpoolctl import ThreadpoolController

                _limit.append(ThreadpoolController().limit)
            except Exception as exc:  # as USE's own package does: without it, no cap
                # A dependency (the "fast" extra of USE's package), so its absence is worth a line: the
                # products then wake every thread BLAS has.
                logger.warning("threadpoolctl could not be loaded (%s: %s); numpy's BLAS threads are not capped",
                               type(exc).__name__, exc)
                _limit.append(None)
        if _limit[0] is None:
            yield
            return
        with _limit[0](limits=1, user_api="blas"):
            yield
