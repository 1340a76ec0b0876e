"""The result stage: what a result is made of: the stamp, the artifacts, derived cost and findings, histories."""
