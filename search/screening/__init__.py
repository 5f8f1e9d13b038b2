"""What a search checks before a trial trains, by building models on the meta device: the
screen that refuses a proposal outside the constraints (``screen``, ``Screen``), the meta
models and their counts (``_meta``), the budget floors and warnings of a space (``_floor``),
a trial's verdict on its constraints (``_verdict``, written alike for a refused proposal and a
trained trial), the checks of a user's own code (``_user_checks``) and what ``search check``
prints (``_describe``).

Above the config (which declares and checks keys and imports none of this) and the record;
read by the runner, the trial, the derivation and the command line. Loads torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from spaces import lazy_exports

# What this package exports, each name once: type checkers and editors read these imports,
# and at run time `lazy_exports` reads the same block and loads each name when first used.
if TYPE_CHECKING:
    from search.screening._describe import describe as describe
    from search.screening._describe import suspicions as suspicions
    from search.screening._floor import budget_warning as budget_warning
    from search.screening._meta import meta_model as meta_model
    from search.screening._meta import planned_params as planned_params
    from search.screening._meta import trainable as trainable
    from search.screening._screen import Screen as Screen
    from search.screening._screen import screen as screen
    from search.screening._user_checks import check_user_code as check_user_code
    from search.screening._verdict import breach as breach
    from search.screening._verdict import verdict as verdict


__all__ = ["Screen", "check_user_code", "describe", "screen"]

__getattr__ = lazy_exports(__name__)
