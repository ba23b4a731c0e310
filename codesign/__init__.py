"""codesign: from a recurrent model recipe to bit-exact RTL, golden model and analog netlists."""

__version__ = "0.1.0"
