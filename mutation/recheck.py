"""Re-run a session's survivors against the current tests (docs/MUTATION.md).

    python mutation/recheck.py MODULE [JOB_ID ...]

In a fresh worktree of HEAD (/tmp/dolda-recheck-MODULE), applies every surviving
mutant of mutation/sessions/MODULE.sqlite (or only the given job ids) one at a
time, runs the module's test command and prints killed / survived per mutant.
The session itself is not changed.
"""

import subprocess
import sys
from pathlib import Path

import cosmic_ray.config
from cosmic_ray.mutating import mutate_and_test
from cosmic_ray.work_db import WorkDB, use_db
from cosmic_ray.work_item import TestOutcome, WorkerOutcome

from survivors import _changed_line


def main(argv):
    module, only = argv[0], set(argv[1:])
    root = Path.cwd()
    session = root / "mutation" / "sessions" / f"{module}.sqlite"
    with use_db(str(session), WorkDB.Mode.open) as db:
        items = [item for item, r in db.completed_work_items
                 if r.worker_outcome == WorkerOutcome.NORMAL and r.test_outcome == TestOutcome.SURVIVED
                 and (not only or item.job_id in only)]
    tree = Path(f"/tmp/dolda-recheck-{module}")
    subprocess.run(["git", "worktree", "remove", "--force", str(tree)], capture_output=True)
    subprocess.run(["git", "worktree", "prune"], check=True)
    subprocess.run(["git", "worktree", "add", "--detach", str(tree), "HEAD"], check=True,
                   capture_output=True)
    cfg = cosmic_ray.config.load_config(str(tree / "mutation" / f"{module}.toml"))
    killed = 0
    try:
        import os
        os.chdir(tree)
        for item in items:
            result = mutate_and_test(item.mutations, cfg.test_command, cfg.timeout)
            m = item.mutations[0]
            outcome = result.test_outcome.value if result.test_outcome else result.worker_outcome.value
            killed += outcome == "killed"
            print(f"{outcome:9s} {item.job_id} line {m.start_pos[0]}: {_changed_line(result.diff or '')}",
                  flush=True)
    finally:
        os.chdir(root)
        subprocess.run(["git", "worktree", "remove", "--force", str(tree)], capture_output=True)
    print(f"{killed} of {len(items)} former survivors killed")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
