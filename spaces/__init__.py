"""What is searched: the space DSL, architecture families and Shapeshifter Networks."""

from spaces import ssn
from spaces._build import build_model, family_variant, hyper_keys, list_families, register_family
from spaces._dsl import Categorical, Dimension, Fixed, Float, Int, Space
from spaces._errors import BudgetError, ConfigError, NpasError, UnknownNameError
from spaces._families.scs import MaxAbsPool2d, SharpCosSim2d
from spaces._registry import Registry

__all__ = [
    "BudgetError",
    "Categorical",
    "ConfigError",
    "Dimension",
    "Fixed",
    "Float",
    "Int",
    "MaxAbsPool2d",
    "NpasError",
    "Registry",
    "SharpCosSim2d",
    "Space",
    "UnknownNameError",
    "build_model",
    "family_variant",
    "hyper_keys",
    "list_families",
    "register_family",
    "ssn",
]
