"""The runtime: runs, their events, consent records, and the services graphs receive."""
