"""The Slurm plugin: `job` identifies a job from the environment slurmd gives its Prolog and
Epilog (`hooks`, which start `sampler`), `settings` holds its part of the site file,
`scheduler` its object (jobmon.schedulers). This package itself imports nothing, so that
reading `settings` inside every job loads nothing more."""
