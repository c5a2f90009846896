"""`python -m gatekeeper.schemas`: rewrite the generated schema files from the registered gates'
settings."""

from gatekeeper.gates.registry import settings_types
from gatekeeper.schemas import main

main(settings_types())
