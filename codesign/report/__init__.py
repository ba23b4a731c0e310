"""``codesign report BUILD``: latency, energy and area figures of a build directory.

Small modules, one job each:

* :mod:`.measure`: the inputs (the bundle's own test set, or random ones) and the counters of
  ``codesign.hw.pysim.simulate`` at one or several lane counts;
* :mod:`codesign.energy` (shared with the exploration): the per-operation energy table and the
  energy / power proxy from the counters;
* :mod:`.references`: published figures of comparable chips, with their sources;
* :mod:`.build`: the figures of one build (clock from the synth summaries, area from
  ``codesign area``, memory bits by kind, the lane sweep, dense against event-driven);
* :mod:`.render`: markdown and the Pareto plot;
* :mod:`.commands`: the command line.
"""
