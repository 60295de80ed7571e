"""Hidden tests: called from the graded cells of each chapter, one module per chapter."""
