"""How it is searched: configuration, optimisers, execution, fronts, reports and export."""

__all__: list[str] = []
