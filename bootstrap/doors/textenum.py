"""``TextEnum``: a ``str`` enum whose ``str()`` is its value, as ``enum.StrEnum`` (3.11+) gives. Pure.

Job statuses, group states and launcher names are written into reports and tables as
text; with a plain ``(str, Enum)`` mix-in, ``str()`` would give ``JobStatus.COMPLETED``.
"""

import enum


class TextEnum(str, enum.Enum):
    def __str__(self) -> str:
        return self.value
