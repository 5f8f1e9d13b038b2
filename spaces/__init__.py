"""What is searched: the space DSL, architecture families and Shapeshifter Networks."""

from spaces._errors import BudgetError, ConfigError, NpasError, UnknownNameError
from spaces._registry import Registry

__all__ = [
    "BudgetError",
    "ConfigError",
    "NpasError",
    "Registry",
    "UnknownNameError",
]
