"""Attach mode: sample a job someone else started (a scheduler's hook starts the sampler), in the
cgroup its scheduler made, from beside it (watch); how its end is seen (ends, wait), its
steps' figures (steps) and the probe wrappers that keep the scheduler's own processes out
(probe). Standard library only."""
