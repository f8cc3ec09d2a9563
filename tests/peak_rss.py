"""Run a command and write the largest resident set of any process in its tree, in bytes, to a file:

    python tests/peak_rss.py OUT_FILE COMMAND [ARG ...]

The figure is this process's RUSAGE_CHILDREN: the peak of every descendant that was waited for (torchrun waits
for its workers, pinned.sh for its rank), and of nothing else. A test process's own RUSAGE_CHILDREN cannot
answer "did this job allocate 1 GB": it keeps the peak of every earlier test's children (CI saw an earlier
test's 1.4 GB there). The command's output and exit status pass through."""
import resource
import subprocess
import sys
from pathlib import Path

if __name__ == "__main__":
    code = subprocess.call(sys.argv[2:])
    Path(sys.argv[1]).write_text(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024))
    sys.exit(code)
