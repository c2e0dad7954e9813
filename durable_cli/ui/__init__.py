"""`durable ui`: the local web view (docs/reference/ui.md §16); imported by that command only."""
