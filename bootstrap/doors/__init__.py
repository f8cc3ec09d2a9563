"""The one way out (outbound) and the one way in (inbound, records), and the small pieces every layer shares."""
