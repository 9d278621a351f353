"""Running scheduled models: ``build`` and ``verify`` (:mod:`.build`), the
autograd Function and parameters of a built model (:mod:`.training`), the
dropout stream (:mod:`.rng`) and GPU artefacts (:mod:`.aot`).

The floor above the schedule (:mod:`lamina.schedule`), the importer and the
numerics (:mod:`lamina.lns`); the Slapo facade is the one floor above it.
"""
