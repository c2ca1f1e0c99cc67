"""Keep a uniform random sample of a cosmic-ray session's pending mutants (docs/MUTATION.md).

    python mutation/sample.py SESSION N SEED [--lines A-B[,C-D...]]

Marks every pending work item outside a uniform random sample of ``N`` (drawn
with ``numpy.random.default_rng(SEED)`` from the pending items sorted by job id)
as skipped, so that ``cosmic-ray exec`` runs only the sample.  Run it after
``cr-filter-operators``; a no-op when ``N`` is at least the number pending
(``N = all`` keeps every one).

``--lines A-B`` first marks every pending item whose mutation starts outside
the given inclusive line ranges of the module as skipped ("outside --lines"),
and the sample is then drawn from the items left: a run restricted to a region
(say the functions changed last).  Line numbers are those of the source at the
session's commit (``git show HEAD:src/... | cat -n``).
"""

import sys

import numpy as np
from cosmic_ray.work_db import WorkDB, use_db
from cosmic_ray.work_item import WorkerOutcome, WorkResult


def _ranges(spec):
    out = []
    for part in spec.split(","):
        a, _, b = part.partition("-")
        out.append((int(a), int(b or a)))
    return out


def main(argv):
    lines = None
    if "--lines" in argv:
        at = argv.index("--lines")
        lines = _ranges(argv[at + 1])
        argv = argv[:at] + argv[at + 2:]
    session, n, seed = argv[0], argv[1], int(argv[2])
    with use_db(session, WorkDB.Mode.open) as db:
        pending = sorted(db.pending_work_items, key=lambda item: item.job_id)
        if lines is not None:
            inside = []
            for item in pending:
                line = item.mutations[0].start_pos[0]
                if any(a <= line <= b for a, b in lines):
                    inside.append(item)
                else:
                    db.set_result(item.job_id, WorkResult(output="outside --lines",
                                                          worker_outcome=WorkerOutcome.SKIPPED))
            print(f"{len(pending)} pending, {len(inside)} on lines "
                  f"{','.join(f'{a}-{b}' for a, b in lines)}")
            pending = inside
        pending = [item.job_id for item in pending]
        n = len(pending) if n == "all" else int(n)
        if n >= len(pending):
            print(f"{len(pending)} pending, all kept")
            return 0
        keep = set(np.random.default_rng(seed).choice(pending, size=n, replace=False).tolist())
        for job in pending:
            if job not in keep:
                db.set_result(job, WorkResult(output="not in the random sample",
                                              worker_outcome=WorkerOutcome.SKIPPED))
        print(f"{len(pending)} pending, kept a uniform sample of {n} (seed {seed})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
