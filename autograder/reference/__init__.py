"""Reference implementations the hidden tests compare against (one module per chapter)."""
