"""The HTCondor plugin: `job` identifies a job from its ads (the USER_JOB_WRAPPER's entry,
`wrapper`), `settings` holds its part of the site file and of the stored tags, `scheduler`
its object (jobmon.schedulers). This package itself imports nothing, so that reading
`settings` inside every job loads nothing more."""
