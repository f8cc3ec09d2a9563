#!/bin/sh
# A torchrun worker wrapper for the preflight's tests (tests/e2e/test_preflight.py):
#   torchrun --standalone --nproc_per_node=2 --no-python pinned.sh python app.py ...
# Rank 0 runs alone on CPU 0. Rank 1 runs on CPU 1, with BUSY_LOOPS busy processes pinned to that same
# CPU (a slow rank for real: it gets about 1/(BUSY_LOOPS+1) of its core), and RANK1_ARGS added to its
# command line. The loops' output goes nowhere (a pipe held open would keep the test waiting) and they
# are killed by their PIDs when the rank ends.
#
# The ranks and the loops run at nice -10, so that the other tests running at the same time (nice 0)
# take little of these two cores: a rank's share is then set by the busy loops alone, not by whatever
# else the machine runs. (Without the right to raise priority, nice says so and runs the command anyway.)
PRIORITY="nice -n -10"
if [ "$LOCAL_RANK" != "1" ]; then
  exec $PRIORITY taskset -c 0 "$@"
fi
pids=""
i=0
while [ "$i" -lt "${BUSY_LOOPS:-0}" ]; do
  $PRIORITY taskset -c 1 sh -c 'while :; do :; done' >/dev/null 2>&1 &
  pids="$pids $!"
  i=$((i + 1))
done
# shellcheck disable=SC2086  # RANK1_ARGS holds several overrides
$PRIORITY taskset -c 1 "$@" ${RANK1_ARGS:-} &
rank=$!
# torchrun stops a worker with SIGTERM (when the other rank failed): pass it on, and stop the loops
trap 'kill $rank $pids 2>/dev/null' TERM INT
wait $rank
status=$?
wait $rank 2>/dev/null  # after a SIGTERM the first wait returns at once: let the rank finish its exit
kill $pids 2>/dev/null
exit $status
