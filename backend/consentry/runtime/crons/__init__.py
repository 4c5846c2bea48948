"""Crons: schedules of runs (the LangGraph SDK's ``client.crons``). :class:`Crons` keeps an
owner's crons; :class:`CronScheduler` takes their ticks, once across replicas, each a run queued
in its thread's run queue (``runtime.runs.RunQueue``)."""

from __future__ import annotations

from consentry.runtime.crons._crons import CronPlan, Crons
from consentry.runtime.crons._scheduler import CronScheduler
from consentry.runtime.crons._schedules import Schedule

__all__ = ["CronPlan", "CronScheduler", "Crons", "Schedule"]
