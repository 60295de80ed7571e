"""Imported only by the local grading pool's fork server (its preload): plants the seed
(``autograder.grading_seed``) there. A seed that cannot grow costs speed only."""

import logging

from autograder.grading_seed import plant

try:
    plant()
except Exception:  # noqa: BLE001 - the workers then import what they need themselves
    logging.getLogger(__name__).exception("La semilla de los trabajadores no pudo prepararse")
