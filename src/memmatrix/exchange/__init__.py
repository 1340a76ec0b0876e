"""The exchange stage: what crosses the wire and how it is recorded: the wire, the transcript, capabilities."""
