"""`python -m gatekeeper.schemas`: rewrite the generated schema files."""

from gatekeeper.schemas import main

main()
