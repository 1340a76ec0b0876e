"""The ci stage: the Action's steps, the matrix plan and merge, batches, release sweeps, private sets."""
