"""What the tests share and are not tests themselves: builders of small datasets and corpora,
synthetic voices, local doubles of servers, fresh-machine environments, and the data files in
``fixtures/``."""

from pathlib import Path

#: The data files the tests read (``tests/support/fixtures/``).
FIXTURES = Path(__file__).with_name("fixtures")
