"""Code that also runs inside student notebooks (injected by the build): stdlib + torch only."""
