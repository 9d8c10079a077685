"""HTCondor's accounting source (jobmon.accounting's interface): what condor_history, the
schedd, history files and job event logs recorded of a job (condor_history.py, with the
ads' fields in condor_records.py, a run's end in condor_ends.py, the event log in
condor_events.py), and where it and jobmon disagree (condor_compare.py). Read side."""
