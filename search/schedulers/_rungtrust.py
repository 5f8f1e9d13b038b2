"""Stopping MOASHA that stops trials only at rungs its own search has shown to predict
(``scheduler.trust_rungs``; issue 58's third scheduler design, first a lab arm).

A rung's decision is worth what the rung's ranking says of later epochs. On the lab's MNIST
table the first objective's rank correlation from one rung to the next is 0.78 (epoch 1 to 3),
0.89 (3 to 9) and 0.93 (9 to 27); on the waves table (500 validation series, a one-cycle
schedule whose early epochs swing) it is 0.33, 0.28 and 0.49, and stopping MOASHA there ends
worse than FIFO: it stops at random. :class:`RungTrust` is stopping MOASHA whose rung stops a
trial only while it is *trusted*: at least :data:`MIN_PAIRS` trials have reported both there and
at the next checkpoint (the next rung, or the last epoch after the last rung), the Spearman
correlation of their first objective at the two is at least :data:`MIN_RANK_CORRELATION`, and
the next rung is trusted too (a rung only predicts the last epoch through the rungs above it).
An untrusted rung records the trial (its rank counts once the rung is trusted) and lets it go
on, the decision's ``why`` saying so. The test is read again at every decision, over every
pair so far, a relaunched search's recorded curves included.

The chain makes the first rung wait for :data:`MIN_PAIRS` trials trained whole, too long a
warm-up for a short search. With ``evidence="own"`` (a lab design) a rung needs only its own
pairs to pass; a rung above blocks it only when its pairs refute it (enough of them, below the
correlation), not while it has too few. That still trains the first trials whole (the last
rung needs finished pairs). With ``evidence="audit"`` (``trust_by: audit``) a rung is trusted until
refuted: it stops as plain MOASHA does, but lets every :data:`AUDIT_EVERY`-th trial it would
stop go on (an audit, the decision's ``why`` says so), and is refuted while, of the trials
seen at it and at the next checkpoint, those in the best third of the rung's first objective
(of every trial recorded there) beat the others there with a probability (Mann-Whitney) below
:data:`MIN_AUDIT_AUC`, at least :data:`MIN_AUDITED` on each side. A refuted rung lets every
trial on, and so gathers the evidence that may trust it again.

With ``evidence="pooled"`` (``trust_by: pooled``) the audits are the same but the verdict is one
for every rung: the wins of each rung's best third at its next checkpoint are summed over the
rungs (a stratified Mann-Whitney), and every rung is refuted while that pooled chance is below
:data:`MIN_AUDIT_AUC`. On the waves table per-rung audits refuted rung 1 early but rung 9 only
after five of its audited trials had trained to epoch 27, so a short search went on stopping
trials at random after nine epochs each; where rung 1 shows the curves swing, the pooled
verdict lets every rung's trials on.

:class:`PromotionTrust` (``type: promotion`` with ``trust_rungs``) is the same test over
promotion-type MOASHA, whose rungs pause trials rather than stop them: a rung not trusted
promotes every trial recorded there, so the trials it paused before a refutation resume,
where a stopping rung's decisions taken before its refutation are final (on the waves table
pooled stopping audits still ended above FIFO in one block of eight, by what the rungs had
stopped before the audits refuted them).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy.stats import mannwhitneyu, spearmanr

from search.config import AUDIT_EVERY, TRUST_EVIDENCE
from search.schedulers._moasha import MOASHA, PromotionMOASHA, _as_float, _key

if TYPE_CHECKING:
    from ray.tune.experiment import Trial

__all__ = [
    "AUDITED",
    "AUDITING",
    "MIN_AUDITED",
    "MIN_AUDIT_AUC",
    "MIN_PAIRS",
    "MIN_RANK_CORRELATION",
    "UNTRUSTED",
    "PromotionTrust",
    "RungTrust",
]

#: Trials seen at a rung and its next checkpoint before the rung may stop any.
MIN_PAIRS = 8
#: The rank correlation between a rung and its next checkpoint that makes the rung trusted.
MIN_RANK_CORRELATION = 0.6
#: The ``why`` of a decision to let a trial on that the rung's ranking would have stopped.
UNTRUSTED = "rung not trusted yet: the search's curves do not show it ranks the next one"
#: ``audit``: trials needed on each side (best third, the rest) before a rung can be refuted.
MIN_AUDITED = 5
#: ``audit``: a rung is refuted below this chance that a trial of its best third beats one of
#: the rest at the next checkpoint: what a rank correlation of MIN_RANK_CORRELATION gives
#: (0.79, two normal scores correlated at 0.6, the best third of the first against the rest).
MIN_AUDIT_AUC = 0.79
#: The evidence rules that audit (trust every rung until refuted).
AUDITING = ("audit", "pooled")
#: The ``why`` of a decision to let on, as an audit, a trial a trusted rung would stop.
AUDITED = "audit: let on so that the rung's ranking is checked at the next checkpoint"


class RungTrust(MOASHA):
    """Stopping MOASHA that stops only at trusted rungs (see module doc).

    Args:
        objectives: ``(name, direction)`` of each objective, the first the one training moves.
        max_epochs: The trials' schedule.
        evidence: One of ``search.config.TRUST_EVIDENCE`` (``scheduler.trust_by``): ``chain``,
            it and each rung above shown to rank its next; ``audit``, it not refuted;
            ``pooled``, the rungs together not refuted;
            ``own``, it shown and none above refuted.
        **options: MOASHA's other options (grace, η, order within a front, chance).
    """

    def __init__(self, objectives: Sequence[tuple[str, str]], *, max_epochs: int,
                 evidence: str = "chain", **options: Any) -> None:  # fmt: skip
        if evidence not in TRUST_EVIDENCE:
            raise ValueError(f"evidence: got {evidence!r}; allowed: {TRUST_EVIDENCE}")
        super().__init__(objectives, max_epochs=max_epochs, **options)
        self.evidence = evidence
        #: The checkpoints whose first objective is kept: the rungs and the last epoch.
        self.checkpoints = (*self.rungs, max_epochs)
        #: trial key -> checkpoint -> its first objective there (as minimised).
        self.seen: dict[Any, dict[int, float]] = {}
        self.untrusted_passes = 0
        self.audits = 0
        self._would_stop = 0  # trials a trusted rung would have stopped (audit evidence)
        #: The trial and rung whose decision _enter just overruled, and why.
        self._overruled: tuple[Any, int, str] | None = None
        self._version = 0  # values kept so far: the trust verdicts below are of this many
        self._verdicts: dict[int, tuple[int, bool]] = {}  # rung -> (version, trusted)

    def on_trial_result(self, tune_controller: Any, trial: Trial, result: dict) -> str:
        epoch, first = result.get(self._time_attr), result.get(self._names[0])
        if epoch is not None and first is not None:
            self._see(_key(trial), int(epoch), first)
        return super().on_trial_result(tune_controller, trial, result)

    def _recorded_curve(self, key: Any, curve: Mapping[int, Sequence[float]]) -> None:
        """A relaunched search's recorded curve counts toward the trust test."""
        for epoch, values in curve.items():
            self._see(key, int(epoch), values[0])

    def _see(self, key: Any, epoch: int, first: Any) -> None:
        """Keeps a finite first objective at a checkpoint (a diverged trial's NaN would make
        every later correlation NaN, and so no rung ever trusted)."""
        value = _as_float(first)
        if epoch in self.checkpoints and math.isfinite(value):
            self.seen.setdefault(key, {})[epoch] = value * float(self._signs[0])
            self._version += 1

    def trusted(self, rung: int) -> bool:
        """Whether ``rung``'s ranking is to be acted on, by the evidence rule (module doc);
        worked out again only once a value was kept since (promotion asks at every step)."""
        verdict = self._verdicts.get(rung)
        if verdict is None or verdict[0] != self._version:
            verdict = (self._version, self._trusted(rung))
            self._verdicts[rung] = verdict
        return verdict[1]

    def _trusted(self, rung: int) -> bool:
        if self.evidence in AUDITING:
            return not self.refuted(rung)
        index = self.checkpoints.index(rung)
        steps = zip(self.checkpoints[index:-1], self.checkpoints[index + 1:], strict=True)
        for step, (here, there) in enumerate(steps):
            pairs = self._pairs(here, there)
            enough = len(pairs) >= MIN_PAIRS
            if not enough and (step == 0 or self.evidence == "chain"):
                return False
            # NaN (a constant column) is no trust
            if enough and not spearmanr(*np.array(pairs).T).statistic >= MIN_RANK_CORRELATION:
                return False
        return True

    def refuted(self, rung: int) -> bool:
        """``audit``: the best third at ``rung`` does not beat the rest at the next checkpoint
        often enough; ``pooled``: the same, summed over every rung (module doc)."""
        rungs = self.rungs if self.evidence == "pooled" else (rung,)
        counts = np.array([self._audit_counts(r) for r in rungs], dtype=float)
        wins, best, rest = counts.T
        if min(best.sum(), rest.sum()) < MIN_AUDITED:
            return False
        # each rung's best third against its own rest, never another rung's
        return bool(wins.sum() / (best * rest).sum() < MIN_AUDIT_AUC)

    def _audit_counts(self, rung: int) -> tuple[float, int, int]:
        """Of the trials seen at ``rung`` and its next checkpoint: the pairs (one of the
        rung's best third, one of the rest) the best wins at the next checkpoint, ties half,
        and how many trials are on each side."""
        there = self.checkpoints[self.checkpoints.index(rung) + 1]
        at_rung = np.sort([c[rung] for c in self.seen.values() if rung in c])
        if not len(at_rung):
            return 0.0, 0, 0
        cut = at_rung[math.ceil(len(at_rung) / 3) - 1]  # minimised: the best third is <= cut
        pairs = np.array(self._pairs(rung, there)).reshape(-1, 2)
        best, rest = pairs[pairs[:, 0] <= cut, 1], pairs[pairs[:, 0] > cut, 1]
        if not (len(best) and len(rest)):
            return 0.0, len(best), len(rest)
        # U of the rest over the best counts the pairs the best wins (minimised)
        return float(mannwhitneyu(rest, best).statistic), len(best), len(rest)

    def _pairs(self, here: int, there: int) -> list[tuple[float, float]]:
        """The first objective (minimised) of every trial seen at both checkpoints."""
        return [(c[here], c[there]) for c in self.seen.values() if here in c and there in c]

    def _enter(
        self, key: Any, rung: int, f: np.ndarray, violation: float, at_chance: bool = False
    ) -> tuple[bool, int, int]:
        self._overruled = None
        kept, rank, n = super()._enter(key, rung, f, violation, at_chance)
        if kept:
            return kept, rank, n
        if self.trusted(rung):
            if self.evidence not in AUDITING or at_chance:
                return kept, rank, n
            self._would_stop += 1
            if self._would_stop % AUDIT_EVERY:
                return kept, rank, n
            self.audits += 1
            self._overruled = (key, rung, AUDITED)
            return True, rank, n
        self.untrusted_passes += 1
        self._overruled = (key, rung, UNTRUSTED)
        return True, rank, n

    def _decide(self, trial: Trial, rung: int, outcome: str, **details: Any) -> None:
        if self._overruled is not None and self._overruled[:2] == (_key(trial), rung):
            details.setdefault("why", self._overruled[2])
        super()._decide(trial, rung, outcome, **details)

    def debug_string(self) -> str:
        trusted = [r for r in self.rungs if self.trusted(r)]
        return (f"RungTrust ({self.evidence}): rungs trusted {trusted} of {list(self.rungs)}; "
                f"{self.untrusted_passes} trials let on at an untrusted rung, "
                f"{self.audits} audited")  # fmt: skip


class PromotionTrust(RungTrust, PromotionMOASHA):
    """Promotion-type MOASHA whose rungs pause trials only while trusted (see module doc):
    a trusted rung's would-be pause is an audit every :data:`AUDIT_EVERY`-th time (promoted
    at once), and a rung not trusted promotes every trial recorded there, those it paused
    before included (they resume, from the highest rung first, before any new trial).

    Args:
        objectives: As :class:`RungTrust`.
        max_epochs: The trials' schedule.
        evidence: As :class:`RungTrust` (``scheduler.trust_by``).
        **options: PromotionMOASHA's other options (``early`` among them).
    """

    def _arrived(self, trial: Trial, rung: int) -> str:
        key = _key(trial)
        overruled = self._overruled is not None and self._overruled[:2] == (key, rung)
        if not overruled or self._recorded[rung].at_chance(key):
            return super()._arrived(trial, rung)  # ranked in, at chance, or paused
        return self._promote(trial, rung)  # an audit, or a rung not trusted: _decide says

    def _decide(self, trial: Trial, rung: int, outcome: str, **details: Any) -> None:
        """A trial promoted below the rung's quota while the rung is not trusted (a paused
        one resumed, or one let on as it arrived) says so."""
        below = details.get("rank", 0) >= self._top(details.get("n", 0))
        if outcome == "promote" and below and not self.trusted(rung):
            details.setdefault("why", UNTRUSTED)
        super()._decide(trial, rung, outcome, **details)

    def _quota(self, rung: int, n: int) -> int:
        """A rung not trusted may promote every trial recorded there."""
        return super()._quota(rung, n) if self.trusted(rung) else n
