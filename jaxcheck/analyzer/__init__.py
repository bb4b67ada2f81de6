"""The static half of jaxcheck: engine, semantic model, configuration, suppression and output."""
