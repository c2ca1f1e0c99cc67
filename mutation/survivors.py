"""Counts and surviving mutants of a cosmic-ray session (docs/MUTATION.md).

    python mutation/survivors.py SESSION.sqlite [--diffs]

Prints generated / filtered out / outside lines (``sample.py --lines``) / not
sampled / run / killed (timeouts count as killed) / survived / incompetent, and
one line per survivor (job id, operator, line: mutated line), with the full diff
when ``--diffs`` is given.
"""

import sys
from collections import Counter

from cosmic_ray.work_db import WorkDB, use_db
from cosmic_ray.work_item import TestOutcome, WorkerOutcome


def _changed_line(diff):
    minus = [ln[1:].strip() for ln in diff.splitlines() if ln.startswith("-") and not ln.startswith("---")]
    plus = [ln[1:].strip() for ln in diff.splitlines() if ln.startswith("+") and not ln.startswith("+++")]
    return f"{' | '.join(minus)}  ->  {' | '.join(plus)}"


def main(argv):
    session, show = argv[0], "--diffs" in argv
    tally = Counter()
    survivors = []
    with use_db(session, WorkDB.Mode.open) as db:
        for item, result in db.completed_work_items:
            tally["generated"] += 1
            if result.worker_outcome == WorkerOutcome.SKIPPED:
                output = result.output or ""
                tally["not sampled" if "sample" in output
                      else "outside lines" if "--lines" in output else "filtered out"] += 1
                continue
            if result.worker_outcome != WorkerOutcome.NORMAL:
                tally[f"worker {result.worker_outcome.value}"] += 1
                continue
            tally["run"] += 1
            tally[result.test_outcome.value] += 1
            if result.test_outcome == TestOutcome.SURVIVED:
                survivors.append((item, result))
        tally["generated"] += db.num_work_items - db.num_results
        tally["pending"] += db.num_work_items - db.num_results
    print(", ".join(f"{k}: {v}" for k, v in tally.items()))
    for item, result in sorted(survivors, key=lambda s: s[0].mutations[0].start_pos):
        m = item.mutations[0]
        print(f"{item.job_id}  line {m.start_pos[0]}  {m.operator_name} #{m.occurrence}:  "
              f"{_changed_line(result.diff)}")
        if show:
            print(result.diff)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
