#!/bin/sh
# A torchrun worker wrapper for the tests that judge two ranks' speeds (tests/e2e/test_preflight.py, test_watch.py,
# test_bad_nodes.py):
#   RANK_GROUPS=... torchrun --standalone --nproc_per_node=2 --no-python pinned.sh python app.py ...
# Both ranks run on CPU 0, each in a CPU cgroup of its own under $RANK_GROUPS (tests/cpu_groups.py: a fixed budget
# of that CPU, whatever the other rank does). Rank 1 starts BUSY_LOOPS busy processes in its group (a slow rank for
# real: they take its share, not rank 0's), and gets RANK1_ARGS added to its command line. The loops' output goes
# nowhere (a pipe held open would keep the test waiting); they are killed by their PIDs when the rank ends, and
# whatever is left in the groups by the test's tests/cpu_groups.rank_groups.
: "${RANK_GROUPS:?pinned.sh needs RANK_GROUPS: run it inside tests/cpu_groups.rank_groups}"
echo $$ > "$RANK_GROUPS/rank$LOCAL_RANK/cgroup.procs" || exit 1
if [ "$LOCAL_RANK" != "1" ]; then
  exec taskset -c 0 "$@"
fi
pids=""
i=0
while [ "$i" -lt "${BUSY_LOOPS:-0}" ]; do
  taskset -c 0 sh -c 'while :; do :; done' >/dev/null 2>&1 &
  pids="$pids $!"
  i=$((i + 1))
done
# shellcheck disable=SC2086  # RANK1_ARGS holds several overrides
taskset -c 0 "$@" ${RANK1_ARGS:-} &
rank=$!
# torchrun stops a worker with SIGTERM (when the other rank failed): pass it on, and stop the loops
trap 'kill $rank $pids 2>/dev/null' TERM INT
wait $rank
status=$?
wait $rank 2>/dev/null  # after a SIGTERM the first wait returns at once: let the rank finish its exit
kill $pids 2>/dev/null
exit $status
