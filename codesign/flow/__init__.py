"""``codesign flow``: a recipe to a mapped, verified, synthesised and reported build, resumable."""
