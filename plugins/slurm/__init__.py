"""Slurm: identify a job from the Prolog/Epilog environment (prolog and epilog entries)."""
