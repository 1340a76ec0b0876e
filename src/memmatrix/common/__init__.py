"""The common stage: what every stage uses: errors, configuration, canonical JSON, tokens, schemas, releases."""
