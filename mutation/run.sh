#!/bin/sh
# One module's mutation run (docs/MUTATION.md).  From the repository root:
#   sh mutation/run.sh MODULE [SAMPLE_SIZE SEED [--lines A-B[,C-D]]]
# MODULE names mutation/MODULE.toml (e.g. truncnorm).  The run happens in a fresh git
# worktree of HEAD at /tmp/dolda-mut-MODULE (cosmic-ray edits the source in place: never
# in the tree you commit from), so commit the tests first.  The session database is
# written to mutation/sessions/MODULE.sqlite of this tree (ignored by git).  SAMPLE_SIZE may
# be "all"; --lines keeps only the mutants on those lines of the module (mutation/sample.py).
set -eu
module=$1
root=$(pwd)
tree=/tmp/dolda-mut-$module
session=$root/mutation/sessions/$module.sqlite
mkdir -p "$root/mutation/sessions"
git worktree remove --force "$tree" 2>/dev/null || rm -rf "$tree"
git worktree prune
git worktree add --detach "$tree" HEAD
cd "$tree"
rm -f "$session"
cosmic-ray init "mutation/$module.toml" "$session"
cr-filter-operators "$session" "mutation/$module.toml"
if [ $# -ge 3 ]; then shift; python mutation/sample.py "$session" "$@"; fi
OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 NUMBA_NUM_THREADS=1 \
    nice -n 10 cosmic-ray exec "mutation/$module.toml" "$session"
cd "$root"
git worktree remove --force "$tree"
python mutation/survivors.py "$session"
