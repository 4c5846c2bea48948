"""Several processes on one database: run leases (heartbeat, fencing tokens), PostgreSQL
notifications, and following a run another process executes through the stored log."""

from __future__ import annotations

from consentry.runtime.replicas._leases import LeaseKeeper
from consentry.runtime.replicas._log_follower import FollowedRun, follow_log
from consentry.runtime.replicas._notifications import EventNotifications

__all__ = [
    "EventNotifications",
    "FollowedRun",
    "LeaseKeeper",
    "follow_log",
]
