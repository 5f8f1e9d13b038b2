"""What is measured: datasets, training and evaluation, cost indicators and PePR."""

__all__: list[str] = []
