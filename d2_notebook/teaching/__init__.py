"""Teaching with the SQL City murder cases; the scoring of a case lives here
(:mod:`.scoring`), one implementation shared with the benchmark."""
