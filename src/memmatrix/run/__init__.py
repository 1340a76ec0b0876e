"""The run stage: making a run: the request, the runner, the op interpreter, parallel instances."""
