"""The publish stage: what people read: the report, the site, plots, the timeline, claims, the scorecard, these docs."""
