"""A performance model of schedules learned from GPU measurements.

:mod:`.dataset` (numpy only) reads the measurement logs and the compact per-campaign files built from them;
:mod:`.features` (numpy only) turns a schedule of a kernel into kernel-agnostic features; :mod:`.model`
(torch, the ``[policy]`` extra, imported lazily) predicts a schedule's log speedup and its uncertainty;
:mod:`.train` fits it."""
