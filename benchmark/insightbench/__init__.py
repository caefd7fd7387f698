"""InsightBench (Sahu et al. 2024) on the Data Detective: tasks, scoring, runs, tables."""
