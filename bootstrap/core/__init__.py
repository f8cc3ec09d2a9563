"""The start-up core: schema -> Plan (pure) -> Session.apply() -> Report, and the undo."""
