"""Slurm's accounting source (jobmon.accounting's interface): what sacct (or pyslurm)
recorded of a job (sacct.py, its JSON in sacct_json.py, its text fields in sacct_parse.py,
its records in sacct_records.py, pyslurm in sacct_pyslurm.py), and where it and jobmon
disagree (sacct_compare.py). Read side."""
