"""What a loader read, kept and dropped, and why: printed by the CLI and stored in run configs."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field


@dataclass
class LoadReport:
    source: str
    read: int = 0
    kept: int = 0
    dropped: Counter = field(default_factory=Counter)
    notes: list[str] = field(default_factory=list)
    relation: str | None = None  # the relation whose rows these are (None: the whole corpus)
    parts: dict[str, int] = field(default_factory=dict)  # rows read per part of a split (FewRel: train, dev, test)

    def drop(self, reason: str, n: int = 1) -> None:
        self.dropped[reason] += n

    @property
    def n_dropped(self) -> int:
        return sum(self.dropped.values())

    def summary(self) -> str:
        if not self.read and self.notes:
            return f"{self.source}: " + "; ".join(self.notes)
        if self.parts:  # kept is the asked part: "read 700: 560 train, 70 dev, 70 test, 0 dropped"
            text = (f"{self.source}: read {self.read}: " + ", ".join(f"{n} {p}" for p, n in self.parts.items())
                    + f", {self.n_dropped} dropped")
        else:
            text = f"{self.source}: read {self.read}, kept {self.kept}, dropped {self.n_dropped}"
        if self.dropped:
            text += " (" + "; ".join(f"{n} {why}" for why, n in sorted(self.dropped.items())) + ")"
        return "; ".join([text, *self.notes])

    def to_dict(self) -> dict:
        out = {
            "source": self.source,
            "read": self.read,
            "kept": self.kept,
            "dropped": dict(self.dropped),
            "notes": list(self.notes),
        }
        if self.parts:
            out["parts"] = dict(self.parts)
        return out
