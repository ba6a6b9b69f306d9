"""Developer tooling, not the product: the synthetic corpus and the replay of converted runs. Imported lazily."""
