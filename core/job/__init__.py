"""The job's own path, inside every job: `jobmon run` and a scheduler's job wrapper (runner),
one monitored job from its start to its end record (session), the process that starts the
job and stays its parent (launcher, trampoline), the sampler that turns probe readings
into samples, and whether a job's user can run jobmon at all (job_user_check). Standard
library only."""
