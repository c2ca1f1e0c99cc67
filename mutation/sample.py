"""Keep a uniform random sample of a cosmic-ray session's pending mutants (docs/MUTATION.md).

    python mutation/sample.py SESSION.sqlite N SEED

Marks every pending work item outside a uniform random sample of ``N`` (drawn
with ``numpy.random.default_rng(SEED)`` from the pending items sorted by job id)
as skipped, so that ``cosmic-ray exec`` runs only the sample.  Run it after
``cr-filter-operators``; a no-op when ``N`` is at least the number pending.
"""

import sys

import numpy as np
from cosmic_ray.work_db import WorkDB, use_db
from cosmic_ray.work_item import WorkerOutcome, WorkResult


def main(argv):
    session, n, seed = argv[0], int(argv[1]), int(argv[2])
    with use_db(session, WorkDB.Mode.open) as db:
        pending = sorted(item.job_id for item in db.pending_work_items)
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
