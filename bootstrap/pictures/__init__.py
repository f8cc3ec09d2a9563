"""Pictures drawn from the package's own data (the sweep summary's rows, a hang's diagnosis, the preflight's
figures), with matplotlib when it is installed (the ``plot`` extra). Each picture module builds its figure
from plain values, so a test reads the plotted series back from the figure; :mod:`.canvas` makes and saves."""
