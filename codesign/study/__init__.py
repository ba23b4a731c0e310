"""Studies that train networks with the exploration's stages and measure them with the report's.

:mod:`.cells` (``codesign report-cells``): BMRU against CMRU against alphaCMRU at one size. It
sits here, above both ``codesign.explore`` and ``codesign.report``, so neither depends on the other.
"""
