"""The evidence stage: checking a result: verify, the bindings, re-asking the oracle, rescore, rerun, repack."""
