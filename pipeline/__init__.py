"""inference-frontier: LLM inference benchmark logs -> Pareto frontiers and matched-interactivity comparisons."""
