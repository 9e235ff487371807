// Replaced by the module's sources.
