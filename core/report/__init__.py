"""The read side's model of a job: what a report says, built from a store's record (and,
where a scheduler's accounting is at hand, its figures). Renderers only lay it out."""
