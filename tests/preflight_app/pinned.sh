#!/bin/sh
# A torchrun worker wrapper for the tests that judge two ranks' speeds (tests/e2e/test_preflight.py, test_watch.py,
# test_bad_nodes.py):
#   RANK_GROUPS=... torchrun --standalone --nproc_per_node=2 --no-python pinned.sh python app.py ...
# Both ranks run on CPU 0, each in a CPU cgroup of its own under $RANK_GROUPS (tests/cpu_groups.py: a fixed budget
# of that CPU, whatever the other rank does), which it joins as the bootstrap starts in it (tests/judged/: its imports
# run on every CPU, outside the budgets). Rank 1 gets BUSY_LOOPS busy processes in its group (a slow rank for real:
# they take its share, not rank 0's), started as its preflight check begins, and RANK1_ARGS added to its command
# line. The loops' output goes nowhere (a pipe held open would keep the test waiting); whatever is left in rank 1's
# group when it ends is killed here, and what a killed wrapper left by the test's tests/cpu_groups.rank_groups.
: "${RANK_GROUPS:?pinned.sh needs RANK_GROUPS: run it inside tests/cpu_groups.rank_groups}"
PYTHONPATH="$(cd "$(dirname "$0")/../judged" && pwd)${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONPATH
if [ "$LOCAL_RANK" != "1" ]; then
  unset BUSY_LOOPS  # rank 1's alone
  exec "$@"
fi
# shellcheck disable=SC2086  # RANK1_ARGS holds several overrides
"$@" ${RANK1_ARGS:-} &
rank=$!
# torchrun stops a worker with SIGTERM (when the other rank failed): pass it on
trap 'kill $rank 2>/dev/null' TERM INT
wait $rank
status=$?
wait $rank 2>/dev/null  # after a SIGTERM the first wait returns at once: let the rank finish its exit
for pid in $(cat "$RANK_GROUPS/rank1/cgroup.procs"); do  # the loops, and anything else the rank left in its group
  kill -9 "$pid" 2>/dev/null
done
exit $status
