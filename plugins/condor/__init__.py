"""HTCondor: identify a job from its job and machine ads (USER_JOB_WRAPPER entry)."""
